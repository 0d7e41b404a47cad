package hwtui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/lipgloss"

	"github.com/wacpd/wacpd/highway"
)

// Styles; colours are the 16 ANSI ones, so a terminal's theme decides.
var (
	titleStyle = lipgloss.NewStyle().Bold(true)
	okStyle    = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	badStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	warnStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("3")).Bold(true)
	irrevStyle = lipgloss.NewStyle().Foreground(lipgloss.Color("15")).Background(lipgloss.Color("1")).Bold(true)
	dimStyle   = lipgloss.NewStyle().Faint(true)
	keyStyle   = lipgloss.NewStyle().Bold(true)
	sepStyle   = lipgloss.NewStyle().Faint(true)
)

// keyLineText is the keys of the gate's screen.
const keyLineText = "y approve · n reject · m modify · d detail · i inspect · ? help · q quit"

// checkpointKeyLineText is the keys of a control-plane checkpoint's screen.
const checkpointKeyLineText = "y approve · n deny · p approve, then per-step · h deny and halt · m modify envelope · d detail · i inspect · ? help · q quit"

// pendingFields are checkpoint_pending's nine fields, in the order of seed
// 003 (operator_interface_spec §18.7).
var pendingFields = []string{"checkpoint_type", "trigger_description", "canonical_request_summary", "scope_delta",
	"risk_classification", "side_effect_class", "policy_basis", "authorization_statement", "trust_state"}

// checkpointPending returns the nine fields of a control-plane checkpoint
// gate (a subject with checkpoint_pending), as the daemon sent them, in
// the seed's order; false for any other gate. Nothing is derived: a
// field the daemon did not send makes it not a checkpoint.
func checkpointPending(g highway.Gate) ([][2]string, bool) {
	var s struct {
		Pending map[string]json.RawMessage `json:"checkpoint_pending"`
	}
	if json.Unmarshal(g.Subject, &s) != nil || s.Pending == nil {
		return nil, false
	}
	out := make([][2]string, 0, len(pendingFields))
	for _, f := range pendingFields {
		var v string
		if json.Unmarshal(s.Pending[f], &v) != nil {
			return nil, false
		}
		out = append(out, [2]string{f, v})
	}
	return out, true
}

// checkpointSections are the detail of a checkpoint gate: its canonical
// form, scope delta and trust snapshot, as the daemon sent them.
func checkpointSections(g highway.Gate) []string {
	var s map[string]json.RawMessage
	if json.Unmarshal(g.Subject, &s) != nil {
		return nil
	}
	var lines []string
	for _, sec := range [][2]string{{"canonical form", "canonical_request"}, {"digest", "digest"}, {"canonicalization", "canonicalization_version"},
		{"scope delta", "scope_delta"}, {"trust snapshot", "trust_snapshot"}} {
		if raw, ok := s[sec[1]]; ok {
			lines = append(lines, sec[0]+":")
			lines = append(lines, subjectLines(raw)...)
			lines = append(lines, "")
		}
	}
	return lines
}

// View draws the screen: a header (the queue and the connection), the
// body of the mode, and a footer (the result line and the keys), never
// wider or taller than the window.
func (m *model) View() string {
	header := m.headerLines()
	footer := m.footerLines()
	bodyH := m.height - len(header) - 1 - len(footer)
	var body []string
	if bodyH > 0 {
		body = m.bodyLines(bodyH)
	}
	for len(body) < bodyH {
		body = append(body, "")
	}
	out := append(append(append(header, sepStyle.Render(strings.Repeat("─", max(m.width, 1)))), body...), footer...)
	if len(out) > m.height && m.height > 0 {
		// A window too small for everything keeps the keys.
		out = out[len(out)-m.height:]
	}
	for i, l := range out {
		if lipgloss.Width(l) > m.width {
			out[i] = lipgloss.NewStyle().MaxWidth(max(m.width, 1)).Render(l) // the editor at a few columns
		}
	}
	return strings.Join(out, "\n")
}

// bodyHeight is the number of lines the body gets.
func (m *model) bodyHeight() int {
	return max(m.height-len(m.headerLines())-1-len(m.footerLines()), 1)
}

func (m *model) headerLines() []string {
	n := len(m.gates)
	count := fmt.Sprintf("%d gates pending", n)
	if n == 1 {
		count = "1 gate pending"
	}
	var state string
	var stateStyle lipgloss.Style
	conn, why := m.state()
	switch conn {
	case connecting:
		state, stateStyle = "connecting…", warnStyle
	case connected:
		state, stateStyle = "● connected", okStyle
	case unreachable:
		state, stateStyle = "daemon unreachable, reconnecting…", badStyle
	}
	plain := "WACP human highway │ " + count + " │ " + state
	var lines []string
	if lipgloss.Width(plain) <= m.width {
		lines = []string{titleStyle.Render("WACP human highway") + sepStyle.Render(" │ ") + count + sepStyle.Render(" │ ") + stateStyle.Render(state)}
	} else {
		lines = styleAll(stateStyle, wrap(plain, m.width))
	}
	if why != nil {
		lines = append(lines, styleAll(dimStyle, wrap("the queue as last read; last error: "+clean(why.Error()), m.width))...)
	}
	return lines
}

func (m *model) footerLines() []string {
	var lines []string
	add := func(st lipgloss.Style, s string) { lines = append(lines, styleAll(st, wrap(s, m.width))...) }
	switch m.mode {
	case modeConfirm:
		add(irrevStyle, fmt.Sprintf("IRREVERSIBLE: press Y (shift+y) to approve gate %s; any other key cancels", m.target.ID))
		return lines
	case modeEdit:
		if m.editErr != "" {
			add(badStyle, clean(m.editErr))
		}
		add(keyStyle, "ctrl+s send the changed fields (modify) · esc cancel")
		return lines
	case modeDetail, modeInspect, modeHelp:
		if m.result != "" {
			add(m.resultStyle(), clean(m.result))
		}
		add(keyStyle, "↑/↓ pgup/pgdn scroll · esc back · q quit")
		return lines
	}
	if m.result != "" {
		add(m.resultStyle(), clean(m.result))
	}
	if g, ok := m.head(); ok {
		if _, cp := checkpointPending(g); cp {
			add(keyStyle, checkpointKeyLineText)
			return lines
		}
	}
	add(keyStyle, keyLineText)
	return lines
}

func (m *model) resultStyle() lipgloss.Style {
	if m.resultBad {
		return badStyle
	}
	return okStyle
}

func (m *model) bodyLines(h int) []string {
	switch m.mode {
	case modeEdit:
		title := fmt.Sprintf("modify gate %s (%s): change the values, ctrl+s sends the fields changed", m.target.ID, m.target.Type)
		lines := append(styleAll(titleStyle, wrap(title, m.width)), "")
		return cut(append(lines, strings.Split(m.editor.View(), "\n")...), h, m.width, "")
	case modeDetail, modeInspect, modeHelp:
		return strings.Split(m.pager.View(), "\n")
	}
	g, ok := m.head()
	if !ok {
		return m.emptyLines(h)
	}
	return m.gateLines(g, h)
}

func (m *model) emptyLines(h int) []string {
	var text []string
	switch conn, _ := m.state(); conn {
	case connecting:
		text = []string{"reading the queue…"}
	case unreachable:
		text = []string{"daemon unreachable, reconnecting…", "", "no gate was pending when the queue was last read"}
	default:
		text = []string{"no gate pending — waiting", "", "a gate shows here as soon as the daemon opens one"}
	}
	lines := make([]string, max(h/3, 0))
	for i, t := range text {
		st := dimStyle
		if i == 0 {
			st = titleStyle
		}
		lines = append(lines, styleAll(st, wrap(t, m.width))...)
	}
	return cut(lines, h, m.width, "")
}

// gateLines is the gate at the head of the queue: its fields, then its
// subject as the daemon sent it, indented, cut to h lines.
func (m *model) gateLines(g highway.Gate, h int) []string {
	var lines []string
	add := func(st lipgloss.Style, s string) { lines = append(lines, styleAll(st, wrap(s, m.width))...) }
	title := fmt.Sprintf("%s gate %s  (1 of %d, oldest first)", g.Type, g.ID, len(m.gates))
	cp, isCP := checkpointPending(g)
	if isCP {
		title = fmt.Sprintf("control-plane checkpoint %s (%s gate; 1 of %d, oldest first)", g.ID, g.Type, len(m.gates))
	}
	add(titleStyle, title)
	if g.Irreversible {
		add(irrevStyle, " IRREVERSIBLE: approving cannot be undone; y asks for a second key ")
	}
	field := func(k, v string) { add(lipgloss.NewStyle(), fmt.Sprintf("%-10s %s", k, clean(v))) }
	if isCP {
		// checkpoint_pending, verbatim: the daemon's nine fields, nothing
		// derived (d shows the canonical form, scope delta and trust).
		for _, f := range cp {
			add(keyStyle, f[0]+":")
			add(lipgloss.NewStyle(), "  "+clean(f[1]))
		}
		lines = append(lines, "")
		field("workspace", orDash(g.Workspace))
		field("deadline", m.deadline(g))
		return cut(lines, h, m.width, "(d shows the canonical form, scope delta and trust snapshot)")
	}
	field("subject", g.SubjectID)
	field("workspace", orDash(g.Workspace))
	field("task", orDash(g.TaskRef))
	field("graph", orDash(g.GraphRef))
	field("triggered", g.Timestamp)
	field("deadline", m.deadline(g))
	field("queue", fmt.Sprintf("position %d (gates ahead of it when it opened)", g.QueuePosition))
	lines = append(lines, "")
	sub := subjectLines(g.Subject)
	if len(sub) == 0 {
		return cut(lines, h, m.width, "")
	}
	add(titleStyle, "subject:")
	return cut(append(lines, wrapAll(sub, m.width)...), h, m.width, "(d shows the whole gate)")
}

// deadline says when g falls back, or that it waits indefinitely.
func (m *model) deadline(g highway.Gate) string {
	if g.Deadline == nil {
		return "none: waits indefinitely for a person"
	}
	fb := "its fallback"
	if g.Fallback != nil {
		fb = string(*g.Fallback)
	}
	s := *g.Deadline
	if t, ok := g.DeadlineTime(); ok {
		left := t.Sub(m.now()).Truncate(time.Second)
		if left > 0 {
			s += " (in " + left.String() + ")"
		} else {
			s += " (passed)"
		}
	}
	return s + ", then " + fb
}

// subjectLines is a subject as indented JSON, its fields and values as
// the daemon sent them; anything else as is.
func subjectLines(subject json.RawMessage) []string {
	if len(subject) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, subject, "", "  "); err != nil {
		return strings.Split(clean(string(subject)), "\n")
	}
	return strings.Split(clean(b.String()), "\n")
}

// detailText is the whole of g, for the pager.
func detailText(g highway.Gate) []string {
	timeout := "none (waits indefinitely)"
	if g.Timeout != nil {
		fb := ""
		if g.Fallback != nil {
			fb = ", then " + string(*g.Fallback)
		}
		timeout = *g.Timeout + fb
	}
	deadline := "none"
	if g.Deadline != nil {
		deadline = *g.Deadline
	}
	mutable := strings.Join(g.Type.Mutable(), ", ")
	if mutable == "" {
		mutable = "none (approve or reject as it stands)"
	}
	rows := [][2]string{
		{"gate", g.ID}, {"type", string(g.Type)}, {"subject", g.SubjectID}, {"digest", g.SubjectDigest},
		{"workspace", orDash(g.Workspace)}, {"task", orDash(g.TaskRef)}, {"graph", orDash(g.GraphRef)},
		{"triggered", g.Timestamp}, {"timeout", timeout}, {"deadline", deadline},
		{"queue position", strconv.Itoa(g.QueuePosition)}, {"irreversible", strconv.FormatBool(g.Irreversible)},
		{"mutable", mutable},
	}
	lines := []string{"gate " + g.ID + " in full", ""}
	if cp, ok := checkpointPending(g); ok {
		lines = []string{"control-plane checkpoint " + g.ID + " in full", ""}
		for _, f := range cp {
			lines = append(lines, f[0]+":", "  "+clean(f[1]))
		}
		lines = append(lines, "")
		lines = append(lines, checkpointSections(g)...)
	}
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%-15s %s", r[0], clean(r[1])))
	}
	lines = append(lines, "", "subject:")
	return append(lines, subjectLines(g.Subject)...)
}

func helpText() []string {
	return []string{
		"keys",
		"",
		"  y       approve the gate shown: its transition proceeds as proposed.",
		"          An IRREVERSIBLE gate asks again: press Y (shift+y) to confirm; any other key cancels.",
		"  n       reject it: its transition is cancelled.",
		"  m       modify it, then approve: an editor holds the fields its type lets a person",
		"          change; ctrl+s sends only the fields changed, esc cancels.",
		"  d       the whole gate, scrollable; for a control-plane checkpoint its full canonical",
		"          form, scope delta and trust snapshot first.",
		"",
		"  A control-plane checkpoint holds an agent's action until you answer it. Its nine",
		"  fields are the daemon's, shown as sent. y approves exactly the request shown",
		"  (continue under the existing envelope); n denies it; p approves it and shifts its",
		"  session to per-step approval; h denies it and halts the workflow (the workspace",
		"  is suspended until resumed); m edits the envelope (payload: paths, uses,",
		"  ttl_seconds) and approves within it. An irreversible action asks for Y again.",
		"",
		"  i       inspect its context: the workspace, its chain head, its recent trail.",
		"  ?       this help.",
		"  q       quit (ctrl+c too); every gate stays pending.",
		"  esc     back from the editor, the detail, the context or this help.",
		"",
		"Gates are shown one at a time, oldest first. The queue follows the daemon live;",
		"a gate with a deadline falls back on its own when the deadline passes.",
	}
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// wrap splits s into lines of at most w cells (ANSI styling does not
// count): at the newlines, then wherever a line is too long.
// Continuation lines keep the line's indentation.
func wrap(s string, w int) []string {
	w = max(w, 1)
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if lipgloss.Width(line) <= w {
			out = append(out, line)
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if indent > w/2 {
			indent = 0
		}
		pad := strings.Repeat(" ", indent)
		first := true
		for lipgloss.Width(line) > 0 {
			room := w
			if !first {
				room -= indent
			}
			head, rest := splitAt(line, room)
			// Break after a space in the second half of the line, if
			// any, rather than within a word.
			if i := strings.LastIndexByte(head, ' '); rest != "" && i >= len(head)/2 && i < len(head)-1 {
				head, rest = head[:i+1], head[i+1:]+rest
			}
			head = strings.TrimRight(head, " ")
			if !first {
				head = pad + head
			}
			out = append(out, head)
			line, first = strings.TrimLeft(rest, " "), false
		}
	}
	return out
}

// splitAt splits s after the most runes that fit in w cells (at least
// one).
func splitAt(s string, w int) (string, string) {
	width := 0
	for i, r := range s {
		rw := lipgloss.Width(string(r))
		if width+rw > w && i > 0 {
			return s[:i], s[i:]
		}
		width += rw
	}
	return s, ""
}

// wrapAll wraps each line.
func wrapAll(lines []string, w int) []string {
	var out []string
	for _, l := range lines {
		out = append(out, wrap(l, w)...)
	}
	return out
}

// cut keeps the first h lines; when some are left out, the last line
// kept says how many, then more, cut to w cells.
func cut(lines []string, h, w int, more string) []string {
	if len(lines) <= h {
		return lines
	}
	if h <= 0 {
		return nil
	}
	if more == "" {
		return lines[:h]
	}
	note, _ := splitAt(fmt.Sprintf("… %d more lines %s", len(lines)-h+1, more), max(w, 1))
	return append(lines[:h-1:h-1], dimStyle.Render(note))
}

func styleAll(st lipgloss.Style, lines []string) []string {
	for i, l := range lines {
		lines[i] = st.Render(l)
	}
	return lines
}

// clean escapes control characters (ESC above all, and C1 controls, which
// JSON leaves as they are) and bidirectional formatting characters, so
// that text from the daemon or an agent can neither move the cursor,
// restyle the terminal nor reorder what is shown; a newline stays a
// newline and a tab becomes spaces.
func clean(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && escaped(r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString("    ")
		case escaped(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// escaped reports whether clean shows r escaped.
func escaped(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

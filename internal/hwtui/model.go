package hwtui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/wacpd/wacpd/highway"
)

// Timing of the model's own work.
const (
	// retryEvery is how often the queue is read again while the daemon is
	// unreachable.
	retryEvery = 500 * time.Millisecond
	// queueTimeout bounds one read of the queue, so that a read the
	// connection holds while it reconnects does not hold the retries.
	queueTimeout = 5 * time.Second
	// resolveTimeout bounds one answer.
	resolveTimeout = 30 * time.Second
	// inspectTimeout bounds one Inspect, which may page through a trail.
	inspectTimeout = 30 * time.Second
)

// mode is what the screen shows.
type mode int

const (
	modeGate    mode = iota // the gate at the head of the queue
	modeConfirm             // an irreversible approve waiting for Y
	modeEdit                // the modify editor
	modeDetail              // d: the whole gate, scrollable
	modeInspect             // i: the gate's context, scrollable
	modeHelp                // ?: the keys
)

// connState is what the model knows of the daemon (model.state).
type connState int

const (
	connecting  connState = iota // no queue read yet
	connected                    // the last read of the queue worked, and the feed follows
	unreachable                  // the last read failed, or the feed broke and has not come back
)

// Messages. The commands of the model and Run's feed goroutine send them;
// only Update reads them.
type (
	// queueMsg is the result of one read of the queue.
	queueMsg struct {
		gates []highway.Gate
		err   error
	}
	// changedMsg says the feed follows (Changes calls fn first when it
	// does), or a gate event arrived on it.
	changedMsg struct{}
	// feedDownMsg says the feed ended with err; Run restarts it.
	feedDownMsg struct{ err error }
	// retryMsg asks for another read of the queue while unreachable.
	retryMsg struct{}
	// tickMsg redraws the deadline countdown.
	tickMsg struct{}
	// resolvedMsg is the daemon's answer to a resolution.
	resolvedMsg struct {
		id      string
		action  highway.Action
		outcome string
		fields  []string // the fields of a Modify
		gate    highway.Gate
		err     error
	}
	// inspectMsg is the result of Inspect for gate id.
	inspectMsg struct {
		id    string
		lines []string
		err   error
	}
)

// model is the program's state. Only the program's goroutine touches it:
// commands capture what they need and answer with a message.
type model struct {
	ctx   context.Context // Run's: ends the commands' calls
	src   Source
	now   func() time.Time
	after func(d time.Duration, msg tea.Msg) tea.Cmd // a timer; tests record them

	width, height int

	read     bool  // a read of the queue has worked
	queueErr error // why the last read of the queue failed; nil when it worked
	feedErr  error // why the feed broke; nil once it follows again
	retrying bool  // a retryMsg is scheduled
	fetching bool  // a read of the queue is in flight
	stale    bool  // the queue changed during that read: read again

	gates []highway.Gate // pending, FIFO; gates[0] is shown

	mode       mode
	target     highway.Gate           // the gate the confirmation, editor, detail or inspection is about
	confirmReq highway.ResolveRequest // the answer a confirmation waits to send
	confirmFld []string               // its modified fields
	busy       string                 // the id of the gate whose answer is in flight
	answered   string                 // the id of the gate last answered

	result    string // one line: what the last action did
	resultBad bool

	editor   textarea.Model
	editOrig map[string]json.RawMessage // the mutable fields' values when the editor opened
	editErr  string

	pager        viewport.Model // detail, inspection, help
	pagerText    []string       // the pager's lines before wrapping
	pagerForGate string         // the gate the pager's text is about
}

// newModel returns the model Run starts with.
func newModel(ctx context.Context, src Source) *model {
	return &model{
		ctx: ctx, src: src, now: time.Now,
		after: func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		},
		width: 80, height: 24,
		pager:  viewport.New(80, 20),
		editor: newEditor(),
	}
}

// Init reads the queue and starts the countdown's clock.
func (m *model) Init() tea.Cmd {
	return tea.Batch(m.fetch(), m.after(time.Second, tickMsg{}))
}

// head returns the gate shown, and false when none is pending.
func (m *model) head() (highway.Gate, bool) {
	if len(m.gates) == 0 {
		return highway.Gate{}, false
	}
	return m.gates[0], true
}

// pending reports whether gate id is in the queue as last read.
func (m *model) pending(id string) bool {
	for _, g := range m.gates {
		if g.ID == id {
			return true
		}
	}
	return false
}

// Update applies msg.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	case queueMsg:
		return m, m.queued(msg)
	case changedMsg:
		m.feedErr = nil
		return m, m.fetch()
	case feedDownMsg:
		// The daemon may be gone: see whether the queue can be read.
		m.feedErr = msg.err
		return m, m.fetch()
	case retryMsg:
		m.retrying = false
		return m, m.fetch()
	case tickMsg:
		return m, m.after(time.Second, tickMsg{})
	case resolvedMsg:
		return m, m.resolved(msg)
	case inspectMsg:
		if m.mode == modeInspect && msg.id == m.pagerForGate {
			if msg.err != nil {
				m.setPager(msg.id, []string{"could not read the context of gate " + msg.id + ":", msg.err.Error()})
			} else {
				m.setPager(msg.id, append([]string{"context of gate " + msg.id, ""}, msg.lines...))
			}
		}
		return m, nil
	}
	return m, nil
}

// fetch reads the queue, unless a read is in flight: then that read is
// followed by another.
func (m *model) fetch() tea.Cmd {
	if m.fetching {
		m.stale = true
		return nil
	}
	m.fetching = true
	ctx, src := m.ctx, m.src
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, queueTimeout)
		defer cancel()
		gates, err := src.Queue(ctx)
		return queueMsg{gates: gates, err: err}
	}
}

// queued applies a read of the queue.
func (m *model) queued(msg queueMsg) tea.Cmd {
	m.fetching = false
	if msg.err != nil {
		m.queueErr = msg.err
		m.stale = false
		return m.retry()
	}
	m.read, m.queueErr = true, nil
	shown, had := m.head()
	m.gates = highway.Queue(msg.gates)
	// A confirmation or an edit is about one gate: when it has left the
	// queue (resolved elsewhere, timed out), it ends, with nothing sent.
	// The person is told of a gate that left the screen without them.
	switch {
	case (m.mode == modeConfirm || m.mode == modeEdit) && !m.pending(m.target.ID):
		m.mode = modeGate
		m.say(true, "gate %s is no longer pending (resolved elsewhere or timed out); nothing sent", m.target.ID)
	case had && !m.pending(shown.ID) && shown.ID != m.busy && shown.ID != m.answered:
		m.say(false, "gate %s is no longer pending: resolved elsewhere or timed out", shown.ID)
	}
	if m.stale {
		m.stale = false
		return m.fetch()
	}
	return nil
}

// state is what the header says of the daemon, and why it is
// unreachable.
func (m *model) state() (connState, error) {
	switch {
	case m.queueErr != nil:
		return unreachable, m.queueErr
	case m.feedErr != nil:
		return unreachable, m.feedErr
	case !m.read:
		return connecting, nil
	}
	return connected, nil
}

// retry schedules one more read of the queue, unless one is scheduled.
func (m *model) retry() tea.Cmd {
	if m.retrying {
		return nil
	}
	m.retrying = true
	return m.after(retryEvery, retryMsg{})
}

// say sets the result line.
func (m *model) say(bad bool, format string, args ...any) {
	m.result, m.resultBad = fmt.Sprintf(format, args...), bad
}

// key applies a key press.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	s := k.String()
	if s == "ctrl+c" {
		return tea.Quit
	}
	switch m.mode {
	case modeConfirm:
		return m.confirmKey(s)
	case modeEdit:
		return m.editKey(k)
	case modeDetail, modeInspect, modeHelp:
		return m.pagerKey(k)
	}
	switch s {
	case "q":
		return tea.Quit
	case "?":
		m.mode = modeHelp
		m.setPager("", helpText())
		return nil
	}
	g, ok := m.head()
	if !ok {
		switch s {
		case "y", "n", "m", "p", "h", "d", "i":
			m.say(true, "no gate is pending")
		}
		return nil
	}
	switch s {
	case "y", "n", "m", "p", "h":
		if m.busy != "" {
			m.say(true, "still waiting for the daemon's answer about gate %s", m.busy)
			return nil
		}
	}
	switch s {
	case "y":
		return m.ask(g, highway.ResolveRequest{GateID: g.ID, Action: highway.Approve}, nil)
	case "n":
		return m.resolve(g, highway.ResolveRequest{GateID: g.ID, Action: highway.Reject}, nil)
	case "p", "h":
		if _, ok := checkpointPending(g); !ok {
			m.say(true, "%s answers a control-plane checkpoint; gate %s is not one", s, g.ID)
			return nil
		}
		if s == "p" {
			return m.ask(g, highway.ResolveRequest{GateID: g.ID, Action: highway.Approve, Outcome: "per_step"}, nil)
		}
		return m.resolve(g, highway.ResolveRequest{GateID: g.ID, Action: highway.Reject, Outcome: "halt"}, nil)
	case "m":
		if len(g.Type.Mutable()) == 0 {
			m.say(true, "gates of type %s cannot be modified: approve (y) or reject (n) it as it stands", g.Type)
			return nil
		}
		return m.openEditor(g)
	case "d":
		m.mode, m.target = modeDetail, g
		m.setPager(g.ID, detailText(g))
		return nil
	case "i":
		m.mode, m.target = modeInspect, g
		m.setPager(g.ID, []string{"reading the context of gate " + g.ID + "…"})
		ctx, src := m.ctx, m.src
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
			defer cancel()
			lines, err := src.Inspect(ctx, g)
			return inspectMsg{id: g.ID, lines: lines, err: err}
		}
	}
	return nil
}

// confirmKey is a key after y on an irreversible gate: Y approves it, any
// other key cancels.
func (m *model) confirmKey(s string) tea.Cmd {
	m.mode = modeGate
	g := m.target
	if s != "Y" {
		m.say(false, "approval of gate %s cancelled; nothing sent", g.ID)
		return nil
	}
	if !m.pending(g.ID) {
		m.say(true, "gate %s is no longer pending; nothing sent", g.ID)
		return nil
	}
	req := m.confirmReq
	req.Confirm = true // the second confirmation, sent to the daemon, which asks for it too
	return m.resolve(g, req, m.confirmFld)
}

// ask sends an approval (approve, modify) of g, or, for an irreversible
// gate, asks for the second key first.
func (m *model) ask(g highway.Gate, req highway.ResolveRequest, fields []string) tea.Cmd {
	if g.Irreversible {
		m.mode, m.target, m.confirmReq, m.confirmFld = modeConfirm, g, req, fields
		m.result = ""
		return nil
	}
	return m.resolve(g, req, fields)
}

// pagerKey is a key in the detail, inspection or help screen.
func (m *model) pagerKey(k tea.KeyMsg) tea.Cmd {
	switch s := k.String(); {
	case s == "q":
		return tea.Quit
	case s == "esc",
		s == "d" && m.mode == modeDetail,
		s == "i" && m.mode == modeInspect,
		s == "?" && m.mode == modeHelp:
		m.mode = modeGate
		return nil
	}
	var cmd tea.Cmd
	m.pager, cmd = m.pager.Update(k)
	return cmd
}

// resolve sends answer req about g.
func (m *model) resolve(g highway.Gate, req highway.ResolveRequest, fields []string) tea.Cmd {
	m.busy = g.ID
	a := req.Action
	m.say(false, "sending %s for gate %s…", a, g.ID)
	ctx, src := m.ctx, m.src
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		defer cancel()
		out, err := src.Resolve(ctx, req)
		return resolvedMsg{id: g.ID, action: a, outcome: req.Outcome, fields: fields, gate: out, err: err}
	}
}

// resolved applies the daemon's answer, and reads the queue again.
func (m *model) resolved(msg resolvedMsg) tea.Cmd {
	m.busy, m.answered = "", msg.id
	if msg.err != nil {
		m.say(true, "gate %s: %s refused: %v", msg.id, msg.action, msg.err)
		return m.fetch()
	}
	switch {
	case msg.action == highway.Approve && msg.outcome == "per_step":
		m.say(false, "approved gate %s; every later step of its session needs its own approval", msg.id)
	case msg.action == highway.Reject && msg.outcome == "halt":
		m.say(false, "denied gate %s and halted its workflow (the workspace is suspended until resumed)", msg.id)
	case msg.action == highway.Approve:
		m.say(false, "approved gate %s", msg.id)
	case msg.action == highway.Reject:
		m.say(false, "rejected gate %s", msg.id)
	case msg.action == highway.Modify:
		m.say(false, "modified and approved gate %s (%s)", msg.id, strings.Join(msg.fields, ", "))
	default:
		m.say(false, "%s gate %s", msg.action, msg.id)
	}
	if r := msg.gate.Resolution; r != nil && r.Action != msg.action {
		m.say(false, "gate %s resolved: %s by %s", msg.id, r.Action, r.Actor)
	}
	kept := m.gates[:0:0]
	for _, g := range m.gates {
		if g.ID != msg.id {
			kept = append(kept, g)
		}
	}
	m.gates = kept
	return m.fetch()
}

// setPager fills the pager with lines about gate id, control characters
// escaped, wrapped to the window, scrolled to the top.
func (m *model) setPager(id string, lines []string) {
	m.pagerText = make([]string, len(lines))
	for i, l := range lines {
		m.pagerText[i] = clean(l)
	}
	m.pagerForGate = id
	m.layout()
	m.pager.GotoTop()
}

// layout sizes the editor and the pager to the window.
func (m *model) layout() {
	h := m.bodyHeight()
	m.pager.Width, m.pager.Height = m.width, h
	m.pager.SetContent(strings.Join(wrapAll(m.pagerText, m.width), "\n"))
	m.editor.SetWidth(max(m.width, 10))
	m.editor.SetHeight(max(h-2, 1))
}

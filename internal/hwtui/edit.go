package hwtui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/wacpd/wacpd/highway"
)

// newEditor returns the modify editor: no line numbers, no limits, a
// steady cursor.
func newEditor() textarea.Model {
	ed := textarea.New()
	ed.ShowLineNumbers = false
	ed.Prompt = ""
	ed.CharLimit = 0
	ed.MaxHeight = 0
	ed.MaxWidth = 0
	// A steady cursor: a blinking one redraws the screen twice a second.
	ed.Cursor.SetMode(cursor.CursorStatic)
	return ed
}

// openEditor opens the editor on g's mutable fields.
func (m *model) openEditor(g highway.Gate) tea.Cmd {
	text, orig, err := editable(g)
	if err != nil {
		m.say(true, "gate %s: %v", g.ID, err)
		return nil
	}
	m.mode, m.target = modeEdit, g
	m.editOrig, m.editErr, m.result = orig, "", ""
	m.editor = newEditor()
	m.layout()
	m.editor.SetValue(text)
	// The cursor starts at the top, on the first field.
	for m.editor.Line() > 0 {
		m.editor.CursorUp()
	}
	m.editor.CursorStart()
	return m.editor.Focus()
}

// editKey is a key in the editor: ctrl+s sends the changed fields, esc
// cancels, anything else edits.
func (m *model) editKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.mode = modeGate
		m.say(false, "modify of gate %s cancelled; nothing sent", m.target.ID)
		return nil
	case "ctrl+s":
		mods, fields, err := modifications(m.target.Type, m.editOrig, m.editor.Value())
		if err != nil {
			m.editErr = err.Error()
			return nil
		}
		m.mode = modeGate
		if len(fields) == 0 {
			m.say(false, "nothing changed in gate %s; nothing sent", m.target.ID)
			return nil
		}
		if m.busy != "" {
			m.say(true, "still waiting for the daemon's answer about gate %s; nothing sent", m.busy)
			return nil
		}
		return m.ask(m.target, highway.ResolveRequest{GateID: m.target.ID, Action: highway.Modify, Modifications: mods}, fields)
	}
	m.editErr = ""
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(k)
	return cmd
}

// editable returns the editor's text for g: a JSON object of its type's
// mutable fields with their values in the subject (null when the subject
// has none), and those values.
func editable(g highway.Gate) (string, map[string]json.RawMessage, error) {
	var subject map[string]json.RawMessage
	if err := json.Unmarshal(g.Subject, &subject); err != nil {
		return "", nil, fmt.Errorf("its subject is not a JSON object: %w", err)
	}
	orig := map[string]json.RawMessage{}
	var b strings.Builder
	b.WriteString("{\n")
	fields := g.Type.Mutable()
	for i, f := range fields {
		v, ok := subject[f]
		if !ok {
			v = json.RawMessage("null")
		}
		orig[f] = v
		var ind bytes.Buffer
		if err := json.Indent(&ind, v, "  ", "  "); err != nil {
			return "", nil, fmt.Errorf("field %s: %w", f, err)
		}
		name, _ := json.Marshal(f)
		fmt.Fprintf(&b, "  %s: %s", name, ind.Bytes())
		if i < len(fields)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}")
	return b.String(), orig, nil
}

// modifications returns the modifications of an edit of a gate of type
// typ: a JSON object of the fields whose value differs from orig, and
// their names, sorted; no fields when nothing changed. The edit must be a
// JSON object of typ's mutable fields; a field left out is unchanged.
func modifications(typ highway.GateType, orig map[string]json.RawMessage, text string) (json.RawMessage, []string, error) {
	var edited map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &edited); err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if edited == nil {
		return nil, nil, errors.New("the edit must be a JSON object of the fields")
	}
	mutable := typ.Mutable()
	mods := map[string]json.RawMessage{}
	var fields []string
	for f, v := range edited {
		if !slices.Contains(mutable, f) {
			return nil, nil, fmt.Errorf("%q cannot be modified in a %s gate; its fields are %s", f, typ, strings.Join(mutable, ", "))
		}
		same, err := sameJSON(orig[f], v)
		if err != nil {
			return nil, nil, fmt.Errorf("field %s: %v", f, err)
		}
		if !same {
			mods[f] = v
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return nil, nil, nil
	}
	slices.Sort(fields)
	out, err := json.Marshal(mods) // keys sorted, values compacted
	if err != nil {
		return nil, nil, err
	}
	return out, fields, nil
}

// sameJSON reports whether a and b are the same JSON value; numbers are
// compared as written. A missing a is null.
func sameJSON(a, b json.RawMessage) (bool, error) {
	if a == nil {
		a = json.RawMessage("null")
	}
	va, err := decodeNumbers(a)
	if err != nil {
		return false, err
	}
	vb, err := decodeNumbers(b)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(va, vb), nil
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

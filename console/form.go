package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/wacpd/wacpd/highway"
)

// decisions are the buttons of a gate's form: the action and outcome each
// sends.
var decisions = map[string]struct {
	action  highway.Action
	outcome string
}{
	"approve":  {highway.Approve, ""},
	"per_step": {highway.Approve, "per_step"},
	"reject":   {highway.Reject, ""},
	"halt":     {highway.Reject, "halt"},
	"modify":   {highway.Modify, ""},
}

// errForm is the error of a resolve form the console will not send.
var errForm = errors.New("console: invalid form")

// parseResolveForm reads a gate form: the decision button pressed, the
// modifications (a JSON object, for modify only) and the second
// confirmation (confirm=yes). Whatever it accepts, the daemon's decoder
// (highway.DecodeResolveRequest) accepts too; which fields a gate lets
// modify is the daemon's to check.
func parseResolveForm(gateID string, form url.Values) (highway.ResolveRequest, error) {
	d, ok := decisions[form.Get("decision")]
	if !ok {
		return highway.ResolveRequest{}, fmt.Errorf("%w: no decision (approve, per_step, reject, halt or modify) was pressed", errForm)
	}
	if gateID == "" || !utf8.ValidString(gateID) {
		return highway.ResolveRequest{}, fmt.Errorf("%w: no gate, or a gate id that is not UTF-8", errForm)
	}
	req := highway.ResolveRequest{GateID: gateID, Action: d.action, Outcome: d.outcome, Confirm: form.Get("confirm") == "yes"}
	if d.action == highway.Modify {
		m, err := modifications(form.Get("modifications"))
		if err != nil {
			return highway.ResolveRequest{}, err
		}
		req.Modifications = m
	}
	return req, nil
}

// modifications returns s, a non-empty JSON object with unique member
// names, compacted.
func modifications(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("%w: modifications must be a JSON object of the fields changed, such as {\"payload\": {\"uses\": 1}}", errForm)
	fields, err := orderedFields(json.RawMessage(s))
	if err != nil || len(fields) == 0 {
		return nil, bad
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.Name] {
			return nil, fmt.Errorf("%w: modifications name %q twice", errForm, f.Name)
		}
		seen[f.Name] = true
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return nil, bad
	}
	return b.Bytes(), nil
}

// orderedFields returns the members of the JSON object raw in the order
// they are written, each value as written; an error when raw is not one
// JSON object.
func orderedFields(raw json.RawMessage) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", errForm)
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%w: a member name is not a string", errForm)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{Name: name, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: text after the object", errForm)
	}
	return out, nil
}

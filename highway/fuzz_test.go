package highway

import (
	"errors"
	"testing"
)

// FuzzParse: a configuration file parses to a resolved configuration (every
// gated type has a policy whose timeout, if any, is positive and whose
// fallback is valid) or is refused with ErrInvalidConfig; nothing panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"highway: {}\n",
		"highway:\n  preset: gated\n",
		"highway:\n  preset: autonomous\n  gates: {integration: true}\n  gate_defaults: {timeout: 2m, fallback: reject}\n",
		"highway:\n  gate_overrides:\n    integration: {timeout: null, fallback: escalate_to_coordinator}\n  escalation: {enabled: false, timeout: 1h, fallback: delegate_to_coordinator}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Parse = %v, want ErrInvalidConfig", err)
			}
			return
		}
		for _, typ := range GateTypes() {
			p := c.Policy(typ)
			if p.Timeout != nil && (*p.Timeout <= 0 || !p.Fallback.Valid()) {
				t.Fatalf("Policy(%s) = %v %q", typ, *p.Timeout, p.Fallback)
			}
		}
		if c.Escalation.Timeout != nil && (*c.Escalation.Timeout <= 0 || !c.Escalation.Fallback.Valid()) {
			t.Fatalf("escalation = %+v", c.Escalation)
		}
	})
}

// FuzzDecodeResolveRequest: a resolve request decodes to approve, reject or
// modify (modifications only with modify) or is refused with
// ErrInvalidResolution.
func FuzzDecodeResolveRequest(f *testing.F) {
	for _, s := range []string{
		`{"gate_id":"g","action":"approve"}`,
		`{"gate_id":"g","action":"modify","modifications":{"priority":"urgent"}}`,
		`{"gate_id":"g","action":"reject","modifications":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeResolveRequest(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidResolution) {
				t.Fatalf("DecodeResolveRequest = %v", err)
			}
			return
		}
		if r.GateID == "" || (r.Action != Approve && r.Action != Reject && r.Action != Modify) {
			t.Fatalf("decoded %+v", r)
		}
		if _, err := r.modifications(); err != nil {
			t.Fatalf("decoded %+v, then %v", r, err)
		}
	})
}

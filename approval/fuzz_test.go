package approval_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/wacpd/wacpd/approval"
)

// FuzzProposal: a modified envelope from an operator is refused with
// ErrEnvelope or accepted with paths covering the held request, uses and
// ttl in range; it never panics.
func FuzzProposal(f *testing.F) {
	for _, s := range []string{`{"paths":["src/**"],"uses":2,"ttl_seconds":60}`, `{"paths":["src/a.go"],"uses":1,"ttl_seconds":1}`,
		`{}`, `[]`, `null`, `{"paths":["**"],"uses":100,"ttl_seconds":604800}`, `{"paths":["a/**/b"]}`, `{"uses":"1"}`} {
		f.Add(s)
	}
	cp := approval.Checkpoint{Paths: []string{"src/a.go"}}
	pol := approval.Policy{MaxPermitUses: 100}
	f.Fuzz(func(t *testing.T, s string) {
		pr, err := approval.DecodeProposal(json.RawMessage(s), cp, pol)
		if err != nil {
			if !errors.Is(err, approval.ErrEnvelope) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if pr.Uses < 1 || pr.Uses > 100 || pr.TTLSeconds < 1 || len(pr.Paths) == 0 {
			t.Fatalf("accepted %+v", pr)
		}
	})
}

// FuzzCanonicalize: any JSON object of arguments has one canonical form,
// whatever its key order or whitespace: decoding the form and
// canonicalizing again gives the same digest.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"path":"src/a.go","n":1.0}`, `{"b":[1,2,{"z":null,"a":"é"}],"a":true}`, `{"x":1e300}`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil || m == nil {
			return
		}
		c, err := approval.Canonicalize("file.write", m, approval.Context{Session: "ws"})
		if err != nil {
			if !errors.Is(err, approval.ErrRequest) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var again struct {
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.Unmarshal(c.Form, &again); err != nil {
			t.Fatalf("form %s: %v", c.Form, err)
		}
		c2, err := approval.Canonicalize("file.write", again.Arguments, approval.Context{Session: "ws"})
		if err != nil || c2.Digest != c.Digest {
			t.Fatalf("not stable: %s vs %s (%v)", c.Form, c2.Form, err)
		}
	})
}

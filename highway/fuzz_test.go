package highway

import (
	"errors"
	"testing"
)

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

package signal_test

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
)

// FuzzDecodeSignalRequest checks that DecodeRequest never panics, fails only
// with an invalid_structure *Rejection, accepts only requests that satisfy its
// documented shape, and that an accepted request re-encodes to an equal one.
// Check, run on every accepted request, must not panic either.
// Seeds: testdata/fuzz/FuzzDecodeSignalRequest.
func FuzzDecodeSignalRequest(f *testing.F) {
	f.Add([]byte(`{"type":"ready"}`))
	f.Add([]byte(`{"type":"blocked","reason":"waiting","ref":"01JDAXQ5Z0B2C3D4E5F6G7H8J9"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := signal.DecodeRequest(data)
		if err != nil {
			var rej *signal.Rejection
			if !errors.As(err, &rej) || rej.Reason != signal.ReasonInvalidStructure {
				t.Fatalf("DecodeRequest(%q) = %v, want an invalid_structure rejection", data, err)
			}
			return
		}
		if !utf8.Valid(data) || req.Type == "" || len(req.Reason) > signal.MaxReason {
			t.Fatalf("DecodeRequest(%q) accepted %+v", data, req)
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := signal.DecodeRequest(b)
		if err != nil || again != req {
			t.Fatalf("DecodeRequest(%s) = %+v, %v, want %+v", b, again, err, req)
		}
		tax := taxonomy.Base()
		for _, role := range []string{taxonomy.RoleCoordinator, taxonomy.RoleWorker, taxonomy.RoleObserver} {
			if err := signal.Check(tax, role, req); err != nil && !errors.Is(err, signal.ErrRejected) {
				t.Fatalf("Check(%s, %+v) = %v, want nil or a rejection", role, req, err)
			}
		}
	})
}

package envelope_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
)

// FuzzDecodeEnvelopeRequest checks that DecodeRequest never panics, fails
// only with an invalid_structure *Rejection, returns only requests with the
// documented shape and defaults, and that an accepted request re-encodes to
// an equal one. Check, run on every accepted request, must not panic.
// Seeds: testdata/fuzz/FuzzDecodeEnvelopeRequest.
func FuzzDecodeEnvelopeRequest(f *testing.F) {
	f.Add([]byte(`{"to":"ws-b","type":"directive","payload":{"content":"do the work"}}`))
	f.Add([]byte(`{"to":"ws-b","type":"query","priority":"urgent","in_reply_to":"e1","payload":{"format":"json","content":"{}","attachments":["cp-1"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := envelope.DecodeRequest(data)
		if err != nil {
			var rej *envelope.Rejection
			if !errors.As(err, &rej) || rej.Reason != envelope.ReasonInvalidStructure {
				t.Fatalf("DecodeRequest(%q) = %v, want an invalid_structure rejection", data, err)
			}
			return
		}
		switch {
		case !utf8.Valid(data), req.To == "", req.Type == "", req.Payload.Format == "",
			req.Payload.Attachments == nil, req.InReplyTo != nil && *req.InReplyTo == "":
			t.Fatalf("DecodeRequest(%q) accepted %+v", data, req)
		}
		switch req.Priority {
		case envelope.PriorityNormal, envelope.PriorityUrgent, envelope.PriorityBlocking:
		default:
			t.Fatalf("DecodeRequest(%q) priority = %q", data, req.Priority)
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := envelope.DecodeRequest(b)
		if err != nil || !reflect.DeepEqual(again, req) {
			t.Fatalf("DecodeRequest(%s) = %+v, %v, want %+v", b, again, err, req)
		}
		from := envelope.Party{ID: "from", Role: taxonomy.RoleCoordinator, Exists: true}
		to := envelope.Party{ID: req.To, Role: taxonomy.RoleWorker, Parent: "from", Exists: true}
		if err := envelope.Check(taxonomy.Base(), from, to, req.Type); err != nil && !errors.Is(err, envelope.ErrRejected) {
			t.Fatalf("Check(%+v) = %v, want nil or a rejection", req, err)
		}
	})
}

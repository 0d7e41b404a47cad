package daemon

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/carp"
)

// FuzzToolReply: a tool service's answer is untrusted: whatever its bytes,
// toolReply does not panic and gives either a reply of one of the three
// statuses a tool may answer (anything else becomes failed with
// EXECUTION_FAILED) or the reason there is none.
func FuzzToolReply(f *testing.F) {
	for _, s := range []string{`{"status":"success","output":{"a":1},"output_type":"application/json"}`,
		`{"status":"failed","error":{"code":"X","message":"m","retriable":true}}`, `{"status":"timeout"}`,
		`{"status":"partial_success","side_effects":[{"type":"t","target":"x","reversible":false}],"tokens_used":3}`,
		`[]`, `{`, ``, `{"status":1}`} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(nil), true)
	f.Fuzz(func(t *testing.T, data []byte, noResponders bool) {
		m := &nats.Msg{Data: data, Header: nats.Header{}}
		if noResponders {
			m.Header.Set("Status", "503")
		}
		rep, why := toolReply(m)
		if rep == nil {
			if why == "" {
				t.Fatalf("toolReply(%q) = nil without a reason", data)
			}
			return
		}
		switch rep.Status {
		case carp.StatusSuccess, carp.StatusPartialSuccess, carp.StatusFailed:
			// a failed one without an error gets EXECUTION_FAILED from the engine
		default:
			t.Fatalf("toolReply(%q) status %q", data, rep.Status)
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("the reply does not encode: %v", err)
		}
	})
}

package daemon_test

import (
	"fmt"
	"testing"
)

// TestAgentSeesNoOtherWorkspaceThroughJetStream checks WACP visibility (a
// worker sees its own workspace, not the tree) on the JetStream API an
// agent token may use: stream info with a subjects filter would list every
// signal subject, and so every workspace id, parent/child pair and signal
// type. An agent gets its own durable consumer from the daemon
// (signals.consumer) and inspects it, but creates none itself: a consumer's
// configuration could name a delivery subject in the daemon's account.
func TestAgentSeesNoOtherWorkspaceThroughJetStream(t *testing.T) {
	w := newAuthzWorld(t)
	f := w.fixture(t, stActive)
	x := f.X.id
	tests := []struct {
		subject, body, want string
	}{
		{"$JS.API.STREAM.INFO.WACP_SIGNALS", `{"subjects_filter":">"}`, pub},
		{"$JS.API.STREAM.NAMES", `{}`, pub},
		{"$JS.API.CONSUMER.LIST.WACP_SIGNALS", `{}`, pub},
		{"$JS.API.CONSUMER.CREATE.WACP_SIGNALS." + x + ".wacp.v1.sig." + x + ".>",
			fmt.Sprintf(`{"stream_name":"WACP_SIGNALS","config":{"durable_name":%q,"filter_subject":"wacp.v1.sig.%s.>","ack_policy":"explicit"}}`, x, x), pub},
		{"$JS.API.INFO", `{}`, pub},
		{"wacp.v1.agent." + x + ".signals.consumer", `{}`, ok},
		{"$JS.API.CONSUMER.INFO.WACP_SIGNALS." + x, `{}`, ok},
		{"$JS.API.CONSUMER.INFO.WACP_SIGNALS." + f.W.id, `{}`, pub},
	}
	for _, tt := range tests {
		got, detail := w.server.probe(t, f.X.token, tt.subject, tt.body)
		if got != tt.want {
			t.Errorf("%s by a worker = %s, want %s\n%s", tt.subject, got, tt.want, detail)
		}
	}
}

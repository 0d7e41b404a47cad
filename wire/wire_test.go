package wire

import (
	"strings"
	"testing"
)

// TestEndpoints: ops are unique, names and subjects follow the contract's
// forms, and only inbox.next and audit.trail.verify have longer deadlines.
func TestEndpoints(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Endpoints() {
		if seen[e.Op] {
			t.Errorf("op %s twice", e.Op)
		}
		seen[e.Op] = true
		switch e.Audience {
		case Agents:
			if e.Subject() != "wacp.v1.agent.*."+e.Op || e.DocSubject() != "wacp.v1.agent.<ws>."+e.Op || !strings.HasPrefix(e.Name(), "agent_") {
				t.Errorf("%s: subject %s, doc %s, name %s", e.Op, e.Subject(), e.DocSubject(), e.Name())
			}
		default:
			if e.Subject() != "wacp.v1."+e.Op || e.DocSubject() != e.Subject() || strings.Contains(e.Name(), ".") {
				t.Errorf("%s: subject %s, doc %s, name %s", e.Op, e.Subject(), e.DocSubject(), e.Name())
			}
		}
		if e.Reply == "" {
			t.Errorf("%s: no reply schema", e.Op)
		}
		want := RequestTimeout
		switch e.Op {
		case "inbox.next", "carp.approval":
			want = MaxWait + RequestTimeout
		case "audit.trail.verify":
			want = VerifyTimeout
		case "carp.execute":
			want = MaxToolTimeout + RequestTimeout
		}
		if e.Deadline() != want {
			t.Errorf("%s: deadline %s, want %s", e.Op, e.Deadline(), want)
		}
	}
	if got := AgentSubject("W", "inbox.next"); got != "wacp.v1.agent.W.inbox.next" {
		t.Errorf("AgentSubject = %s", got)
	}
}

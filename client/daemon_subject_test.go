package client

import "testing"

func TestDaemonSubject(t *testing.T) {
	for _, tc := range []struct{ daemon, in, want string }{
		{"", "wacp.v1.audit.sth", "wacp.v1.audit.sth"},
		{"d2", "wacp.v1.audit.sth", "wacp.v1.d.d2.audit.sth"},
		{"d2", "wacp.v1.system.info", "wacp.v1.d.d2.system.info"},
		{"d2", "wacp.v1.highway.queue", "wacp.v1.d.d2.highway.queue"},
		{"d2", "wacp.v1.agent.W1.checkpoint", "wacp.v1.agent.W1.checkpoint"},
		{"d2", "other.subject", "other.subject"},
	} {
		if got := daemonSubject(tc.daemon, tc.in); got != tc.want {
			t.Errorf("daemonSubject(%q, %q) = %q, want %q", tc.daemon, tc.in, got, tc.want)
		}
	}
}

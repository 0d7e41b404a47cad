package client

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps checks that the client pulls in neither the daemon nor the NATS
// server: a program using it stays a small NATS client.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		deps[d] = true
	}
	for _, banned := range []string{
		"github.com/wacpd/wacpd/runtime",
		"testing",
	} {
		if deps[banned] {
			t.Errorf("client depends on %s", banned)
		}
	}
	for d := range deps {
		if strings.HasPrefix(d, "github.com/nats-io/nats-server/") {
			t.Errorf("client depends on %s", d)
		}
	}
	if !deps["github.com/nats-io/nats.go"] {
		t.Errorf("go list -deps does not list github.com/nats-io/nats.go; the check is not seeing the client's deps")
	}
}

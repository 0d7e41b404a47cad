package signal_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDeps enforces the dependency direction of style rule 1: from this
// module signal depends only on taxonomy; it never links the NATS server
// (the nats.go client is allowed); and only test files import "testing".
func TestDeps(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	const module = "github.com/wacpd/wacpd"
	const self = module + "/signal"
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", self).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", self, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, self) {
		t.Fatalf("go list -deps %s does not list the package itself:\n%s", self, out)
	}
	allowed := []string{self, module + "/taxonomy"}
	for _, dep := range deps {
		switch {
		case dep == module || strings.HasPrefix(dep, module+"/"):
			if !slices.Contains(allowed, dep) {
				t.Errorf("%s depends on %s; from this module it may use only %v", self, dep, allowed)
			}
		case dep == "github.com/nats-io/nats-server/v2" || strings.HasPrefix(dep, "github.com/nats-io/nats-server/"):
			t.Errorf("%s depends on %s; only runtime may import the NATS server", self, dep)
		case dep == "testing" || strings.HasPrefix(dep, "testing/"):
			t.Errorf("%s depends on %s; only _test files may import it", self, dep)
		}
	}
}

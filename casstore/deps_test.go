package casstore_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDeps enforces that casstore stays a leaf (style rule 1): its packages
// import only the standard library, blake3, badger and each other, never
// NATS, and only test code imports "testing".
func TestDeps(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	const self = "github.com/wacpd/wacpd/casstore"
	out, err := exec.Command(gobin, "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{join .Deps \",\"}}", self+"/...").Output()
	if err != nil {
		t.Fatalf("go list %s/...: %v", self, err)
	}
	allowedDirect := []string{"github.com/zeebo/blake3", "github.com/dgraph-io/badger/v4", self}
	banned := []string{"github.com/wacpd/wacpd/", "github.com/nats-io/", "testing"}
	seen := 0
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		pkg, rest, _ := strings.Cut(strings.TrimSpace(line), "|")
		imports, deps, _ := strings.Cut(rest, "|")
		seen++
		if pkg == self+"/casstoretest" {
			continue // a test helper: it imports testing by design
		}
		for _, imp := range strings.Split(imports, ",") {
			if isStd(imp) || slices.Contains(allowedDirect, imp) {
				continue
			}
			t.Errorf("%s imports %s, want only stdlib, blake3, badger or %s", pkg, imp, self)
		}
		for _, dep := range strings.Split(deps, ",") {
			for _, b := range banned {
				if (dep == b || strings.HasPrefix(dep, b)) && !strings.HasPrefix(dep, self) {
					t.Errorf("%s depends on %s, which is banned (%s)", pkg, dep, b)
				}
			}
		}
	}
	if seen < 3 {
		t.Errorf("go list %s/... listed %d packages, want at least 3:\n%s", self, seen, out)
	}
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return path != "" && !strings.Contains(first, ".")
}

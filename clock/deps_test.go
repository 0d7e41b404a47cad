package clock_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDeps enforces the dependency direction of the style guide: clock is a
// leaf that imports nothing from wacpd.
func TestDeps(t *testing.T) {
	const self = "github.com/wacpd/wacpd/clock"
	deps := goListDeps(t)
	for _, d := range deps {
		if d != self && (d == "github.com/wacpd/wacpd" || strings.HasPrefix(d, "github.com/wacpd/wacpd/")) {
			t.Errorf("clock depends on %s, want nothing from github.com/wacpd/wacpd", d)
		}
		if strings.HasPrefix(d, "github.com/nats-io/") {
			t.Errorf("clock depends on %s, want no NATS", d)
		}
	}
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	for _, imp := range nonTestImports(t) {
		if imp == "testing" || strings.HasPrefix(imp, "testing/") {
			t.Errorf("a non-test file of clock imports %q, want only _test.go files to", imp)
		}
	}
}

// goListDeps returns the import paths this package depends on, itself included.
func goListDeps(t *testing.T) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go binary: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps printed nothing")
	}
	return deps
}

// nonTestImports returns the imports of the package's non-test files, one
// entry per file and import.
func nonTestImports(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var imps []string
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		n++
		for _, is := range f.Imports {
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", name, is.Path.Value, err)
			}
			imps = append(imps, p)
		}
	}
	if n == 0 {
		t.Fatal("found no non-test Go files")
	}
	return imps
}

package taxonomy

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowedDeps are the only packages outside the standard library that
// taxonomy may depend on, directly or not: it is a leaf.
var allowedDeps = []string{
	"github.com/wacpd/wacpd/taxonomy", // itself
	"gopkg.in/yaml.v3",
	"github.com/zeebo/blake3",       // and its internal packages
	"github.com/klauspost/cpuid/v2", // blake3's CPU feature detection
}

func TestDeps_Leaf(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/wacpd/wacpd") && dep != "github.com/wacpd/wacpd/taxonomy" {
			t.Errorf("taxonomy depends on %s; it must import nothing from github.com/wacpd/wacpd", dep)
			continue
		}
		ok := false
		for _, a := range allowedDeps {
			if dep == a || strings.HasPrefix(dep, a+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("taxonomy depends on %s, which is not in allowedDeps", dep)
		}
	}
}

func TestDeps_NoTestingInNonTestFiles(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "testing" || strings.HasPrefix(path, "testing/") {
				t.Errorf("%s imports %q; only _test.go files may", file, path)
			}
		}
	}
}

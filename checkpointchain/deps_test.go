package checkpointchain_test

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/wacpd/wacpd"

// allowedOwn are the packages of this module checkpointchain may depend on,
// directly or not (style guide §1: checkpointchain -> casstore, taxonomy).
var allowedOwn = map[string]bool{
	module + "/checkpointchain": true, // itself
	module + "/casstore":        true,
	module + "/taxonomy":        true,
}

func TestDepsDirection(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps printed nothing")
	}
	for _, dep := range deps {
		switch {
		case (dep == module || strings.HasPrefix(dep, module+"/")) && !allowedOwn[dep]:
			t.Errorf("checkpointchain depends on %s; it may import only casstore and taxonomy from %s", dep, module)
		case strings.HasPrefix(dep, "github.com/nats-io/"):
			t.Errorf("checkpointchain depends on %s; it must not depend on NATS", dep)
		}
	}
}

func TestDepsNoTestingInNonTestFiles(t *testing.T) {
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

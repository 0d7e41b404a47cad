// Package deptest checks what a package may depend on, for the deps_test.go
// files that enforce the dependency direction of the style guide (§1), in the
// manner of tailscale's tstest/deptest.
//
// A test states the rules and calls Check:
//
//	func TestDeps(t *testing.T) {
//		deptest.Check(t, "github.com/wacpd/wacpd/trail", deptest.Rules{
//			OwnAllowed: []string{"github.com/wacpd/wacpd/casstore", "github.com/wacpd/wacpd/taxonomy"},
//			Forbidden:  []string{"github.com/nats-io/nats-server/", "testing/..."},
//		})
//	}
//
// Check asks `go list -deps` for the package graph, so it sees what the
// compiler sees for the current GOOS, GOARCH and build tags; test files do not
// count. NoTestingImport checks the other half of the rule that only _test.go
// files import "testing".
//
// Like casstore/casstoretest this is a test helper: it imports "testing" and
// only _test.go files may import it.
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Rules say what the packages under test may depend on. Every list holds
// import path patterns: "p/..." matches p and every package below it (as in
// go list), a pattern ending in "/" matches every path that begins with it
// ("github.com/nats-io/"), and any other pattern matches only that path.
//
// Dependencies are direct and indirect, outside test files. The standard
// library is always allowed unless Forbidden says otherwise.
type Rules struct {
	// OwnAllowed lists the packages of the checked packages' own module
	// that they may depend on; any other package of the module is a
	// violation. The packages that the pattern given to Check matches may
	// always depend on each other. To allow the whole module, as a check
	// that only forbids, list "<module>/...".
	OwnAllowed []string

	// Forbidden lists packages they must not depend on, from anywhere,
	// standard library included ("testing/...").
	Forbidden []string

	// ExternalAllowed, if not nil, lists the only packages outside the
	// standard library and the module that they may depend on. Nil allows
	// any.
	ExternalAllowed []string

	// ImportsAllowed, if not nil, lists the only packages outside the
	// standard library that they may import directly, packages of their own
	// module included. Nil allows any.
	ImportsAllowed []string

	// Exempt lists packages that the pattern matches but that are not
	// checked, such as a test helper that imports "testing" by design.
	Exempt []string

	// Required lists packages that must be among those the pattern matches
	// or their dependencies: a guard that go list sees what the test thinks
	// it sees.
	Required []string

	// MinPackages, if positive, is the least number of packages the pattern
	// must match: a guard for a "/..." pattern.
	MinPackages int
}

// Check reports, as errors of t, every way in which the packages that pkg
// matches break r. pkg is an import path or pattern as go list takes it,
// resolved in the test's directory. Check skips the test if there is no go
// command and stops it if go list fails or matches nothing.
func Check(t testing.TB, pkg string, r Rules) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("go command not found: %v", err)
	}
	vs, err := Violations(pkg, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// Violations is Check without the test: it returns one line for each way in
// which the packages that pkg matches break r, or an error if go list fails
// or matches nothing.
func Violations(pkg string, r Rules) ([]string, error) {
	pkgs, err := list(pkg)
	if err != nil {
		return nil, err
	}
	std := map[string]bool{"C": true} // cgo's pseudo-package
	matched := map[string]bool{}
	var roots []*listedPackage
	for _, p := range pkgs {
		if p.Standard {
			std[p.ImportPath] = true
		}
		if !p.DepOnly {
			matched[p.ImportPath] = true
			roots = append(roots, p)
		}
	}
	if len(roots) == 0 {
		return nil, fmt.Errorf("go list -deps %s matched no packages", pkg)
	}

	var vs []string
	if len(roots) < r.MinPackages {
		vs = append(vs, fmt.Sprintf("%s matches %d packages, want at least %d", pkg, len(roots), r.MinPackages))
	}
	for _, req := range r.Required {
		if !slices.ContainsFunc(pkgs, func(p *listedPackage) bool { return match(req, p.ImportPath) }) {
			vs = append(vs, fmt.Sprintf("%s: nothing it depends on matches %s; the check does not see what it should", pkg, req))
		}
	}
	for _, p := range roots {
		if matchAny(r.Exempt, p.ImportPath) {
			continue
		}
		if r.ImportsAllowed != nil {
			for _, imp := range p.Imports {
				if !std[imp] && !matchAny(r.ImportsAllowed, imp) {
					vs = append(vs, fmt.Sprintf("%s imports %s; outside the standard library it may import only %v", p.ImportPath, imp, r.ImportsAllowed))
				}
			}
		}
		module := ""
		if p.Module != nil {
			module = p.Module.Path
		}
		for _, dep := range p.Deps {
			if i := slices.IndexFunc(r.Forbidden, func(f string) bool { return match(f, dep) }); i >= 0 {
				vs = append(vs, fmt.Sprintf("%s depends on %s, which is forbidden (%s)", p.ImportPath, dep, r.Forbidden[i]))
				continue
			}
			switch {
			case std[dep]:
			case module != "" && match(module+"/...", dep):
				if !matched[dep] && !matchAny(r.OwnAllowed, dep) {
					allowed := fmt.Sprint(r.OwnAllowed)
					if len(r.OwnAllowed) == 0 {
						allowed = "nothing but itself"
					}
					vs = append(vs, fmt.Sprintf("%s depends on %s; from %s it may use %s", p.ImportPath, dep, module, allowed))
				}
			case r.ExternalAllowed != nil && !matchAny(r.ExternalAllowed, dep):
				vs = append(vs, fmt.Sprintf("%s depends on %s; outside the standard library and %s it may use only %v", p.ImportPath, dep, module, r.ExternalAllowed))
			}
		}
	}
	return vs, nil
}

// listedPackage holds the fields of `go list -json` that Violations uses.
type listedPackage struct {
	ImportPath string
	Standard   bool
	DepOnly    bool // not matched by the pattern, only depended on
	Module     *struct{ Path string }
	Imports    []string
	Deps       []string // direct and indirect, sorted, the package excluded
}

// list runs `go list -deps` on pkg.
func list(pkg string) ([]*listedPackage, error) {
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,DepOnly,Module,Imports,Deps", pkg).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list -deps %s: %v", pkg, err)
	}
	var pkgs []*listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(listedPackage)
		if err := dec.Decode(p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list -deps %s: decoding its output: %v", pkg, err)
		}
		pkgs = append(pkgs, p)
	}
}

// NoTestingImport reports, as errors of t, every import of "testing" or a
// package below it by a Go file in dir whose name does not end in _test.go.
// It stops the test if a file does not parse or there is no such file.
func NoTestingImport(t testing.TB, dir string) {
	t.Helper()
	vs, err := TestingImports(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestingImports is NoTestingImport without the test: it returns one line for
// each import of "testing" or a package below it by a non-test Go file in
// dir, whatever its build constraints, or an error if a file does not parse
// or dir has no non-test Go file.
func TestingImports(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var vs []string
	fset := token.NewFileSet()
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		n++
		for _, is := range f.Imports {
			imp, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: import %s: %v", path, is.Path.Value, err)
			}
			if match("testing/...", imp) {
				vs = append(vs, fmt.Sprintf("%s imports %q; only _test.go files may", path, imp))
			}
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("found no non-test Go files in %s", dir)
	}
	return vs, nil
}

// match reports whether the import path matches pattern, as described at
// Rules.
func match(pattern, path string) bool {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == p || strings.HasPrefix(path, p+"/")
	}
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(path, pattern)
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

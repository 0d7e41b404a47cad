package deptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/wacpd/wacpd"

// needGo skips the test where Check would: without a go command.
func needGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("go command not found: %v", err)
	}
}

func violations(t *testing.T, pkg string, r Rules) []string {
	t.Helper()
	vs, err := Violations(pkg, r)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// wantViolation fails unless some violation contains every one of parts.
func wantViolation(t *testing.T, vs []string, parts ...string) {
	t.Helper()
	if !slices.ContainsFunc(vs, func(v string) bool {
		for _, p := range parts {
			if !strings.Contains(v, p) {
				return false
			}
		}
		return true
	}) {
		t.Errorf("no violation contains all of %q; got:\n%s", parts, strings.Join(vs, "\n"))
	}
}

func TestForbidden(t *testing.T) {
	needGo(t)
	// daemon is the one package that embeds the NATS server.
	vs := violations(t, module+"/daemon", Rules{
		OwnAllowed: []string{module + "/..."},
		Forbidden:  []string{"github.com/nats-io/"},
	})
	wantViolation(t, vs, module+"/daemon depends on github.com/nats-io/nats-server/v2/server,", "forbidden (github.com/nats-io/)")
	for _, v := range vs {
		if !strings.Contains(v, "depends on github.com/nats-io/") {
			t.Errorf("unexpected violation %q", v)
		}
	}
}

func TestOwnAllowed(t *testing.T) {
	needGo(t)
	vs := violations(t, module+"/runtime", Rules{OwnAllowed: []string{module + "/casstore", module + "/taxonomy"}})
	wantViolation(t, vs, "depends on "+module+"/workspace;")
	for _, v := range vs {
		if strings.Contains(v, "depends on "+module+"/casstore;") || strings.Contains(v, "depends on "+module+"/taxonomy;") {
			t.Errorf("violation of an allowed package: %q", v)
		}
	}
}

func TestClean(t *testing.T) {
	needGo(t)
	// The rules of taxonomy/taxfile/deps_test.go, and that it needs YAML.
	vs := violations(t, module+"/taxonomy/taxfile", Rules{
		OwnAllowed:      []string{module + "/taxonomy"},
		ExternalAllowed: []string{"gopkg.in/yaml.v3/...", "github.com/zeebo/blake3/...", "github.com/klauspost/cpuid/v2/..."},
		Forbidden:       []string{"testing/...", "github.com/nats-io/"},
		Required:        []string{"gopkg.in/yaml.v3"},
	})
	if len(vs) != 0 {
		t.Errorf("taxfile breaks its own rules:\n%s", strings.Join(vs, "\n"))
	}
}

func TestExternalAllowed(t *testing.T) {
	needGo(t)
	// Non-nil and empty: nothing outside the standard library and the module.
	vs := violations(t, module+"/taxonomy/taxfile", Rules{OwnAllowed: []string{module + "/taxonomy"}, ExternalAllowed: []string{}})
	wantViolation(t, vs, module+"/taxonomy/taxfile depends on gopkg.in/yaml.v3;")
	// Nil: anything.
	if vs := violations(t, module+"/taxonomy/taxfile", Rules{OwnAllowed: []string{module + "/taxonomy"}}); len(vs) != 0 {
		t.Errorf("nil ExternalAllowed: got violations:\n%s", strings.Join(vs, "\n"))
	}
}

func TestImportsAllowedExemptMinPackages(t *testing.T) {
	needGo(t)
	const cas = module + "/casstore"
	vs := violations(t, cas+"/...", Rules{
		ImportsAllowed: []string{"github.com/zeebo/blake3"},
		OwnAllowed:     []string{cas + "/..."},
		Exempt:         []string{cas + "/casstoretest"},
		MinPackages:    5,
	})
	wantViolation(t, vs, cas+"/badgerstore imports github.com/dgraph-io/badger/v4;")
	wantViolation(t, vs, cas+"/memstore imports "+cas+";")
	wantViolation(t, vs, "matches 4 packages, want at least 5")
	for _, v := range vs {
		if strings.HasPrefix(v, cas+"/casstoretest ") {
			t.Errorf("violation of an exempt package: %q", v)
		}
		if strings.Contains(v, "github.com/zeebo/blake3;") {
			t.Errorf("violation of an allowed import: %q", v)
		}
	}
}

func TestRequired(t *testing.T) {
	needGo(t)
	vs := violations(t, module+"/taxonomy", Rules{Required: []string{"github.com/nats-io/..."}})
	wantViolation(t, vs, "nothing it depends on matches github.com/nats-io/...")
}

func TestNoMatch(t *testing.T) {
	needGo(t)
	if _, err := Violations(module+"/nosuch/...", Rules{}); err == nil || !strings.Contains(err.Error(), "matched no packages") {
		t.Errorf("pattern matching nothing: err = %v, want one saying it matched no packages", err)
	}
	if _, err := Violations(module+"/nosuch", Rules{}); err == nil {
		t.Errorf("missing package: no error")
	}
}

// recorder is a testing.TB that records errors instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }

func TestCheckReports(t *testing.T) {
	needGo(t)
	r := &recorder{TB: t}
	Check(r, module+"/daemon", Rules{OwnAllowed: []string{module + "/..."}, Forbidden: []string{"github.com/nats-io/"}})
	wantViolation(t, r.errs, "depends on github.com/nats-io/nats-server/v2/server,")
	r = &recorder{TB: t}
	Check(r, module+"/clock", Rules{Forbidden: []string{"github.com/nats-io/"}})
	if len(r.errs) != 0 {
		t.Errorf("Check reported %d errors for clock, want none", len(r.errs))
	}
}

func TestTestingImports(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.go":      "package p\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n",
		"b.go":      "package p\n\nimport \"testing/fstest\"\n",
		"c.go":      "package p\n\nimport \"testingfoo\"\n",
		"a_test.go": "package p\n\nimport \"testing\"\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := TestingImports(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "a.go") + ` imports "testing"; only _test.go files may`,
		filepath.Join(dir, "b.go") + ` imports "testing/fstest"; only _test.go files may`,
	}
	if !slices.Equal(vs, want) {
		t.Errorf("TestingImports = %q, want %q", vs, want)
	}

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "x_test.go"), []byte("package p\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := TestingImports(empty); err == nil {
		t.Error("TestingImports of a directory with only test files: no error")
	}
}

func TestNoTestingImportHere(t *testing.T) {
	// deptest is a test helper: it imports testing by design.
	vs, err := TestingImports(".")
	if err != nil {
		t.Fatal(err)
	}
	wantViolation(t, vs, `deptest.go imports "testing"`)
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", false},
		{"a/b", "a/bc", false},
		{"a/b/...", "a/b", true},
		{"a/b/...", "a/b/c/d", true},
		{"a/b/...", "a/bc", false},
		{"a/b/", "a/b", false},
		{"a/b/", "a/b/c", true},
		{"a/b/", "a/bc", false},
		{"testing/...", "testing", true},
		{"testing/...", "testing/fstest", true},
		{"testing/...", "testingfoo", false},
	}
	for _, tt := range tests {
		if got := match(tt.pattern, tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

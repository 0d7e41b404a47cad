package taxfile

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/wacpd/wacpd/taxonomy"
)

func mustLoad(t testing.TB, path string) *taxonomy.Taxonomy {
	t.Helper()
	tax, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%q) = %v", path, err)
	}
	return tax
}

func validFile(name string) string { return filepath.Join("testdata", "valid", name) }

func TestLoad_Valid(t *testing.T) {
	tests := []struct {
		file, id, version string
		roles             []string
	}{
		{"reviewer.yaml", "example-reviewer", "1.0.0", []string{"coordinator", "observer", "reviewer", "worker"}},
		{"reviewer.json", "example-reviewer", "1.0.0", []string{"coordinator", "observer", "reviewer", "worker"}},
		{"map_roles.yaml", "map-style", "2", []string{"analyst", "coordinator", "observer", "watcher", "worker"}},
		{"list_roles.yaml", "list-style", "0.3.0", []string{"coordinator", "observer", "scribe", "tester", "worker"}},
		{"senior_auditor.yaml", "example-senior-auditor", "1.2.0", []string{"auditor", "coordinator", "observer", "senior_worker", "worker"}},
		{"minimal.json", "minimal", "1", []string{"coordinator", "observer", "worker"}},
		{"empty.yaml", taxonomy.BaseID, taxonomy.BaseVersion, []string{"coordinator", "observer", "worker"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tax := mustLoad(t, validFile(tt.file))
			if tax.ID() != tt.id || tax.Version() != tt.version {
				t.Errorf("ID(), Version() = %q, %q, want %q, %q", tax.ID(), tax.Version(), tt.id, tt.version)
			}
			if got := tax.Roles(); !slices.Equal(got, tt.roles) {
				t.Errorf("Roles() = %v, want %v", got, tt.roles)
			}
			data, err := os.ReadFile(validFile(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			sum := blake3.Sum256(data)
			if want := "blake3:" + hex.EncodeToString(sum[:]); tax.Checksum() != want {
				t.Errorf("Checksum() = %q, want %q", tax.Checksum(), want)
			}
		})
	}
}

// TestParse_FormatByName checks that the name picks the decoder: .json is
// JSON only, .yaml YAML, anything else JSON then YAML.
func TestParse_FormatByName(t *testing.T) {
	yamlDoc := []byte("id: a\nversion: \"1\"\nprotocol_version: \"0.1\"\n")
	jsonDoc := []byte(`{"id":"a","version":"1","protocol_version":"0.1"}`)
	tests := []struct {
		name    string
		data    []byte
		wantErr bool
	}{
		{"t.yaml", yamlDoc, false},
		{"t.YML", yamlDoc, false},
		{"t.yaml", jsonDoc, false}, // JSON is YAML
		{"t.json", jsonDoc, false},
		{"t.json", yamlDoc, true},
		{"taxonomy", yamlDoc, false},
		{"taxonomy", jsonDoc, false},
		{"taxonomy.conf", []byte("{"), true},
	}
	for _, tt := range tests {
		_, err := Parse(tt.name, tt.data)
		if (err != nil) != tt.wantErr {
			t.Errorf("Parse(%q, %q) error = %v, want error %v", tt.name, tt.data, err, tt.wantErr)
		}
	}
}

func TestParse_ReviewerYAMLAndJSONAgree(t *testing.T) {
	y, j := mustLoad(t, validFile("reviewer.yaml")), mustLoad(t, validFile("reviewer.json"))
	for _, role := range y.Roles() {
		for _, typ := range y.CheckpointTypes() {
			if y.CanCreateCheckpoint(role, typ) != j.CanCreateCheckpoint(role, typ) {
				t.Errorf("CanCreateCheckpoint(%s, %s) differs between YAML and JSON", role, typ)
			}
		}
		for _, typ := range y.EnvelopeTypes() {
			for _, to := range y.Roles() {
				if y.CanSend(role, typ, to) != j.CanSend(role, typ, to) {
					t.Errorf("CanSend(%s, %s, %s) differs between YAML and JSON", role, typ, to)
				}
			}
		}
	}
	if !slices.Equal(y.EnvelopeTypes(), j.EnvelopeTypes()) || !slices.Equal(y.CheckpointTypes(), j.CheckpointTypes()) {
		t.Errorf("type registries differ: %v %v / %v %v", y.EnvelopeTypes(), y.CheckpointTypes(), j.EnvelopeTypes(), j.CheckpointTypes())
	}
}

func TestParse_EmptyDocuments(t *testing.T) {
	docs := []struct{ name, data string }{
		{"empty.yaml", ""},
		{"empty.json", ""},
		{"comments.yaml", "# nothing\n"},
		{"null.yaml", "~\n"},
		{"null.json", "null"},
		{"braces.json", "{}"},
		{"wrapper.yaml", "taxonomy:\n"},
		{"wrapper.json", `{"taxonomy": {}}`},
		{"spaces", "  \n"},
	}
	for _, d := range docs {
		tax, err := Parse(d.name, []byte(d.data))
		if err != nil {
			t.Errorf("Parse(%q, %q) = %v, want the empty taxonomy", d.name, d.data, err)
			continue
		}
		if tax.ID() != taxonomy.BaseID || tax.Version() != taxonomy.BaseVersion || len(tax.Roles()) != 3 {
			t.Errorf("Parse(%q) = %s %s %v, want %s %s and the base roles", d.name, tax.ID(), tax.Version(), tax.Roles(), taxonomy.BaseID, taxonomy.BaseVersion)
		}
	}
}

func TestParse_MultipleYAMLDocuments(t *testing.T) {
	_, err := Parse("two.yaml", []byte("id: a\n---\nid: b\n"))
	if err == nil || !strings.Contains(err.Error(), "one document") {
		t.Errorf("Parse(two documents) = %v, want a syntax error", err)
	}
}

func TestParse_AliasBomb(t *testing.T) {
	doc := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		doc += n + ": &" + n + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = n
	}
	if _, err := Parse("bomb.yaml", []byte(doc)); !errors.Is(err, taxonomy.ErrSyntax) {
		t.Errorf("Parse(alias bomb) = %v, want ErrSyntax", err)
	}
}

func TestBase(t *testing.T) {
	b := taxonomy.Base()
	if b != taxonomy.Base() {
		t.Errorf("Base() returned different values on two calls")
	}
	sum := blake3.Sum256([]byte(taxonomy.BaseDocument))
	want := "blake3:" + hex.EncodeToString(sum[:])
	if b.ID() != "wacp-base" || b.Version() != "0.1.0" || b.Checksum() != want {
		t.Errorf("Base() = %s %s %s, want wacp-base 0.1.0 %s", b.ID(), b.Version(), b.Checksum(), want)
	}
	if len(b.Checksum()) != len("blake3:")+64 {
		t.Errorf("len(Checksum()) = %d, want %d", len(b.Checksum()), len("blake3:")+64)
	}
	if got := b.Roles(); !slices.Equal(got, []string{"coordinator", "observer", "worker"}) {
		t.Errorf("Base().Roles() = %v", got)
	}
	if got := b.EnvelopeTypes(); !slices.Equal(got, []string{"directive", "feedback", "query"}) {
		t.Errorf("Base().EnvelopeTypes() = %v", got)
	}
	if got := b.CheckpointTypes(); !slices.Equal(got, []string{"artifact", "observation"}) {
		t.Errorf("Base().CheckpointTypes() = %v", got)
	}
}

// TestTaxonomy_ConcurrentReads: a loaded taxonomy answers the same from
// many goroutines at once as from one (and, under -race, without a data
// race: the lookups must not build caches lazily).
func TestTaxonomy_ConcurrentReads(t *testing.T) {
	tax := mustLoad(t, validFile("reviewer.yaml"))
	type answers struct {
		send, create bool
		roles        []string
		fields       []string
	}
	ask := func() answers {
		return answers{tax.CanSend("reviewer", "report", "coordinator"), tax.CanCreateCheckpoint("reviewer", "review"),
			tax.Roles(), tax.RequiredFields("review")}
	}
	want := ask()
	if !want.send || !want.create || len(want.roles) < 4 {
		t.Fatalf("reviewer.yaml answers %+v; the test needs a role that may send and checkpoint", want)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				got := ask()
				if got.send != want.send || got.create != want.create || !slices.Equal(got.roles, want.roles) || !slices.Equal(got.fields, want.fields) {
					errs <- fmt.Sprintf("concurrent answers %+v, want %+v", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestTaxonomy_SlicesAreCopies(t *testing.T) {
	tax := mustLoad(t, validFile("map_roles.yaml"))
	tax.Roles()[0] = "mutated"
	tax.RequiredFields("analysis")[0] = "mutated"
	tax.ReadScopes("analyst")
	if tax.Roles()[0] == "mutated" || tax.RequiredFields("analysis")[0] == "mutated" {
		t.Errorf("mutating a returned slice changed the taxonomy")
	}
	if got := tax.RequiredFields("analysis"); !slices.Equal(got, []string{"summary", "confidence"}) {
		t.Errorf(`RequiredFields("analysis") = %v, want [summary confidence]`, got)
	}
	if got := tax.RequiredFields(taxonomy.CheckpointArtifact); got != nil {
		t.Errorf("RequiredFields(artifact) = %v, want nil", got)
	}
}

func TestParse_Shapes(t *testing.T) {
	tests := []struct{ name, data, rule, entry string }{
		{"list.yaml", "- a\n- b\n", taxonomy.RuleFieldType, ""},
		{"scalar.json", `"taxonomy"`, taxonomy.RuleFieldType, ""},
		{"wrapped-scalar.yaml", "taxonomy: 5\n", taxonomy.RuleFieldType, "taxonomy"},
		{"wrapper-plus.yaml", "taxonomy: {}\nid: x\n", taxonomy.RuleUnknownField, "id"},
		{"nested-wrapper.yaml", "taxonomy:\n  taxonomy: {}\n", taxonomy.RuleUnknownField, "taxonomy"},
		{"bool-name.yaml", string(doc("  roles:\n    - {name: true, extends: worker}\n")), taxonomy.RuleFieldType, "roles[0].name"},
		{"cap-number.yaml", string(doc("  roles:\n    r: {extends: worker, add: [5]}\n")), taxonomy.RuleCapabilitySyntax, "roles[r].add[0]"},
		{"cap-list-value.yaml", string(doc("  roles:\n    r: {extends: worker, add: [{send: [a]}]}\n")), taxonomy.RuleCapabilitySyntax, "roles[r].add[0]"},
		{"cap-object-extra.yaml", string(doc("  roles:\n    r: {extends: worker, add: [{action: read, target: x, why: y}]}\n")), taxonomy.RuleUnknownField, "roles[r].add[0].why"},
		{"override-extra.yaml", string(doc("  roles:\n    r: {extends: worker, override: {emit: [ready]}}\n")), taxonomy.RuleUnknownField, "roles[r].override.emit"},
		{"permitted-scalar.yaml", string(doc("  checkpoint_types:\n    - {name: c, permitted_roles: worker}\n")), taxonomy.RuleFieldType, "checkpoint_types[c].permitted_roles"},
		{"unnamed.yaml", string(doc("  checkpoint_types:\n    - {permitted_roles: [worker]}\n")), taxonomy.RuleRequiredField, "checkpoint_types[0]"},
		{"empty-key.yaml", string(doc("  roles:\n    \"\": {extends: worker}\n")), taxonomy.RuleNameSyntax, "roles[]"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.name, []byte(tt.data))
		var ve *taxonomy.ValidationError
		if !errors.As(err, &ve) || ve.Rule != tt.rule || ve.Entry != tt.entry {
			t.Errorf("Parse(%s) = %v, want rule %s at entry %q", tt.name, err, tt.rule, tt.entry)
		}
	}
}

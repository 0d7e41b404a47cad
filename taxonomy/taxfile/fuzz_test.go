package taxfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wacpd/wacpd/taxonomy"
)

// FuzzTaxonomyParse checks that Parse never panics, whatever the input and
// format, and that a taxonomy it accepts answers every lookup consistently.
// The seed corpus is testdata/fuzz/FuzzTaxonomyParse plus every file under
// testdata/valid and testdata/invalid.
func FuzzTaxonomyParse(f *testing.F) {
	for _, dir := range []string{"valid", "invalid"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"fuzz.yaml", "fuzz.json", "fuzz"} {
			tax, err := Parse(name, data)
			if err != nil {
				if tax != nil {
					t.Fatalf("Parse(%s) returned a taxonomy and error %v", name, err)
				}
				continue
			}
			checkInvariants(t, tax)
		}
	})
}

func checkInvariants(t *testing.T, tax *taxonomy.Taxonomy) {
	t.Helper()
	if len(tax.Checksum()) != len("blake3:")+64 {
		t.Fatalf("Checksum() = %q", tax.Checksum())
	}
	roles := tax.Roles()
	envs := append(tax.EnvelopeTypes(), "no-such-type")
	cps := append(tax.CheckpointTypes(), "no-such-type")
	for _, r := range roles {
		if !tax.HasRole(r) {
			t.Fatalf("HasRole(%q) = false for a role in Roles()", r)
		}
		if b := tax.BaseOf(r); !taxonomy.IsBaseRole(b) {
			t.Fatalf("BaseOf(%q) = %q, want a base role", r, b)
		}
		for _, s := range taxonomy.SignalTypes() {
			if tax.CanEmit(r, s) && !tax.CanEmit(tax.BaseOf(r), s) {
				t.Fatalf("CanEmit(%q, %s) exceeds its base role", r, s)
			}
		}
		for _, c := range cps {
			if tax.CanCreateCheckpoint(r, c) && !tax.HasCheckpointType(c) {
				t.Fatalf("CanCreateCheckpoint(%q, %q) for an unregistered type", r, c)
			}
			tax.RequiredFields(c)
		}
		for _, e := range envs {
			for _, to := range roles {
				if tax.CanSend(r, e, to) && !tax.HasEnvelopeType(e) {
					t.Fatalf("CanSend(%q, %q, %q) for an unregistered type", r, e, to)
				}
				if r != taxonomy.RoleCoordinator && (e == taxonomy.EnvelopeDirective || e == taxonomy.EnvelopeFeedback) && tax.CanSend(r, e, to) {
					t.Fatalf("CanSend(%q, %q, %q): only the coordinator sends %s", r, e, to, e)
				}
			}
		}
		tax.ReadScopes(r)
	}
	for _, c := range cps {
		if tax.CanCreateCheckpoint(taxonomy.RoleCoordinator, c) {
			t.Fatalf("the coordinator can create %q", c)
		}
	}
	for _, b := range taxonomy.BaseRoles() {
		if !tax.HasRole(b) {
			t.Fatalf("HasRole(%q) = false", b)
		}
	}
	if tax.HasRole("") || tax.BaseOf("") != "" || tax.CanSend("", "", "") {
		t.Fatalf("the empty name is a role")
	}
}

package auditor_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wacpd/wacpd/auditor"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/v1/bundle.jsonl and the fuzz seeds from a fresh engine")

const goldenBundle = "testdata/v1/bundle.jsonl"

// TestGoldenBundle freezes the bundle format: a bundle written by this
// version must verify, and read and written again, be the same bytes.
// With -update it is regenerated from a real engine, with the fuzz seeds.
func TestGoldenBundle(t *testing.T) {
	if *updateGolden {
		e := openEngine(t, "")
		smallTrail(t, e)
		b := makeBundle(t, e)
		writeFile(t, goldenBundle, b.data)
		writeSeeds(t, b)
	}
	data, err := os.ReadFile(goldenBundle)
	if err != nil {
		t.Fatal(err)
	}
	rep := verify(t, data)
	if !rep.OK || rep.Entries == 0 || uint64(rep.Entries) != rep.Size || rep.Objects != 2 || rep.Workspaces != 2 {
		t.Errorf("Verify(%s) = %+v, want ok with every signed entry, 2 objects, 2 workspaces", goldenBundle, rep)
	}
	if got := rewrite(t, data); !bytes.Equal(got, data) {
		t.Errorf("%s read and written again differs", goldenBundle)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSeeds writes the seed corpus of FuzzVerifyBundle: the bundle and a
// few broken variants of it.
func writeSeeds(t *testing.T, b bundle) {
	ls := lines(b.data)
	n := len(b.entries)
	tampered := bytes.Clone(b.data)
	tampered[len(ls[0])+len(ls[1])+40] ^= 0x01
	seeds := map[string][]byte{
		"bundle":         b.data,
		"header-only":    ls[0],
		"no-objects":     join(ls[:1+n]),
		"tampered-byte":  tampered,
		"swapped":        join(append([][]byte{ls[0], ls[2], ls[1]}, ls[3:]...)),
		"no-final-nl":    b.data[:len(b.data)-1],
		"empty":          nil,
		"not-json":       []byte("{\n"),
		"object-first":   join(append([][]byte{ls[0]}, ls[1+n:]...)),
		"entry-no-entry": []byte(`{"format":"wacp-trail-bundle/1"}` + "\n" + `{"entry":{}}` + "\n"),
	}
	for name, data := range seeds {
		writeFile(t, filepath.Join("testdata/fuzz/FuzzVerifyBundle", name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)))
	}
}

// FuzzVerifyBundle: Verify never panics and never fails to report on
// in-memory input; a failure always names where; a bundle that verifies is
// canonical (reading and writing it again gives the same bytes).
func FuzzVerifyBundle(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := auditor.Verify(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Verify(in memory) = %v, want a report", err)
		}
		if rep.OK != (rep.Violation == "") || (!rep.OK && rep.FirstBad == "") {
			t.Fatalf("Verify = %+v: OK, Violation and FirstBad disagree", rep)
		}
		if rep.OK {
			if got := rewrite(t, data); !bytes.Equal(got, data) {
				t.Fatalf("a bundle that verifies is not what writing its records gives")
			}
		}
	})
}

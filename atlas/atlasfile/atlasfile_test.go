package atlasfile_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/atlas/atlasfile"
)

const sample = "../testdata/acme.json"

// split writes the sample as a package: atlas.json without its last action
// and last context block, which go to actions/ and context/.
func split(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(rel string, v any) {
		t.Helper()
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	actions, contexts := m["actions"].([]any), m["context_blocks"].([]any)
	m["actions"], m["context_blocks"] = actions[:len(actions)-1], contexts[:len(contexts)-1]
	write("atlas.json", m)
	write("actions/refund.json", actions[len(actions)-1])
	write("context/refunds.json", contexts[len(contexts)-1])
	return dir
}

// TestLoadPackageEqualsFile: a package directory and the one file it was
// split from load to the same manifest and checksum.
func TestLoadPackageEqualsFile(t *testing.T) {
	file, err := atlasfile.Load(sample)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := atlasfile.Load(split(t))
	if err != nil {
		t.Fatal(err)
	}
	if file.Checksum != pkg.Checksum || len(file.Checksum) != len("sha256:")+64 {
		t.Fatalf("checksums: file %s, package %s", file.Checksum, pkg.Checksum)
	}
}

func TestLoadMarkdownContext(t *testing.T) {
	dir := split(t)
	body := "# Escalations\n\nCall the on-call person; never guess.\n"
	if err := os.WriteFile(filepath.Join(dir, "context", "escalations.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := atlasfile.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var c atlas.ContextBlock
	for _, b := range l.Manifest.ContextBlocks {
		if b.ContextID == "escalations" {
			c = b
		}
	}
	if c.ContextID != "escalations" || c.Content != body || c.ContentType != "markdown" || c.InjectMode != atlas.InjectOnDemand {
		t.Fatalf("markdown block = %+v", c)
	}
}

// TestLoadRefuses: errors name the file (an entry's own, or the package
// for a rule across files).
func TestLoadRefuses(t *testing.T) {
	for _, tt := range []struct {
		name, rel, content string
		file               func(dir string) string
		rule               string
	}{
		{"bad json entry", "policies/p.json", `{"policy_id":"x","type":"allow","actionz":[]}`,
			func(dir string) string { return filepath.Join(dir, "policies/p.json") }, atlas.RuleStructure},
		{"unknown extension", "actions/a.yaml", "action_id: x",
			func(dir string) string { return filepath.Join(dir, "actions/a.yaml") }, atlas.RuleStructure},
		{"reference across files", "policies/p.json", `{"policy_id":"x","type":"allow","capabilities":["nobody"]}`,
			func(dir string) string { return dir }, atlas.RuleReference},
		{"duplicate across files", "actions/dup.json", `{"action_id":"ticket.get"}`,
			func(dir string) string { return dir }, atlas.RuleDuplicate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := split(t)
			p := filepath.Join(dir, tt.rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := atlasfile.Load(dir)
			var ve *atlas.ValidationError
			if !errors.As(err, &ve) || ve.File != tt.file(dir) || ve.Rule != tt.rule {
				t.Fatalf("Load = %v, want rule %s in %s", err, tt.rule, tt.file(dir))
			}
		})
	}
	if _, err := atlasfile.Load(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of nothing = %v", err)
	}
}

package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFile: the content and mode land, a second write replaces the
// first, and no temporary file is left beside it.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	for _, content := range []string{"first\n", "second\n"} {
		if err := WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Fatalf("read %q, %v; want %q", b, err, content)
		}
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("dir holds %v, %v; want the file alone", ents, err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such"), nil, 0o600); err == nil {
		t.Fatal("WriteFile into a missing directory succeeded")
	}
}

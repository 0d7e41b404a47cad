package dbupkeep

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMemTableSizeKeepsALargerLog: a data dir without memtable logs, or
// with logs of the current size, opens with 32 MiB memtables; one holding a
// log written with 64 MiB memtables (Badger's default, which earlier builds
// used) opens with 64 MiB, so that the log can be replayed.
func TestMemTableSizeKeepsALargerLog(t *testing.T) {
	dir := t.TempDir()
	if got := MemTableSizeFor(dir); got != MemTableSize {
		t.Fatalf("empty dir: %d, want %d", got, MemTableSize)
	}
	mk := func(name string, size int64) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	mk("00001.mem", 2*MemTableSize)
	if got := MemTableSizeFor(dir); got != MemTableSize {
		t.Fatalf("a log of the current size: %d, want %d", got, MemTableSize)
	}
	mk("00002.mem", 2*64<<20)
	if got := MemTableSizeFor(dir); got != 64<<20 {
		t.Fatalf("a log written with 64 MiB memtables: %d, want 64 MiB", got)
	}
}

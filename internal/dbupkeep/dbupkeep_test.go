package dbupkeep

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
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

// TestRemoveEmptyValueLogs: a database whose newest value log file is
// empty (a process killed while Badger created it) does not open (Badger
// gives the file a header while it fails, so a second open would work);
// once the empty file is removed it opens at once, with its data.
func TestRemoveEmptyValueLogs(t *testing.T) {
	killed := func() (dir, empty string) {
		dir = t.TempDir()
		db, err := badger.Open(Options(dir))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
		empty = filepath.Join(dir, fmt.Sprintf("%06d.vlog", len(vlogs)+10))
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return dir, empty
	}
	dir, _ := killed()
	if db, err := badger.Open(Options(dir)); err == nil {
		db.Close()
		t.Fatal("badger opened a database with an empty value log; the fix is not needed")
	}
	dir, empty := killed()
	removed, err := RemoveEmptyValueLogs(dir)
	if err != nil || len(removed) != 1 || removed[0] != filepath.Base(empty) {
		t.Fatalf("removed %v, %v", removed, err)
	}
	db, err := badger.Open(Options(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(txn *badger.Txn) error { _, err := txn.Get([]byte("k")); return err }); err != nil {
		t.Fatal(err)
	}
}

// TestRemoveEmptyValueLogsLeavesAHeldDatabase: while a database is open
// (another process's, as far as the lock says), an empty value log may be
// one it is creating: nothing is removed.
func TestRemoveEmptyValueLogsLeavesAHeldDatabase(t *testing.T) {
	dir := t.TempDir()
	db, err := badger.Open(Options(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	empty := filepath.Join(dir, "000099.vlog")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveEmptyValueLogs(dir)
	if err != nil || len(removed) != 0 {
		t.Fatalf("removed %v, %v; want nothing while the database is held", removed, err)
	}
	if _, err := os.Stat(empty); err != nil {
		t.Fatalf("the empty file is gone: %v", err)
	}
}

package integrity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
)

// TestTablesWhileCompacting checks every table of a live database while
// its compactions replace tables, as audit.trail.verify does on a running
// daemon. Badger truncates a table file it deletes; a check that mapped
// the file died of SIGBUS when that happened under it (the crash loop's
// online verify did). Every check must finish, and find nothing, since
// nothing is damaged.
func TestTablesWhileCompacting(t *testing.T) {
	opts := badger.DefaultOptions(t.TempDir()).WithLogger(nil).
		WithMemTableSize(64 << 10).WithBaseTableSize(32 << 10).WithBaseLevelSize(128 << 10).
		WithNumLevelZeroTables(2).WithNumLevelZeroTablesStall(4).WithNumCompactors(2).
		WithValueThreshold(1 << 10)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func(round int) {
		wb := db.NewWriteBatch()
		for i := range 2000 {
			// Overwrite the same keys each round, so compactions drop
			// tables rather than only add them.
			if err := wb.Set(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "value %d of round %d, padded to make tables fill up quickly", i, round)); err != nil {
				t.Fatal(err)
			}
		}
		if err := wb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	write(0)

	const rounds = 40
	var wg sync.WaitGroup
	checks := make(chan string, rounds*4)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if where, detail, _ := VerifyTables(context.Background(), db); detail != "" {
				checks <- where + ": " + detail
				return
			}
		}
	}()
	for round := 1; round <= rounds; round++ {
		write(round)
		if err := db.Flatten(1); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(checks)
	for c := range checks {
		t.Errorf("a check of an undamaged live database failed: %s", c)
	}
}

// TestCheckTableFilesAfterCrash: a process killed while Badger flushes a
// memtable leaves a table file the MANIFEST does not list, often empty
// (the crash loop found one). Badger deletes such a file on open, so the
// check before open must not call the database damaged for it; a table
// the MANIFEST lists that is damaged the same way must still be found.
func TestCheckTableFilesAfterCrash(t *testing.T) {
	dir := t.TempDir()
	opts := badger.DefaultOptions(dir).WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Flatten(1); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // flushes the memtable: one listed table
		t.Fatal(err)
	}
	listed, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(listed) == 0 {
		t.Fatal("closing the database wrote no table")
	}
	orphan := table.NewFilename(999, dir)
	if err := os.WriteFile(orphan, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if where, detail := CheckTableFiles(dir, opts, true); detail != "" {
		t.Fatalf("an unlisted empty table was called damage: %s: %s", where, detail)
	}
	db, err = badger.Open(opts)
	if err != nil {
		t.Fatalf("badger does not open the database with the orphan: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("badger left the orphan table: %v", err)
	}

	if err := os.Truncate(listed[0], 0); err != nil {
		t.Fatal(err)
	}
	where, detail := CheckTableFiles(dir, opts, true)
	if where != filepath.Base(listed[0]) {
		t.Fatalf("an empty listed table was not found: %q %q", where, detail)
	}

	if err := os.WriteFile(filepath.Join(dir, badger.ManifestFilename), []byte("not a manifest"), 0o600); err != nil {
		t.Fatal(err)
	}
	if where, detail := CheckTableFiles(dir, opts, true); where != badger.ManifestFilename {
		t.Fatalf("a damaged MANIFEST was not reported: %q %q", where, detail)
	}
}

// TestCheckTableFilesMapsOnlyAClosedDatabase: the check before open reads
// the tables through a mapping only while it holds the directory's lock
// shared, which an open database (Badger locks it exclusively) refuses;
// then it reads copies, and finds the same.
func TestCheckTableFilesMapsOnlyAClosedDatabase(t *testing.T) {
	dir := t.TempDir()
	opts := badger.DefaultOptions(dir).WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	wb := db.NewWriteBatch()
	for i := range 1000 {
		if err := wb.Set(fmt.Appendf(nil, "k%04d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Flatten(1); err != nil {
		t.Fatal(err)
	}
	if _, ok := lockDir(dir); ok {
		t.Fatal("lockDir of an open database's directory succeeded")
	}
	if where, detail := CheckTableFiles(dir, opts, false); detail != "" {
		t.Fatalf("CheckTableFiles of an open database = %s: %s", where, detail)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	unlock, ok := lockDir(dir)
	if !ok {
		t.Fatal("lockDir of a closed database's directory failed")
	}
	unlock()
	if where, detail := CheckTableFiles(dir, opts, false); detail != "" {
		t.Fatalf("CheckTableFiles of a closed database = %s: %s", where, detail)
	}
	// The lock is released: Badger opens the database again.
	db, err = badger.Open(opts)
	if err != nil {
		t.Fatalf("badger.Open after the check: %v", err)
	}
	db.Close()
}

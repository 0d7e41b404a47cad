package integrity

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// valueLogOptions opens a database as the engine does (each value's
// checksum checked as it is read), with values of 1 KiB or more in the
// value log (of small files: a test reads them whole).
func valueLogOptions(dir string) badger.Options {
	return badger.DefaultOptions(dir).WithLogger(nil).WithValueThreshold(1 << 10).WithValueLogFileSize(1 << 20).
		WithChecksumVerificationMode(options.OnBlockRead).WithVerifyValueChecksum(true)
}

// bigValue is key's value of 4 KiB, in the value log.
func bigValue(key string) []byte {
	return bytes.Repeat([]byte("value of "+key+";"), 4<<10/(len(key)+10))
}

// writeValueLog writes small values and big ones (b0 to b4) into db, then
// overwrites b1 with a small value and deletes b3: their big values stay
// in the value log, which no key's latest version points to.
func writeValueLog(t *testing.T, db *badger.DB) {
	t.Helper()
	wb := db.NewWriteBatch()
	for i := range 100 {
		if err := wb.Set(fmt.Appendf(nil, "s%03d", i), []byte("small")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		k := fmt.Sprintf("b%d", i)
		if err := wb.Set([]byte(k), bigValue(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badger.Txn) error {
		if err := txn.Set([]byte("b1"), []byte("small now")); err != nil {
			return err
		}
		return txn.Delete([]byte("b3"))
	}); err != nil {
		t.Fatal(err)
	}
}

// damageValue flips a byte in the middle of key's big value in the value
// log files of dir.
func damageValue(t *testing.T, dir, key string) {
	t.Helper()
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	for _, name := range vlogs {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, bigValue(key)); i >= 0 {
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{b[i+2<<10] ^ 0x40}, int64(i+2<<10)); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no value of %s in %v", key, vlogs)
}

// TestStorageReadsValueLog: the storage step reads back the value-log
// value of every key whose latest version has one, and reports a damaged
// one with its key; values no key's latest version points to (b1
// overwritten, b3 deleted) are not read, damaged or not. It finds them
// from the table entries that point to the value log when the database
// is opened read-only without memtables, through Badger's merged iterator
// otherwise (also while the values are in a memtable).
func TestStorageReadsValueLog(t *testing.T) {
	tests := []struct {
		name       string
		readOnly   bool
		memtable   bool // the values are still in a memtable, not in tables
		tablesOnly bool // storage finds the values from the tables
	}{
		{name: "read-only", readOnly: true, tablesOnly: true},
		{name: "read-write", readOnly: false},
		{name: "memtable", memtable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := badger.Open(valueLogOptions(dir))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			writeValueLog(t, db)
			reopen := func() {
				t.Helper()
				if tt.memtable {
					return
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if db, err = badger.Open(valueLogOptions(dir).WithReadOnly(tt.readOnly)); err != nil {
					t.Fatal(err)
				}
			}
			reopen()
			if got := tablesOnly(db); got != tt.tablesOnly {
				t.Fatalf("tablesOnly = %v, want %v", got, tt.tablesOnly)
			}
			if where, detail := storage(context.Background(), db, nil, nil); detail != "" {
				t.Fatalf("storage of an undamaged database = %s: %s", where, detail)
			}

			damageValue(t, dir, "b1")
			damageValue(t, dir, "b3")
			reopen()
			if where, detail := storage(context.Background(), db, nil, nil); detail != "" {
				t.Fatalf("storage read a value no key points to: %s: %s", where, detail)
			}

			damageValue(t, dir, "b2")
			damageValue(t, dir, "b4")
			reopen()
			where, detail := storage(context.Background(), db, nil, nil)
			if want := fmt.Sprintf("key %q", "b2"); where != want || detail == "" {
				t.Fatalf("storage with b2's and b4's values damaged = %q (%s), want %s", where, detail, want)
			}
		})
	}
}

// reopenedWithTables returns a database of writeValueLog's values, closed
// (b0 to b4 go to tables) and opened again, and its directory; the test's
// cleanup closes it.
func reopenedWithTables(t *testing.T) (string, *badger.DB) {
	t.Helper()
	dir := t.TempDir()
	db, err := badger.Open(valueLogOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	writeValueLog(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = badger.Open(valueLogOptions(dir)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return dir, db
}

// TestStorageReadsNewerThanTheTables: in a running daemon's database the
// storage step reads the value-log values that the tables point to (found
// as it reads them) and those of every newer entry (a memtable's), through
// the merged iterator for versions above the tables' largest only; a
// damaged value of either kind is reported with its key.
func TestStorageReadsNewerThanTheTables(t *testing.T) {
	for _, damaged := range []string{"b2", "c1"} {
		t.Run(damaged, func(t *testing.T) {
			dir, db := reopenedWithTables(t)
			if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("c1"), bigValue("c1")) }); err != nil {
				t.Fatal(err)
			}
			var ptrs pointers
			if _, detail, err := verifyTables(context.Background(), db, &ptrs); detail != "" || err != nil || ptrs.partial ||
				!slices.ContainsFunc(ptrs.keys, func(k []byte) bool { return string(k) == "b2" }) ||
				slices.ContainsFunc(ptrs.keys, func(k []byte) bool { return string(k) == "c1" }) {
				t.Fatalf("the tables' pointers = %q (partial %v), %s, %v; want b2's among them and not c1's (in a memtable)", ptrs.keys, ptrs.partial, detail, err)
			}
			if where, detail := storage(context.Background(), db, nil, nil); detail != "" {
				t.Fatalf("storage of an undamaged database = %s: %s", where, detail)
			}
			damageValue(t, dir, damaged)
			where, detail := storage(context.Background(), db, nil, nil)
			if want := fmt.Sprintf("key %q", damaged); where != want || detail == "" {
				t.Fatalf("storage with %s's value damaged = %q (%s), want %s", damaged, where, detail, want)
			}
		})
	}
}

// copyOpenDir copies the files of the database open in from (but its
// lock) into a new directory: what a crash would leave, its memtable
// still in its write-ahead log.
func copyOpenDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	files, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.IsDir() || f.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, f.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// TestStorageSkipsWhatTheProcessWroteInline: with what NoteOpen noted, the
// storage step skips the versions newer than the tables when the process
// wrote none of its values to the value log since it opened the database
// and every memtable replayed at the open has been flushed; a value the
// process did write there after the open (c1) is still read and its damage
// found.
func TestStorageSkipsWhatTheProcessWroteInline(t *testing.T) {
	dir, db := reopenedWithTables(t)
	opened := NoteOpen(db)
	if opened == nil {
		t.Fatal("NoteOpen = nil: Badger keeps no counter of value-log writes")
	}
	tablesMax := func(db *badger.DB) uint64 {
		var m uint64
		for _, ti := range db.Tables() {
			m = max(m, ti.MaxVersion)
		}
		return m
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("s1"), []byte("small, inline")) }); err != nil {
		t.Fatal(err)
	}
	if !opened.covers(db, tablesMax(db)) {
		t.Fatal("covers = false after inline writes only: the step would read the memtables for nothing")
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("c1"), bigValue("c1")) }); err != nil {
		t.Fatal(err)
	}
	if opened.covers(db, tablesMax(db)) {
		t.Fatal("covers = true after a value went to the value log")
	}
	damageValue(t, dir, "c1")
	where, detail := storage(context.Background(), db, nil, opened)
	if want := fmt.Sprintf("key %q", "c1"); where != want || detail == "" {
		t.Fatalf("storage with c1's value damaged = %q (%s), want %s", where, detail, want)
	}

	// Versions from before the open that no table holds yet (a memtable
	// replayed at the open, not flushed yet) are read.
	now, _ := vlogWritten(db)
	if pending := (&Opened{version: tablesMax(db) + 1, vlog: now}); pending.covers(db, tablesMax(db)) {
		t.Fatal("covers = true while a version from before the open is in no table")
	}
}

// TestStorageAfterACrash: a value in the value log that a memtable
// replayed at the open points to (r1, written before a crash) is read and
// its damage found, with what NoteOpen noted.
func TestStorageAfterACrash(t *testing.T) {
	dir := t.TempDir()
	db, err := badger.Open(valueLogOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("r1"), bigValue("r1")) }); err != nil {
		t.Fatal(err)
	}
	crashed := copyOpenDir(t, dir)
	damageValue(t, crashed, "r1")
	db2, err := badger.Open(valueLogOptions(crashed))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	where, detail := storage(context.Background(), db2, nil, NoteOpen(db2))
	if want := fmt.Sprintf("key %q", "r1"); where != want || detail == "" {
		t.Fatalf("storage with r1's value (a replayed memtable's) damaged = %q (%s), want %s", where, detail, want)
	}
}

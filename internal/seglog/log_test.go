package seglog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// rig is a Badger database on disk with its segments.
type rig struct {
	t      testing.TB
	dir    string
	db     *badger.DB
	l      *Log
	rec    Recovered
	redone Replayed
	last   *Block // the block write wrote last
}

func openRig(t testing.TB, dir string, opts Options) *rig {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(true))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, db: db}
	end, err := End(db)
	if err != nil {
		t.Fatal(err)
	}
	if r.l, r.rec, err = Open(filepath.Join(dir, Dir), end, opts); err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	if !opts.ReadOnly {
		if r.redone, err = r.l.Replay(db); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r *rig) close() {
	if r.l != nil {
		r.l.Close()
		r.l = nil
	}
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
}

// commit sets each key to its value through the segments in one batch,
// writes the block and commits.
func (r *rig) commit(kv map[string]string) {
	r.t.Helper()
	txn := r.write(kv)
	defer txn.Discard()
	if err := txn.Commit(); err != nil {
		r.t.Fatal(err)
	}
}

// write sets each key to its value through the segments in one batch and
// writes the block, and returns the batch's transaction, not committed.
func (r *rig) write(kv map[string]string) *badger.Txn {
	r.t.Helper()
	txn := r.db.NewTransaction(true)
	for k, v := range kv {
		if err := r.l.Txn(txn).SetValue([]byte(k), []byte(v)); err != nil {
			r.t.Fatal(err)
		}
	}
	r.seal(txn)
	return txn
}

// seal seals the block of txn's batch and writes it (r.last), and does not
// commit txn.
func (r *rig) seal(txn *badger.Txn) {
	r.t.Helper()
	b, err := r.l.Seal(txn)
	if err != nil {
		r.t.Fatal(err)
	}
	r.last = b
	if b != nil {
		if err := r.l.Write(b); err != nil {
			r.t.Fatal(err)
		}
	}
}

// end returns the segments' end as the database records it.
func (r *rig) end() Pos {
	r.t.Helper()
	end, err := End(r.db)
	if err != nil {
		r.t.Fatal(err)
	}
	return end
}

// get reads key through the segments.
func (r *rig) get(key string) (string, error) {
	var out []byte
	err := r.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(key))
		if err != nil {
			return err
		}
		out, err = r.l.ValueCopy(item)
		return err
	})
	return string(out), err
}

func values(batch, n int) map[string]string {
	kv := map[string]string{}
	rnd := rand.NewChaCha8([32]byte{byte(batch)})
	for i := range n {
		pad := make([]byte, 60+i)
		rnd.Read(pad)
		kv[fmt.Sprintf("v/%d/%d", batch, i)] = fmt.Sprintf(`{"batch":%d,"i":%d,"pad":"%x"}`, batch, i, pad)
	}
	return kv
}

// TestValuesSurviveReopen: values set through the segments read back the
// same, from the cache and, after a reopen, from the files; Badger holds
// only pointers for them.
func TestValuesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	var all []map[string]string
	for b := range 5 {
		kv := values(b, 20)
		r.commit(kv)
		all = append(all, kv)
	}
	check := func() {
		t.Helper()
		for _, kv := range all {
			for k, want := range kv {
				got, err := r.get(k)
				if err != nil || got != want {
					t.Fatalf("%s: %q, %v; want %q", k, got, err, want)
				}
			}
		}
	}
	check()
	err := r.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte("v/0/0"))
		if err != nil {
			return err
		}
		if item.UserMeta() != Meta || item.ValueSize() != PtrSize {
			t.Errorf("badger holds meta %d, %d bytes; want a pointer", item.UserMeta(), item.ValueSize())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	end := r.end()
	r.close()
	// Close cuts the zeros written ahead of the blocks.
	if got := dirSize(t, filepath.Join(dir, Dir)); end.File != 1 || got != int64(end.Off) {
		t.Errorf("after Close the segments hold %d bytes; the blocks end at %+v", got, end)
	}
	r = openRig(t, dir, Options{})
	if r.rec != (Recovered{}) {
		t.Errorf("a clean reopen removed %+v", r.rec)
	}
	check()
}

// TestReadsThroughTheOpenTransaction: a value set in the batch being
// built reads back through its transaction, before the block is sealed
// and between sealing and writing it.
func TestReadsThroughTheOpenTransaction(t *testing.T) {
	r := openRig(t, t.TempDir(), Options{})
	r.commit(values(0, 3))
	txn := r.db.NewTransaction(true)
	defer txn.Discard()
	read := func(k string) string {
		t.Helper()
		item, err := txn.Get([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		v, err := r.l.ValueCopy(item)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	if err := r.l.Txn(txn).SetValue([]byte("x"), []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := r.l.Txn(txn).SetValue([]byte("y"), []byte("second")); err != nil {
		t.Fatal(err)
	}
	if read("x") != "first" || read("y") != "second" {
		t.Fatalf("pending block: %q %q", read("x"), read("y"))
	}
	b, err := r.l.Seal(txn)
	if err != nil {
		t.Fatal(err)
	}
	if read("y") != "second" {
		t.Fatal("sealed block not read")
	}
	if err := r.l.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestPendingReadsOutliveTheBuffer: a value read from the block being
// built keeps its bytes when the next block is built in the buffer the
// first was built in (Seal keeps a copy of the values and hands the buffer
// on), and the sealed block reads back whole.
func TestPendingReadsOutliveTheBuffer(t *testing.T) {
	r := openRig(t, t.TempDir(), Options{})
	txn := r.db.NewTransaction(true)
	defer txn.Discard()
	wt := r.l.Txn(txn)
	first := []byte(strings.Repeat("first value ", 40))
	ptr, ok := wt.Add(first)
	if !ok {
		t.Fatal("no segment files")
	}
	p, err := DecodePtr(ptr)
	if err != nil {
		t.Fatal(err)
	}
	read, err := r.l.Get(p)
	if err != nil || !bytes.Equal(read, first) {
		t.Fatalf("the pending block gives %q, %v", read, err)
	}
	built := &r.l.pend[0]
	b, err := r.l.Seal(txn)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.l.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	next := r.db.NewTransaction(true)
	defer next.Discard()
	if _, ok := r.l.Txn(next).Add([]byte(strings.Repeat("X", len(first)))); !ok {
		t.Fatal("no segment files")
	}
	if &r.l.pend[0] != built {
		t.Fatal("the next block is not built in the first one's buffer")
	}
	if !bytes.Equal(read, first) {
		t.Fatalf("a value read from the pending block became %q", read)
	}
	if again, err := r.l.Get(p); err != nil || !bytes.Equal(again, first) {
		t.Fatalf("the sealed block gives %q, %v", again, err)
	}
}

// TestOpenRedoesWholeBlocksPastTheEnd: blocks written and synced whose
// transactions Badger does not hold (it lost them in a crash: it writes
// without syncing) are redone at the next open, in order, across files;
// what a crash tore at the end (a torn block, the zeros written ahead) is
// cut off, and the next block takes its place.
func TestOpenRedoesWholeBlocksPastTheEnd(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{MaxFile: 4096})
	r.commit(values(0, 10))
	segs := filepath.Join(dir, Dir)
	before := r.end()
	// Two batches written but not in Badger (the second in a new file),
	// then a third torn by the crash: half its block reached the disk.
	lost := []map[string]string{values(10, 40), values(11, 40)}
	for _, kv := range lost {
		txn := r.write(kv)
		if err := txn.Delete([]byte("v/0/0")); err != nil { // not recorded: Badger's own
			t.Fatal(err)
		}
		txn.Discard()
	}
	redoneEnd := r.last.end()
	torn := r.write(values(12, 40))
	torn.Discard()
	tornAt, tornLen := r.last.at, len(r.last.data)
	r.l = nil
	r.close()
	p := filepath.Join(segs, fileName(tornAt.File))
	if err := os.Truncate(p, int64(tornAt.Off)+int64(tornLen)/2); err != nil {
		t.Fatal(err)
	}

	r = openRig(t, dir, Options{MaxFile: 4096})
	if r.rec.Replay != 2 || r.redone.Blocks != 2 || r.redone.Writes != 80 {
		t.Errorf("recovered %+v, redone %+v; want 2 blocks of 40 writes redone", r.rec, r.redone)
	}
	if got := r.end(); got != redoneEnd || got.File == before.File {
		t.Errorf("end %+v after the redo; want %+v, in the next file", got, redoneEnd)
	}
	if st, err := os.Stat(filepath.Join(segs, fileName(redoneEnd.File))); err != nil || st.Size() != int64(redoneEnd.Off) {
		t.Errorf("the last file after the redo: %v, %v; want %d bytes", st.Size(), err, redoneEnd.Off)
	}
	if st, err := os.Stat(p); tornAt.File > redoneEnd.File && err == nil || tornAt.File == redoneEnd.File && st.Size() != int64(tornAt.Off) {
		t.Errorf("the torn block's file %s is left: %v", p, err)
	}
	for _, kv := range append(lost, values(0, 10)) {
		for k, want := range kv {
			if got, err := r.get(k); err != nil || got != want {
				t.Fatalf("%s: %q, %v; want %q", k, got, err, want)
			}
		}
	}
	if _, err := r.get("v/12/0"); !errors.Is(err, badger.ErrKeyNotFound) {
		t.Fatalf("a key of the torn block: %v", err)
	}
	kv := values(20, 5)
	r.commit(kv)
	r.close()
	r = openRig(t, dir, Options{MaxFile: 4096})
	if r.rec != (Recovered{}) {
		t.Errorf("a clean reopen recovered %+v", r.rec)
	}
	for k, want := range kv {
		if got, err := r.get(k); err != nil || got != want {
			t.Fatalf("%s: %q, %v", k, got, err)
		}
	}
}

// TestAbortCutsWhatFailed: after a failed batch the next block goes where
// the last durable one ends.
func TestAbortCutsWhatFailed(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	r.commit(values(0, 5))
	segs := filepath.Join(dir, Dir)
	before := int64(r.end().Off)
	txn := r.write(values(1, 5))
	// The block was written but, as far as the engine knows, its batch
	// failed before anything was durable: say, the write itself failed.
	r.l.mu.Lock()
	r.l.durable = Pos{File: 1, Off: uint64(before)}
	r.l.mu.Unlock()
	txn.Discard()
	if err := r.l.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := dirSize(t, segs); got != before {
		t.Fatalf("after Abort %d bytes; want %d", got, before)
	}
	kv := values(2, 5)
	r.commit(kv)
	r.close()
	r = openRig(t, dir, Options{})
	for k, want := range kv {
		if got, err := r.get(k); err != nil || got != want {
			t.Fatalf("%s: %q, %v", k, got, err)
		}
	}
}

// TestDamageIsAnError: a flipped byte in a block is a *DamageError on
// read and in Verify; a segment cut short, or missing, is refused at open.
func TestDamageIsAnError(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{MaxFile: 2048})
	for b := range 4 {
		r.commit(values(b, 10))
	}
	end := r.end()
	st, err := r.l.Verify(context.Background(), end)
	if err != nil || st.Blocks != 4 || st.Files < 2 {
		t.Fatalf("verify: %+v, %v", st, err)
	}
	r.close()
	seg1 := filepath.Join(dir, Dir, fileName(1))
	data, err := os.ReadFile(seg1)
	if err != nil {
		t.Fatal(err)
	}
	data[headerSize+10] ^= 0x40
	if err := os.WriteFile(seg1, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r = openRig(t, dir, Options{MaxFile: 2048})
	var de *DamageError
	if _, err := r.get("v/0/3"); !errors.As(err, &de) || de.Off != 0 {
		t.Fatalf("read of a damaged block: %v", err)
	}
	if _, err := r.l.Verify(context.Background(), end); !errors.As(err, &de) {
		t.Fatalf("verify of a damaged block: %v", err)
	}
	r.close()

	// Cut short: the last file loses its last byte.
	last := filepath.Join(dir, Dir, fileName(end.File))
	if err := os.Truncate(last, int64(end.Off)-1); err != nil {
		t.Fatal(err)
	}
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, _, err := Open(filepath.Join(dir, Dir), end, Options{}); !errors.As(err, &de) {
		t.Fatalf("open of a short segment: %v", err)
	}
	if err := os.Remove(seg1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(filepath.Join(dir, Dir), end, Options{}); !errors.As(err, &de) {
		t.Fatalf("open without file 1: %v", err)
	}
}

// TestReadOnlyLeavesTheTail: a read-only open reads and removes nothing.
func TestReadOnlyLeavesTheTail(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	kv := values(0, 5)
	r.commit(kv)
	end := r.end()
	r.close()
	seg1 := filepath.Join(dir, Dir, fileName(1))
	f, err := os.OpenFile(seg1, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("torn tail"))
	f.Close()
	l, rec, err := Open(filepath.Join(dir, Dir), end, Options{ReadOnly: true})
	if err != nil || rec != (Recovered{}) {
		t.Fatalf("read-only open: %+v, %v", rec, err)
	}
	defer l.Close()
	if st, _ := os.Stat(seg1); uint64(st.Size()) != end.Off+9 {
		t.Fatalf("read-only open changed the file: %d bytes", st.Size())
	}
	if _, err := l.Verify(context.Background(), end); err != nil {
		t.Fatalf("verify up to the end: %v", err)
	}
}

// TestNilLogKeepsValuesInBadger: without segments (a database in memory)
// values are Badger's own; a pointer then cannot be read.
func TestNilLogKeepsValuesInBadger(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var l *Log
	err = db.Update(func(txn *badger.Txn) error {
		if err := l.Txn(txn).SetValue([]byte("a"), []byte("inline")); err != nil {
			return err
		}
		if b, err := l.Seal(txn); b != nil || err != nil {
			t.Errorf("seal of a nil log: %v, %v", b, err)
		}
		ptr := Ptr{File: 1, Len: 3}.Append(nil)
		return txn.SetEntry(badger.NewEntry([]byte("p"), ptr).WithMeta(Meta))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(txn *badger.Txn) error {
		item, _ := txn.Get([]byte("a"))
		if v, err := l.ValueCopy(item); err != nil || string(v) != "inline" {
			t.Errorf("inline value: %q, %v", v, err)
		}
		item, _ = txn.Get([]byte("p"))
		if _, err := l.ValueCopy(item); !errors.Is(err, ErrNoLog) {
			t.Errorf("pointer without segments: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestExtraBesideThePointer: extra bytes kept beside a pointer read back
// without the segments; the value still reads through them.
func TestExtraBesideThePointer(t *testing.T) {
	r := openRig(t, t.TempDir(), Options{})
	txn := r.db.NewTransaction(true)
	if err := r.l.Txn(txn).SetValueExtra([]byte("k"), []byte("the value"), []byte("id-1")); err != nil {
		t.Fatal(err)
	}
	if err := r.l.Txn(txn).SetValue([]byte("plain"), []byte("no extra")); err != nil {
		t.Fatal(err)
	}
	r.seal(txn)
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	r.l.Close()
	r.l = nil // no segments: Extra needs none
	err := r.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte("k"))
		if err != nil {
			return err
		}
		var got string
		ok, err := Extra(item, func(x []byte) error { got = string(x); return nil })
		if !ok || err != nil || got != "id-1" {
			t.Errorf("extra: %v, %v, %q", ok, err, got)
		}
		if _, err := r.l.ValueCopy(item); !errors.Is(err, ErrNoLog) {
			t.Errorf("value without segments: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.close()
	r = openRig(t, r.dir, Options{})
	if v, err := r.get("k"); err != nil || v != "the value" {
		t.Fatalf("value: %q, %v", v, err)
	}
}

// TestAWriteThatFailsIsCut: a write that fails (here its file handle is
// gone) leaves the Log usable once aborted: the next block goes where the
// last durable one ends, on a handle opened again.
func TestAWriteThatFailsIsCut(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	r.commit(values(0, 5))
	end := r.end()
	txn := r.db.NewTransaction(true)
	for k, v := range values(1, 5) {
		if err := r.l.Txn(txn).SetValue([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := r.l.Seal(txn)
	if err != nil {
		t.Fatal(err)
	}
	r.l.w.Close() // as if the disk had gone away under it
	if err := r.l.Write(b); err == nil {
		t.Fatal("a write on a closed handle succeeded")
	}
	txn.Discard()
	if err := r.l.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := dirSize(t, filepath.Join(dir, Dir)); got != int64(end.Off) {
		t.Fatalf("after Abort %d bytes; want %d", got, end.Off)
	}
	kv := values(2, 5)
	r.commit(kv)
	if next := r.end(); next.Off <= end.Off || next.File != end.File {
		t.Fatalf("the next block ends at %+v; want after %+v", next, end)
	}
	r.close()
	r = openRig(t, dir, Options{})
	for k, want := range kv {
		if got, err := r.get(k); err != nil || got != want {
			t.Fatalf("%s: %q, %v", k, got, err)
		}
	}
}

// TestLargeInlineValueRefused: a value Badger would keep in its value log
// (which it does not sync) is refused in a recorded transaction, and
// changes nothing; SetValue keeps it in the block.
func TestLargeInlineValueRefused(t *testing.T) {
	r := openRig(t, t.TempDir(), Options{})
	txn := r.db.NewTransaction(true)
	defer txn.Discard()
	big := make([]byte, MaxInline)
	wt := r.l.Txn(txn)
	if err := wt.Set([]byte("big"), big); !errors.Is(err, ErrInlineTooLarge) {
		t.Fatalf("Set of %d bytes: %v", len(big), err)
	}
	if _, err := txn.Get([]byte("big")); !errors.Is(err, badger.ErrKeyNotFound) {
		t.Fatalf("the refused value was set: %v", err)
	}
	if len(r.l.ops) != 0 {
		t.Fatalf("the refused value was recorded: %d bytes", len(r.l.ops))
	}
	if err := wt.SetValue([]byte("big"), big); err != nil {
		t.Fatal(err)
	}
	if err := wt.Set([]byte("small"), big[:MaxInline-1]); err != nil {
		t.Fatal(err)
	}
}

// TestRedoKeepsTheLastWriteOfEachKey: a key written several times in one
// batch is redone once, with its last write.
func TestRedoKeepsTheLastWriteOfEachKey(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	txn := r.db.NewTransaction(true)
	wt := r.l.Txn(txn)
	for _, w := range []struct{ k, v string }{{"k", "1"}, {"j", "a"}, {"k", "2"}, {"j", ""}, {"k", "3"}, {"i", "z"}} {
		var err error
		if w.v == "" {
			err = wt.Delete([]byte(w.k))
		} else {
			err = wt.Set([]byte(w.k), []byte(w.v))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r.seal(txn)
	txn.Discard() // Badger lost it
	r.close()
	r = openRig(t, dir, Options{})
	if r.redone.Blocks != 1 || r.redone.Writes != 3 {
		t.Fatalf("redone %+v; want one block of 3 writes", r.redone)
	}
	if v, err := r.get("k"); err != nil || v != "3" {
		t.Errorf("k = %q, %v; want 3", v, err)
	}
	if _, err := r.get("j"); !errors.Is(err, badger.ErrKeyNotFound) {
		t.Errorf("j: %v; want deleted", err)
	}
	if v, err := r.get("i"); err != nil || v != "z" {
		t.Errorf("i = %q, %v; want z", v, err)
	}
}

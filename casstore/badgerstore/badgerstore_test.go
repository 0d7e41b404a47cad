package badgerstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/casstore/badgerstore"
	"github.com/wacpd/wacpd/casstore/casstoretest"
	"github.com/wacpd/wacpd/internal/seglog"
)

func openDB(t testing.TB, opts badger.Options) *badger.DB {
	t.Helper()
	db, err := badger.Open(opts.WithLogger(nil))
	if err != nil {
		t.Fatalf("badger.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func memDB(t testing.TB) *badger.DB {
	return openDB(t, badger.DefaultOptions("").WithInMemory(true))
}

func rawKey(ref casstore.Ref) []byte {
	return append([]byte(badgerstore.KeyPrefix), ref.Bytes()...)
}

// version returns the Badger commit timestamp of ref's key.
func version(t *testing.T, db *badger.DB, ref casstore.Ref) uint64 {
	t.Helper()
	var v uint64
	err := db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(rawKey(ref))
		if err != nil {
			return err
		}
		v = item.Version()
		return nil
	})
	if err != nil {
		t.Fatalf("read version of %s: %v", ref, err)
	}
	return v
}

func TestBadgerConformance(t *testing.T) {
	t.Run("InMemory", func(t *testing.T) {
		casstoretest.Run(t, func(t *testing.T) casstore.Store { return badgerstore.New(memDB(t), nil) })
	})
	t.Run("TempDir", func(t *testing.T) {
		casstoretest.Run(t, func(t *testing.T) casstore.Store {
			return badgerstore.New(openDB(t, badger.DefaultOptions(t.TempDir())), nil)
		})
	})
	t.Run("Segments", func(t *testing.T) {
		casstoretest.Run(t, func(t *testing.T) casstore.Store {
			dir := t.TempDir()
			db := openDB(t, badger.DefaultOptions(dir))
			seg, _, err := seglog.Open(filepath.Join(dir, seglog.Dir), seglog.Pos{}, seglog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { seg.Close() })
			return badgerstore.New(db, seg)
		})
	})
}

func TestBadgerPutDoesNotRewrite(t *testing.T) {
	db := memDB(t)
	st := badgerstore.New(db, nil)
	data := []byte("written once")
	ref, err := st.Put(t.Context(), data)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	v1 := version(t, db, ref)
	if _, err := st.Put(t.Context(), []byte("something else")); err != nil { // advance the clock
		t.Fatalf("Put: %v", err)
	}
	if _, err := st.Put(t.Context(), data); err != nil {
		t.Fatalf("second Put: %v", err)
	}
	if err := db.Update(func(txn *badger.Txn) error {
		for range 2 {
			if _, err := badgerstore.PutTxn(seglog.Direct(txn), data); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("PutTxn: %v", err)
	}
	if v2 := version(t, db, ref); v2 != v1 {
		t.Errorf("version of %s after repeated Put = %d, want %d (unchanged)", ref, v2, v1)
	}
}

func TestBadgerCorrupt(t *testing.T) {
	db := memDB(t)
	st := badgerstore.New(db, nil)
	ref, err := st.Put(t.Context(), []byte("precious"))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(rawKey(ref), []byte("garbage")) }); err != nil {
		t.Fatalf("overwrite raw key: %v", err)
	}
	check := func(name string, got []byte, err error) {
		t.Helper()
		var ce *casstore.CorruptError
		if !errors.Is(err, casstore.ErrCorrupt) || !errors.As(err, &ce) || got != nil {
			t.Fatalf("%s(%s) = %q, %v, want nil, *CorruptError", name, ref, got, err)
		}
		if ce.Ref != ref || ce.Got != casstore.RefOf([]byte("garbage")) {
			t.Errorf("%s(%s) CorruptError = {Ref: %v, Got: %v}, want {Ref: %v, Got: %v}",
				name, ref, ce.Ref, ce.Got, ref, casstore.RefOf([]byte("garbage")))
		}
	}
	got, err := st.Get(t.Context(), ref)
	check("Get", got, err)
	_ = db.View(func(txn *badger.Txn) error {
		got, err := badgerstore.GetTxn(txn, nil, ref)
		check("GetTxn", got, err)
		return nil
	})
	// Put does not repair or overwrite: the key exists.
	if _, err := st.Put(t.Context(), []byte("precious")); err != nil {
		t.Fatalf("Put over corrupt object: %v", err)
	}
	got, err = st.Get(t.Context(), ref)
	check("Get after Put", got, err)
}

func TestBadgerReopen(t *testing.T) {
	dir := t.TempDir()
	opts := badger.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatalf("badger.Open(%s): %v", dir, err)
	}
	data := []byte("survives a restart")
	ref, err := badgerstore.New(db, nil).Put(t.Context(), data)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db = openDB(t, opts)
	if got, err := badgerstore.New(db, nil).Get(t.Context(), ref); err != nil || !bytes.Equal(got, data) {
		t.Errorf("Get(%s) after reopen = %q, %v, want %q, nil", ref, got, err, data)
	}
}

func TestPutTxnAtomic(t *testing.T) {
	db := memDB(t)
	st := badgerstore.New(db, nil)
	errAbort := errors.New("abort")
	tests := []struct {
		name    string
		data    string
		txnErr  error
		wantHas bool
	}{
		{"commit", "committed with a record", nil, true},
		{"rollback", "rolled back with a record", errAbort, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			record := []byte("other/" + tt.name)
			err := db.Update(func(txn *badger.Txn) error {
				if _, err := badgerstore.PutTxn(seglog.Direct(txn), []byte(tt.data)); err != nil {
					return err
				}
				if ok, err := badgerstore.HasTxn(txn, casstore.RefOf([]byte(tt.data))); !ok || err != nil {
					t.Errorf("HasTxn inside the writing txn = %v, %v, want true, nil", ok, err)
				}
				if err := txn.Set(record, []byte("x")); err != nil {
					return err
				}
				return tt.txnErr
			})
			if !errors.Is(err, tt.txnErr) {
				t.Fatalf("Update = %v, want %v", err, tt.txnErr)
			}
			ok, err := st.Has(t.Context(), casstore.RefOf([]byte(tt.data)))
			if ok != tt.wantHas || err != nil {
				t.Errorf("Has(%q) = %v, %v, want %v, nil", tt.data, ok, err, tt.wantHas)
			}
		})
	}
}

func TestPutTxnReadOnly(t *testing.T) {
	db := memDB(t)
	err := db.View(func(txn *badger.Txn) error {
		_, err := badgerstore.PutTxn(seglog.Direct(txn), []byte("x"))
		return err
	})
	if !errors.Is(err, badger.ErrReadOnlyTxn) {
		t.Errorf("PutTxn(read-only txn) error = %v, want badger.ErrReadOnlyTxn", err)
	}
}

func TestBadgerTooLarge(t *testing.T) {
	tests := []struct {
		name    string
		opts    func(t *testing.T) badger.Options
		size    int
		wantErr error
	}{
		{"in memory, under 1 MiB", memOpts, 1<<20 - 1, nil},
		{"in memory, 1 MiB", memOpts, 1 << 20, casstore.ErrTooLarge},
		{"on disk, ValueLogFileSize", diskOpts, 2 << 20, nil},
		{"on disk, over ValueLogFileSize", diskOpts, 2<<20 + 1, casstore.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := badgerstore.New(openDB(t, tt.opts(t)), nil)
			data := bytes.Repeat([]byte{7}, tt.size)
			ref, err := st.Put(t.Context(), data)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Put(%d bytes) = %v, %v, want %v", tt.size, ref, err, tt.wantErr)
			}
			if ok, err := st.Has(t.Context(), casstore.RefOf(data)); ok != (tt.wantErr == nil) || err != nil {
				t.Errorf("Has(%d-byte object) = %v, %v, want %v, nil", tt.size, ok, err, tt.wantErr == nil)
			}
		})
	}
}

func memOpts(*testing.T) badger.Options { return badger.DefaultOptions("").WithInMemory(true) }

func diskOpts(t *testing.T) badger.Options {
	return badger.DefaultOptions(t.TempDir()).WithValueLogFileSize(2 << 20)
}

// TestBadgerKeyLayout freezes the on-disk format described in doc.go.
func TestBadgerKeyLayout(t *testing.T) {
	db := memDB(t)
	st := badgerstore.New(db, nil)
	// Neighbouring prefixes that Enumerate must not report.
	for _, k := range []string{"car/x", "cas", "cat/x"} {
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(k), []byte("x")) }); err != nil {
			t.Fatalf("set %q: %v", k, err)
		}
	}
	if _, err := st.Put(t.Context(), []byte("abc")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	wantKey := "cas/" + string(casstore.RefOf([]byte("abc")).Bytes())
	var keys []string
	_ = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, string(it.Item().KeyCopy(nil)))
			if string(it.Item().Key()) == wantKey {
				v, _ := it.Item().ValueCopy(nil)
				if string(v) != "abc" {
					t.Errorf("value of %q = %q, want %q", wantKey, v, "abc")
				}
			}
		}
		return nil
	})
	want := fmt.Sprintf("%q", []string{"car/x", "cas", wantKey, "cat/x"})
	if got := fmt.Sprintf("%q", keys); got != want {
		t.Errorf("keys after Put(abc) = %s, want %s", got, want)
	}
	var refs []casstore.Ref
	err := st.Enumerate(t.Context(), casstore.Ref{}, func(r casstore.Ref, _ int64) error { refs = append(refs, r); return nil })
	if err != nil || len(refs) != 1 || refs[0] != casstore.RefOf([]byte("abc")) {
		t.Errorf("Enumerate = %v, %v, want [%s], nil", refs, err, casstore.RefOf([]byte("abc")))
	}
}

func BenchmarkPutTxn(b *testing.B) {
	db := memDB(b)
	data := make([]byte, 1024)
	b.SetBytes(int64(len(data)))
	var n uint64
	for b.Loop() {
		n++
		data[0], data[1], data[2], data[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
		err := db.Update(func(txn *badger.Txn) error {
			_, err := badgerstore.PutTxn(seglog.Direct(txn), data)
			return err
		})
		if err != nil {
			b.Fatalf("PutTxn: %v", err)
		}
	}
}

// TestPutSealedTxn: an object put under its ref reads back verified; one
// put under a ref it does not hash to (a caller breaking the contract) is
// reported corrupt on read, never returned.
func TestPutSealedTxn(t *testing.T) {
	db := memDB(t)
	st := badgerstore.New(db, nil)
	good, bad := []byte("sealed object"), []byte("other bytes")
	wrong := casstore.RefOf([]byte("what the caller thought"))
	err := db.Update(func(txn *badger.Txn) error {
		if err := badgerstore.PutSealedTxn(seglog.Direct(txn), casstore.RefOf(good), good); err != nil {
			return err
		}
		return badgerstore.PutSealedTxn(seglog.Direct(txn), wrong, bad)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(context.Background(), casstore.RefOf(good))
	if err != nil || string(got) != string(good) {
		t.Fatalf("Get = %q, %v; want %q", got, err, good)
	}
	var ce *casstore.CorruptError
	if _, err := st.Get(context.Background(), wrong); !errors.As(err, &ce) {
		t.Fatalf("Get of a mismatched object = %v, want *CorruptError", err)
	}
}

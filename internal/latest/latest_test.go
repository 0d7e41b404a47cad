package latest_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/latest"
)

func open(t testing.TB) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(t.TempDir()).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func set(t testing.TB, db *badger.DB, k, v string) {
	t.Helper()
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(k), []byte(v)) }); err != nil {
		t.Fatal(err)
	}
}

func del(t testing.TB, db *badger.DB, k string) {
	t.Helper()
	if err := db.Update(func(txn *badger.Txn) error { return txn.Delete([]byte(k)) }); err != nil {
		t.Fatal(err)
	}
}

// each returns what Each gives for prefix, as key=value strings.
func each(t testing.TB, txn *badger.Txn, prefix string) []string {
	t.Helper()
	var got []string
	err := latest.Each(txn, []byte(prefix), func(item *badger.Item) error {
		v, err := item.ValueCopy(nil)
		got = append(got, string(item.Key())+"="+string(v))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestEachGivesTheLatestVersionOfEachKey(t *testing.T) {
	db := open(t)
	set(t, db, "a/1", "x")
	for i := range 500 { // many versions of two keys, a prefix's neighbours
		set(t, db, "h/a", fmt.Sprint(i))
		set(t, db, "h/b", fmt.Sprint(i*2))
	}
	set(t, db, "h/c", "once")
	set(t, db, "h/d", "gone")
	del(t, db, "h/d")
	set(t, db, "h/e", "old")
	del(t, db, "h/e")
	set(t, db, "h/e", "back")
	set(t, db, "h0", "after")
	// A transaction sees the versions before it only.
	txn := db.NewTransaction(false)
	defer txn.Discard()
	set(t, db, "h/a", "later")
	set(t, db, "h/f", "later")

	got := each(t, txn, "h/")
	want := []string{"h/a=499", "h/b=998", "h/c=once", "h/e=back"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Each = %v, want %v", got, want)
	}
	if got := each(t, txn, "nothing/"); len(got) != 0 {
		t.Fatalf("Each of an empty prefix = %v", got)
	}
	fresh := db.NewTransaction(false)
	defer fresh.Discard()
	if got, want := each(t, fresh, "h/"), []string{"h/a=later", "h/b=998", "h/c=once", "h/e=back", "h/f=later"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Each in a later transaction = %v, want %v", got, want)
	}
}

func TestEachStopsAtAnError(t *testing.T) {
	db := open(t)
	for _, k := range []string{"p/1", "p/2", "p/3"} {
		set(t, db, k, "v")
	}
	stop := errors.New("stop")
	var seen []string
	err := db.View(func(txn *badger.Txn) error {
		return latest.Each(txn, []byte("p/"), func(item *badger.Item) error {
			seen = append(seen, string(item.Key()))
			if len(seen) == 2 {
				return stop
			}
			return nil
		})
	})
	if !errors.Is(err, stop) || len(seen) != 2 {
		t.Fatalf("Each returned %v after %v, want stop after two keys", err, seen)
	}
}

// BenchmarkHotKeys compares Each with Badger's iterator over two keys
// rewritten 20,000 times each, all in the memtable.
func BenchmarkHotKeys(b *testing.B) {
	db := open(b)
	for i := range 20000 {
		if err := db.Update(func(txn *badger.Txn) error {
			if err := txn.Set([]byte("h/a"), fmt.Appendf(nil, "%d", i)); err != nil {
				return err
			}
			return txn.Set([]byte("h/b"), fmt.Appendf(nil, "%d", i))
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			n := 0
			_ = db.View(func(txn *badger.Txn) error {
				return latest.Each(txn, []byte("h/"), func(*badger.Item) error { n++; return nil })
			})
			if n != 2 {
				b.Fatal(n)
			}
		}
	})
	b.Run("iterator", func(b *testing.B) {
		for b.Loop() {
			n := 0
			_ = db.View(func(txn *badger.Txn) error {
				it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("h/")})
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					n++
				}
				return nil
			})
			if n != 2 {
				b.Fatal(n)
			}
		}
	})
}

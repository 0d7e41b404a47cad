package outboxstore_test

import (
	"slices"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/signal/outboxstore"
)

// TestOutbox: items come back in emission (id) order from any point, a
// limit is kept, deleted items are gone, and Count agrees.
func TestOutbox(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions(t.TempDir()).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(txn *badger.Txn) error {
		for _, id := range []string{"03", "01", "04", "02"} { // written out of order
			it := signal.OutboxItem{ID: id, Subject: "wacp.v1.sig.r.w." + id, Signal: signal.Signal{ID: id, From: "w"}}
			if err := outboxstore.Put(seglog.Direct(txn), it); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	read := func(after string, limit int) (ids []string, n int) {
		t.Helper()
		err := db.View(func(txn *badger.Txn) error {
			items, err := outboxstore.After(txn, after, limit)
			for _, it := range items {
				if it.Signal.ID != it.ID || it.Subject != "wacp.v1.sig.r.w."+it.ID {
					t.Errorf("item %s read back as %+v", it.ID, it)
				}
				ids = append(ids, it.ID)
			}
			n = outboxstore.Count(txn)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids, n
	}
	if ids, n := read("", 0); !slices.Equal(ids, []string{"01", "02", "03", "04"}) || n != 4 {
		t.Fatalf("all = %v (count %d)", ids, n)
	}
	if ids, _ := read("02", 1); !slices.Equal(ids, []string{"03"}) {
		t.Fatalf("after 02, limit 1 = %v", ids)
	}
	if err := db.Update(func(txn *badger.Txn) error { return outboxstore.Delete(seglog.Direct(txn), "01") }); err != nil {
		t.Fatal(err)
	}
	if ids, n := read("", 0); !slices.Equal(ids, []string{"02", "03", "04"}) || n != 3 {
		t.Fatalf("after deleting 01: %v (count %d)", ids, n)
	}
}

package outboxstore_test

import (
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/signal/outboxstore"
)

// TestMarkAndLegacy: a database has no mark until one is written, and then
// the one written last; the records of the releases before come back in
// emission (id) order, beside the mark, until DeleteLegacy removes them.
func TestMarkAndLegacy(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions(t.TempDir()).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mark := func() (outboxstore.Mark, bool) {
		t.Helper()
		var m outboxstore.Mark
		var ok bool
		err := db.View(func(txn *badger.Txn) (err error) {
			m, ok, err = outboxstore.GetMark(txn)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return m, ok
	}
	if m, ok := mark(); ok {
		t.Fatalf("new database has mark %+v", m)
	}
	err = db.Update(func(txn *badger.Txn) error {
		for _, id := range []string{"03", "01", "02"} { // written out of order
			it := signal.OutboxItem{ID: id, Subject: "wacp.v1.sig.r.w." + id, Signal: signal.Signal{ID: id, From: "w"}}
			if err := outboxstore.PutLegacy(seglog.Direct(txn), it); err != nil {
				return err
			}
		}
		if err := outboxstore.PutMark(seglog.Direct(txn), outboxstore.Mark{Seq: 7, Signal: "00"}); err != nil {
			return err
		}
		return outboxstore.PutMark(seglog.Direct(txn), outboxstore.Mark{Seq: 9, Signal: "01"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := mark(); !ok || m != (outboxstore.Mark{Seq: 9, Signal: "01"}) {
		t.Fatalf("mark = %+v, %v; want the last written", m, ok)
	}
	legacy := func() []string {
		t.Helper()
		var ids []string
		err := db.View(func(txn *badger.Txn) error {
			items, err := outboxstore.Legacy(txn)
			for _, it := range items {
				if it.Signal.ID != it.ID || it.Subject != "wacp.v1.sig.r.w."+it.ID {
					t.Errorf("item %s read back as %+v", it.ID, it)
				}
				ids = append(ids, it.ID)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if ids := legacy(); len(ids) != 3 || ids[0] != "01" || ids[2] != "03" {
		t.Fatalf("legacy records = %v, want 01 02 03", ids)
	}
	if n, err := outboxstore.DeleteLegacy(db); err != nil || n != 3 {
		t.Fatalf("DeleteLegacy = %d, %v; want 3", n, err)
	}
	if ids := legacy(); len(ids) != 0 {
		t.Fatalf("after DeleteLegacy: %v", ids)
	}
	if m, ok := mark(); !ok || m.Seq != 9 {
		t.Fatalf("DeleteLegacy took the mark: %+v, %v", m, ok)
	}
}

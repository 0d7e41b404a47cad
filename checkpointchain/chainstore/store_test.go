package chainstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/casstore/badgerstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/taxonomy"
)

func openDB(t *testing.T, dir string) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(true))
	if err != nil {
		t.Fatalf("badger.Open(%s) error = %v", dir, err)
	}
	t.Cleanup(func() { db.Close() }) // a second Close after a test's own is harmless
	return db
}

// appendCheckpoint builds the next checkpoint of ws on ch and stores it in
// its own transaction, returning it and the chain after it.
func appendCheckpoint(t *testing.T, db *badger.DB, ws, id, status string, ch checkpointchain.Chain) (checkpointchain.Checkpoint, checkpointchain.Chain) {
	t.Helper()
	var parent *string
	if ch.Head != "" {
		parent = ptr(ch.Head)
	}
	r := req("artifact", parent, `{"content":"work of `+id+`","files_changed":["f.go"],"x-note":{"b":1,"a":2}}`)
	r.Status = status
	a := worker
	a.Workspace = ws
	c, b, err := checkpointchain.Build(r, a, ch, taxonomy.Base(), id, ts1)
	if err != nil {
		t.Fatalf("Build(%s) error = %v", id, err)
	}
	var next checkpointchain.Chain
	err = db.Update(func(txn *badger.Txn) error {
		var err error
		next, err = chainstore.Put(seglog.Direct(txn), c, b, ch)
		return err
	})
	if err != nil {
		t.Fatalf("Put(%s) error = %v", id, err)
	}
	if want := ch.Append(c); next != want {
		t.Errorf("Put(%s) chain = %+v, want %+v", id, next, want)
	}
	return c, next
}

type stored struct {
	byWS   map[string][]checkpointchain.Checkpoint
	chains map[string]checkpointchain.Chain
}

// fill stores two interleaved chains: wsA with 4 checkpoints (the second
// and fourth final), wsB with 2.
func fill(t *testing.T, db *badger.DB) stored {
	s := stored{byWS: map[string][]checkpointchain.Checkpoint{}, chains: map[string]checkpointchain.Chain{}}
	plan := []struct{ ws, status string }{
		{"wsA", "provisional"}, {"wsB", "provisional"}, {"wsA", "final"},
		{"wsA", "provisional"}, {"wsB", "final"}, {"wsA", "final"},
	}
	for i, p := range plan {
		id := fmt.Sprintf("01JA000000000000000000%04d", i+1)
		var c checkpointchain.Checkpoint
		c, s.chains[p.ws] = appendCheckpoint(t, db, p.ws, id, p.status, s.chains[p.ws])
		s.byWS[p.ws] = append(s.byWS[p.ws], c)
	}
	return s
}

func checkStore(t *testing.T, db *badger.DB, s stored) {
	t.Helper()
	err := db.View(func(txn *badger.Txn) error {
		for ws, cps := range s.byWS {
			for i, want := range cps {
				got, err := chainstore.Get(txn, nil, want.ID)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("Get(%s) = %+v, %v, want %+v", want.ID, got, err, want)
				}
				gotWS, n, err := chainstore.Position(txn, want.ID)
				if err != nil || gotWS != ws || n != uint64(i+1) {
					t.Errorf("Position(%s) = %q, %d, %v, want %q, %d", want.ID, gotWS, n, err, ws, i+1)
				}
			}
			for after := 0; after <= len(cps)+1; after++ {
				for _, limit := range []int{0, 1, 2, 100} {
					got, err := chainstore.List(txn, nil, ws, uint64(after), limit)
					want := cps[min(after, len(cps)):]
					want = want[:min(limit, len(want))]
					if err != nil || !sameIDs(got, want) {
						t.Errorf("List(%s, after %d, limit %d) = %v, %v, want %v", ws, after, limit, ids(got), err, ids(want))
					}
				}
			}
		}
		if got, err := chainstore.List(txn, nil, "wsC", 0, 10); err != nil || len(got) != 0 {
			t.Errorf("List(unknown workspace) = %v, %v, want none", ids(got), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	chains, err := chainstore.LoadChains(db)
	if err != nil || !reflect.DeepEqual(chains, s.chains) {
		t.Errorf("LoadChains() = %+v, %v, want %+v", chains, err, s.chains)
	}
}

func ids(cps []checkpointchain.Checkpoint) []string {
	out := []string{}
	for _, c := range cps {
		out = append(out, c.ID)
	}
	return out
}

func sameIDs(a, b []checkpointchain.Checkpoint) bool { return reflect.DeepEqual(ids(a), ids(b)) }

func TestStorePutGetListReopen(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	s := fill(t, db)
	if got, want := s.chains["wsA"], (checkpointchain.Chain{Head: s.byWS["wsA"][3].ID, Count: 4, LastFinal: s.byWS["wsA"][3].ID}); got != want {
		t.Errorf("chain wsA = %+v, want %+v", got, want)
	}
	if got, want := s.chains["wsB"], (checkpointchain.Chain{Head: s.byWS["wsB"][1].ID, Count: 2, LastFinal: s.byWS["wsB"][1].ID}); got != want {
		t.Errorf("chain wsB = %+v, want %+v", got, want)
	}
	checkStore(t, db, s)

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	checkStore(t, db, s)

	// The chain continues after reopening from the loaded register.
	chains, err := chainstore.LoadChains(db)
	if err != nil {
		t.Fatal(err)
	}
	c, next := appendCheckpoint(t, db, "wsB", "01JA0000000000000000000099", "provisional", chains["wsB"])
	s.byWS["wsB"] = append(s.byWS["wsB"], c)
	s.chains["wsB"] = next
	if next.LastFinal != s.byWS["wsB"][1].ID || next.Count != 3 {
		t.Errorf("chain wsB after a provisional = %+v, want count 3 and last_final unchanged", next)
	}
	checkStore(t, db, s)
}

func TestStoreNotFound(t *testing.T) {
	db := openDB(t, t.TempDir())
	fill(t, db)
	db.View(func(txn *badger.Txn) error {
		for _, id := range []string{"nope", "", "01JA000000000000000000000"} {
			if c, err := chainstore.Get(txn, nil, id); !errors.Is(err, checkpointchain.ErrNotFound) {
				t.Errorf("Get(%q) = %+v, %v, want %v", id, c, err, checkpointchain.ErrNotFound)
			}
			if ws, n, err := chainstore.Position(txn, id); !errors.Is(err, checkpointchain.ErrNotFound) {
				t.Errorf("Position(%q) = %q, %d, %v, want %v", id, ws, n, err, checkpointchain.ErrNotFound)
			}
		}
		return nil
	})
	empty := openDB(t, t.TempDir())
	if chains, err := chainstore.LoadChains(empty); err != nil || len(chains) != 0 {
		t.Errorf("LoadChains(empty db) = %v, %v, want an empty map", chains, err)
	}
}

// casKey is casstore's Badger key for ref (casstore's documented format:
// KeyPrefix followed by the 32 raw bytes of the sum).

func TestStoreCorruptObject(t *testing.T) {
	db := openDB(t, t.TempDir())
	s := fill(t, db)
	victim := s.byWS["wsA"][1]
	err := db.Update(func(txn *badger.Txn) error {
		return txn.Set(badgerstore.Key(victim.Digest), []byte(`{"id":"forged"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(txn *badger.Txn) error {
		if c, err := chainstore.Get(txn, nil, victim.ID); !errors.Is(err, casstore.ErrCorrupt) {
			t.Errorf("Get(corrupted %s) = %+v, %v, want %v", victim.ID, c, err, casstore.ErrCorrupt)
		}
		if got, err := chainstore.List(txn, nil, "wsA", 0, 10); !errors.Is(err, casstore.ErrCorrupt) {
			t.Errorf("List(wsA with a corrupted object) = %v, %v, want %v", ids(got), err, casstore.ErrCorrupt)
		}
		if got, err := chainstore.Get(txn, nil, s.byWS["wsA"][0].ID); err != nil || got.ID != s.byWS["wsA"][0].ID {
			t.Errorf("Get(intact %s) = %v, %v, want it", s.byWS["wsA"][0].ID, got.ID, err)
		}
		return nil
	})

	// An object that is gone is reported as casstore's not-found.
	lost := s.byWS["wsB"][0]
	if err := db.Update(func(txn *badger.Txn) error { return txn.Delete(badgerstore.Key(lost.Digest)) }); err != nil {
		t.Fatal(err)
	}
	db.View(func(txn *badger.Txn) error {
		if c, err := chainstore.Get(txn, nil, lost.ID); !errors.Is(err, casstore.ErrNotFound) {
			t.Errorf("Get(%s, object deleted) = %+v, %v, want %v", lost.ID, c, err, casstore.ErrNotFound)
		}
		return nil
	})
}

// TestStoreIndexPointsElsewhere checks that an id index naming another
// checkpoint's object is reported as corrupt (doc.go: k/c/<id> index).
func TestStoreIndexPointsElsewhere(t *testing.T) {
	db := openDB(t, t.TempDir())
	s := fill(t, db)
	a, b := s.byWS["wsA"][0], s.byWS["wsA"][1]
	err := db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte("k/c/" + a.ID))
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		return txn.Set([]byte("k/c/"+b.ID), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(txn *badger.Txn) error {
		if c, err := chainstore.Get(txn, nil, b.ID); !errors.Is(err, casstore.ErrCorrupt) {
			t.Errorf("Get(%s, index naming %s's object) = %+v, %v, want %v", b.ID, a.ID, c, err, casstore.ErrCorrupt)
		}
		return nil
	})
}

// TestPutWrongDigest checks that Put refuses an object that is not the
// checkpoint's (another Build's), and that the refused transaction leaves
// nothing behind.
func TestPutWrongDigest(t *testing.T) {
	db := openDB(t, t.TempDir())
	c, b, err := checkpointchain.Build(req("artifact", nil, ""), worker, checkpointchain.Chain{}, taxonomy.Base(), cpID1, ts1)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := checkpointchain.Build(req("artifact", nil, ""), worker, checkpointchain.Chain{}, taxonomy.Base(), "01JA00000000000000000000C2", ts1)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error {
		_, err := chainstore.Put(seglog.Direct(txn), c, other, checkpointchain.Chain{})
		return err
	})
	if !errors.Is(err, casstore.ErrCorrupt) {
		t.Errorf("Put(checkpoint, another's object) = %v, want %v", err, casstore.ErrCorrupt)
	}
	db.View(func(txn *badger.Txn) error {
		if _, err := chainstore.Get(txn, nil, c.ID); !errors.Is(err, checkpointchain.ErrNotFound) {
			t.Errorf("Get(%s) after a failed Put = %v, want %v", c.ID, err, checkpointchain.ErrNotFound)
		}
		return nil
	})
	if chains, err := chainstore.LoadChains(db); err != nil || len(chains) != 0 {
		t.Errorf("LoadChains() after a failed Put = %v, %v, want none", chains, err)
	}
	// The right bytes go in.
	err = db.Update(func(txn *badger.Txn) error {
		_, err := chainstore.Put(seglog.Direct(txn), c, b, checkpointchain.Chain{})
		return err
	})
	if err != nil {
		t.Errorf("Put(checkpoint, its bytes) = %v", err)
	}
}

// Fixtures, as package checkpointchain's tests have them.
const (
	wsID  = "01JA0000000000000000000WS1"
	cpID1 = "01JA00000000000000000000C1"
	ts1   = "2026-02-24T10:00:00.000000000Z"
)

var worker = checkpointchain.Author{Workspace: wsID, Role: "worker", Active: true, State: "active"}

func ptr[T any](v T) *T { return &v }

func req(typ string, parent *string, payload string) checkpointchain.Request {
	r := checkpointchain.Request{Type: typ, Intent: "because", Parent: parent, Status: "provisional", Confidence: "medium"}
	if payload != "" {
		if err := json.Unmarshal([]byte(payload), &r.Payload); err != nil {
			panic(err)
		}
	}
	return r
}

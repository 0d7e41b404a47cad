package runtime

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/signal/outboxstore"
)

// TestOutboxAfter: the outbox lists signals in emission order, and a
// publisher's cursor skips the ones it confirmed.
func TestOutboxAfter(t *testing.T) {
	e := openTest(t)
	w := newWorker(t, e)
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	checkpoint(t, e, w.ID, &c1.ID, "final")
	all, err := e.OutboxAfter("", 0)
	if err != nil || len(all) < 3 {
		t.Fatalf("Outbox = %d items, %v; want the acknowledged and two checkpoint signals", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Fatalf("outbox not in emission order: %s after %s", all[i].ID, all[i-1].ID)
		}
	}
	for i := range all {
		rest, err := e.OutboxAfter(all[i].ID, 0)
		if err != nil || len(rest) != len(all)-i-1 {
			t.Fatalf("OutboxAfter(item %d) = %d items, %v; want %d", i, len(rest), err, len(all)-i-1)
		}
	}
	if err := e.AckOutbox(all[0]); err != nil {
		t.Fatal(err)
	}
	// The delete rides on the next batch, or a batch of its own soon after.
	waitFor(t, "the confirmed item's delete", func() bool {
		rest, _ := e.OutboxAfter("", 0)
		return len(rest) == len(all)-1 && rest[0].ID == all[1].ID
	})
}

// TestOutboxAckRidesOnTheNextBatch: a confirmation writes nothing of its
// own when a batch follows: the next checkpoint's write deletes the item.
// And confirmations still pending at Close are written then.
func TestOutboxAckRidesOnTheNextBatch(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	w := newWorker(t, e)
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	all, err := e.OutboxAfter("", 0)
	if err != nil || len(all) == 0 {
		t.Fatalf("Outbox = %v, %v", all, err)
	}
	if err := e.AckOutbox(all[0]); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, e, w.ID, &c1.ID, "final") // its batch carries the delete
	rest, err := e.OutboxAfter("", 0)
	if err != nil || len(rest) == 0 || rest[0].ID == all[0].ID {
		t.Fatalf("after the next checkpoint the confirmed item is still there: %v, %v", rest, err)
	}
	if err := e.AckOutbox(rest[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := openEngineAt(t, dir)
	after, err := e2.OutboxAfter("", 0)
	if err != nil || len(after) != len(rest)-1 {
		t.Fatalf("after Close and reopen: %d items, %v; want %d (the confirmation pending at Close written)", len(after), err, len(rest)-1)
	}
}

// TestOutboxIsDerivedFromTheTrail: the signals a commit hands the
// publisher are, item for item (id, subject, signal, trail position), the
// ones the outbox reads back from the trail, before and after a reopen;
// and no commit writes a record of its own for a signal.
func TestOutboxIsDerivedFromTheTrail(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	var mu sync.Mutex
	var committed []agentsignal.OutboxItem
	e.OnCommit(func(c Commit) {
		mu.Lock()
		committed = append(committed, c.Outbox...)
		mu.Unlock()
	})
	w := newWorker(t, e)
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	checkpoint(t, e, w.ID, &c1.ID, "final")
	if _, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"escalation","reason":"need a hand","ref":"x"}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	want := slices.Clone(committed)
	mu.Unlock()
	if len(want) < 3 {
		t.Fatalf("commits handed %d signals to publish, want at least 3", len(want))
	}
	got, err := e.OutboxAfter("", 0)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("OutboxAfter = %+v, %v\nwant what the commits carried: %+v", got, err, want)
	}
	if n, err := e.OutboxLen(); err != nil || n != len(want) {
		t.Fatalf("OutboxLen = %d, %v; want %d", n, err, len(want))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawDB(t, dir, func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("o/")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			t.Errorf("a record of the outbox's own: %q", it.Item().Key())
		}
		return nil
	})
	e2 := openEngineAt(t, dir)
	got, err = e2.OutboxAfter("", 0)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after a reopen OutboxAfter = %+v, %v\nwant %+v", got, err, want)
	}
	// A confirmation in the middle keeps what follows it.
	if err := e2.AckOutbox(want[1]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mark written", func() bool {
		rest, _ := e2.OutboxAfter("", 0)
		return reflect.DeepEqual(rest, want[2:])
	})
}

// TestOutboxUpgradesTheRecordsOfTheReleaseBefore: a data dir of a release
// that kept a record per unconfirmed signal (o/<id>) and no mark opens with
// exactly those signals unconfirmed, and the records gone; one whose every
// signal was confirmed (no record left) opens with none, not with every
// signal of its trail.
func TestOutboxUpgradesTheRecordsOfTheReleaseBefore(t *testing.T) {
	for _, left := range []int{2, 0} {
		t.Run(fmt.Sprintf("%d left", left), func(t *testing.T) {
			dir := t.TempDir()
			e := openEngineAt(t, dir)
			w := newWorker(t, e)
			var parent *string
			for range 3 {
				cp := checkpoint(t, e, w.ID, parent, "provisional")
				parent = &cp.ID
			}
			all, err := e.OutboxAfter("", 0)
			if err != nil || len(all) < 4 {
				t.Fatalf("outbox = %d items, %v", len(all), err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			unconfirmed := all[len(all)-left:]
			rawDB(t, dir, func(txn *badger.Txn) error {
				if err := txn.Delete([]byte("m/outbox")); err != nil {
					return err
				}
				for _, it := range unconfirmed {
					it.Seq = 0 // the old records had none
					if err := outboxstore.PutLegacy(seglog.Direct(txn), it); err != nil {
						return err
					}
				}
				return nil
			})
			e2 := openEngineAt(t, dir)
			got, err := e2.OutboxAfter("", 0)
			if err != nil || len(got) != left {
				t.Fatalf("after the upgrade OutboxAfter = %d items, %v; want the %d left", len(got), err, left)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], unconfirmed[i]) {
					t.Fatalf("item %d = %+v, want %+v", i, got[i], unconfirmed[i])
				}
			}
			if err := e2.Close(); err != nil {
				t.Fatal(err)
			}
			rawDB(t, dir, func(txn *badger.Txn) error {
				items, err := outboxstore.Legacy(txn)
				if err != nil || len(items) != 0 {
					t.Errorf("records of the release before left: %d, %v", len(items), err)
				}
				return nil
			})
		})
	}
}

// TestOutboxMarkPastTheTrailsEnd: a mark beyond the trail's last entry (its
// tail cut by a repair) is brought back to the end, so the signals written
// next are published.
func TestOutboxMarkPastTheTrailsEnd(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	w := newWorker(t, e)
	n := e.Trail().Len()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawDB(t, dir, func(txn *badger.Txn) error {
		return outboxstore.PutMark(seglog.Direct(txn), outboxstore.Mark{Seq: n + 100})
	})
	e2 := openEngineAt(t, dir)
	before, err := e2.OutboxLen()
	if err != nil {
		t.Fatal(err)
	}
	checkpoint(t, e2, w.ID, nil, "provisional")
	if after, err := e2.OutboxLen(); err != nil || after != before+1 {
		t.Fatalf("OutboxLen after a checkpoint = %d, %v; want %d", after, err, before+1)
	}
}

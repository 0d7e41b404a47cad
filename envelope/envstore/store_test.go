package envstore_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/internal/seglog"
)

func openDB(t *testing.T) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(t.TempDir()).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func update(t *testing.T, db *badger.DB, fn func(txn *badger.Txn) error) {
	t.Helper()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func ids(es []envstore.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// TestInbox: records read back; an inbox hands out blocking > urgent >
// normal and FIFO within a rank, skips leased envelopes, and a removed
// envelope takes its lease's deadline with it.
func TestInbox(t *testing.T) {
	db := openDB(t)
	envs := []envelope.Envelope{
		{ID: "01a", From: "w1", To: "w2", Type: "task", Priority: envelope.PriorityNormal},
		{ID: "01b", From: "w1", To: "w2", Type: "task", Priority: envelope.PriorityBlocking},
		{ID: "01c", From: "w1", To: "w2", Type: "task", Priority: envelope.PriorityUrgent},
		{ID: "01d", From: "w1", To: "w2", Type: "task", Priority: envelope.PriorityBlocking},
		{ID: "01e", From: "w2", To: "w1", Type: "task", Priority: envelope.PriorityBlocking},
	}
	update(t, db, func(txn *badger.Txn) error {
		for _, env := range envs {
			if err := envstore.Put(seglog.Direct(txn), env); err != nil {
				return err
			}
			if err := envstore.Deliver(seglog.Direct(txn), env); err != nil {
				return err
			}
		}
		return nil
	})
	t0 := time.Unix(1_800_000_000, 0)
	update(t, db, func(txn *badger.Txn) error {
		got, err := envstore.Get(seglog.Direct(txn), "01c")
		if err != nil || got.Priority != envelope.PriorityUrgent || got.To != "w2" {
			t.Fatalf("Get = %+v, %v", got, err)
		}
		if _, err := envstore.Get(seglog.Direct(txn), "nope"); !errors.Is(err, envstore.ErrNotFound) {
			t.Fatalf("Get of a missing envelope: %v, want ErrNotFound", err)
		}
		var order []string
		for i := range 4 {
			e, ok, err := envstore.FirstUnleased(txn, "w2")
			if err != nil || !ok {
				t.Fatalf("FirstUnleased #%d: %v %v", i, ok, err)
			}
			d, err := envstore.Lease(seglog.Direct(txn), e, t0.Add(time.Duration(i)*time.Second))
			if err != nil {
				return err
			}
			if d.Attempt != 1 || d.Until == "" {
				t.Fatalf("first lease of %s: %+v", e.ID, d)
			}
			order = append(order, e.ID)
		}
		if want := []string{"01b", "01d", "01c", "01a"}; !slices.Equal(order, want) {
			t.Fatalf("hand-out order %v, want %v", order, want)
		}
		if _, ok, err := envstore.FirstUnleased(txn, "w2"); ok || err != nil {
			t.Fatalf("every envelope is leased, FirstUnleased = %v %v", ok, err)
		}
		return nil
	})
	update(t, db, func(txn *badger.Txn) error {
		leased, err := envstore.Leased(txn, "w2")
		if err != nil {
			return err
		}
		if want := []string{"01b", "01d", "01c", "01a"}; !slices.Equal(ids(leased), want) {
			t.Fatalf("Leased = %v, want %v", ids(leased), want)
		}
		if at, ok := envstore.NextDeadline(txn); !ok || !at.Equal(t0) {
			t.Fatalf("NextDeadline = %v %v, want %v", at, ok, t0)
		}
		return envstore.Remove(seglog.Direct(txn), leased[0]) // 01b, deadline t0
	})
	update(t, db, func(txn *badger.Txn) error {
		if at, ok := envstore.NextDeadline(txn); !ok || !at.Equal(t0.Add(time.Second)) {
			t.Fatalf("after removing the first leased envelope NextDeadline = %v %v, want its deadline gone", at, ok)
		}
		env, _ := envstore.Get(seglog.Direct(txn), "01b")
		if _, ok, err := envstore.Lookup(txn, env); ok || err != nil {
			t.Fatalf("a removed envelope is still in the inbox: %v %v", ok, err)
		}
		other, ok, err := envstore.FirstUnleased(txn, "w1")
		if !ok || err != nil || other.ID != "01e" {
			t.Fatalf("another inbox: %+v %v %v", other, ok, err)
		}
		return nil
	})
}

// TestLeaseExpiry: the leases due by a moment come earliest first; a
// released envelope is handed out again with its attempts counted; an
// envelope removed while its lease was due is reported gone.
func TestLeaseExpiry(t *testing.T) {
	db := openDB(t)
	t0 := time.Unix(1_800_000_000, 0)
	a := envelope.Envelope{ID: "01a", From: "w1", To: "w2", Type: "task", Priority: envelope.PriorityNormal}
	b := envelope.Envelope{ID: "01b", From: "w1", To: "w2", Type: "task", Priority: envelope.PriorityNormal}
	c := envelope.Envelope{ID: "01c", From: "w1", To: "w2", Type: "task", Priority: envelope.PriorityNormal}
	update(t, db, func(txn *badger.Txn) error {
		for i, env := range []envelope.Envelope{a, b, c} {
			if err := envstore.Put(seglog.Direct(txn), env); err != nil {
				return err
			}
			if err := envstore.Deliver(seglog.Direct(txn), env); err != nil {
				return err
			}
			e, ok, err := envstore.FirstUnleased(txn, "w2")
			if err != nil || !ok {
				t.Fatalf("FirstUnleased: %v %v", ok, err)
			}
			// Deadlines out of hand-out order: c first, then a, then b.
			deadline := []time.Duration{2, 3, 1}[i] * time.Second
			if _, err := envstore.Lease(seglog.Direct(txn), e, t0.Add(deadline)); err != nil {
				return err
			}
		}
		return nil
	})
	var due []envstore.Due
	update(t, db, func(txn *badger.Txn) error {
		var err error
		due, err = envstore.DueBy(txn, t0.Add(2*time.Second))
		return err
	})
	got := []string{}
	for _, u := range due {
		got = append(got, u.ID)
	}
	if want := []string{"01c", "01a"}; !slices.Equal(got, want) {
		t.Fatalf("DueBy = %v, want %v (b is due later)", got, want)
	}
	update(t, db, func(txn *badger.Txn) error {
		env, _ := envstore.Get(seglog.Direct(txn), "01c")
		e, ok, err := envstore.Lookup(txn, env)
		if err != nil || !ok {
			t.Fatalf("Lookup: %v %v", ok, err)
		}
		return envstore.Remove(seglog.Direct(txn), e) // acknowledged before the expiry pass
	})
	update(t, db, func(txn *badger.Txn) error {
		if _, ok, err := envstore.Expire(seglog.Direct(txn), due[0]); ok || err != nil {
			t.Fatalf("Expire of a lease whose envelope left: %v %v, want gone", ok, err)
		}
		e, ok, err := envstore.Expire(seglog.Direct(txn), due[1])
		if !ok || err != nil || e.ID != "01a" || e.Delivery.Attempt != 1 {
			t.Fatalf("Expire = %+v %v %v", e, ok, err)
		}
		return envstore.Release(seglog.Direct(txn), e)
	})
	update(t, db, func(txn *badger.Txn) error {
		left, err := envstore.DueBy(txn, t0.Add(time.Hour))
		if err != nil {
			return err
		}
		if len(left) != 1 || left[0].ID != "01b" {
			t.Fatalf("after the pass DueBy = %+v, want only 01b", left)
		}
		e, ok, err := envstore.FirstUnleased(txn, "w2")
		if err != nil || !ok || e.ID != "01a" {
			t.Fatalf("the released envelope is not handed out again: %+v %v %v", e, ok, err)
		}
		d, err := envstore.Lease(seglog.Direct(txn), e, t0.Add(time.Minute))
		if err != nil || d.Attempt != 2 {
			t.Fatalf("second lease = %+v %v, want attempt 2", d, err)
		}
		return nil
	})
}

// TestQueue: queued envelopes come out once, in order.
func TestQueue(t *testing.T) {
	db := openDB(t)
	update(t, db, func(txn *badger.Txn) error {
		for _, id := range []string{"01a", "01b", "01c"} {
			if err := envstore.Queue(seglog.Direct(txn), "w2", id); err != nil {
				return err
			}
		}
		return envstore.Queue(seglog.Direct(txn), "w3", "01d")
	})
	update(t, db, func(txn *badger.Txn) error {
		got, err := envstore.Dequeue(seglog.Direct(txn), "w2")
		if err != nil || !slices.Equal(got, []string{"01a", "01b", "01c"}) {
			t.Fatalf("Dequeue = %v %v", got, err)
		}
		return nil
	})
	update(t, db, func(txn *badger.Txn) error {
		if got, err := envstore.Dequeue(seglog.Direct(txn), "w2"); len(got) != 0 || err != nil {
			t.Fatalf("second Dequeue = %v %v, want nothing", got, err)
		}
		if got, _ := envstore.Dequeue(seglog.Direct(txn), "w3"); !slices.Equal(got, []string{"01d"}) {
			t.Fatalf("another workspace's queue = %v", got)
		}
		return nil
	})
}

func TestDecodeDelivery(t *testing.T) {
	for _, v := range []string{`{`, `{"attempt":-1}`, `{"attempt":1,"until":"yesterday"}`, `[]`} {
		if _, err := envstore.DecodeDelivery([]byte(v)); err == nil {
			t.Errorf("DecodeDelivery(%s) accepted it", v)
		}
	}
	d, err := envstore.DecodeDelivery(nil)
	if err != nil || d != (envstore.Delivery{}) {
		t.Fatalf("an empty value = %+v %v, want never handed out", d, err)
	}
}

func FuzzDecodeDelivery(f *testing.F) {
	f.Add([]byte(`{"attempt":2,"until":"2026-11-25T10:00:00.000000Z"}`))
	f.Add([]byte{})
	f.Add([]byte(`{"attempt":1}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		d, err := envstore.DecodeDelivery(v)
		if err != nil {
			if d != (envstore.Delivery{}) {
				t.Fatalf("a refused record decoded to %+v", d)
			}
			return
		}
		if d.Attempt < 0 {
			t.Fatalf("negative attempt accepted: %+v", d)
		}
	})
}

package runtime

import "testing"

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
	if err := e.AckOutbox(all[0].ID); err != nil {
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
	if err := e.AckOutbox(all[0].ID); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, e, w.ID, &c1.ID, "final") // its batch carries the delete
	rest, err := e.OutboxAfter("", 0)
	if err != nil || len(rest) == 0 || rest[0].ID == all[0].ID {
		t.Fatalf("after the next checkpoint the confirmed item is still there: %v, %v", rest, err)
	}
	if err := e.AckOutbox(rest[0].ID); err != nil {
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

package runtime

import "testing"

// TestOutboxAfter: the outbox lists signals in emission order, and a
// publisher's cursor skips the ones it confirmed.
func TestOutboxAfter(t *testing.T) {
	e := openTest(t)
	w := newWorker(t, e)
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	checkpoint(t, e, w.ID, &c1.ID, "final")
	all, err := e.Outbox(0)
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
	if rest, _ := e.Outbox(0); len(rest) != len(all)-1 || rest[0].ID != all[1].ID {
		t.Fatalf("after acking the first, Outbox = %d items starting %s", len(rest), rest[0].ID)
	}
}

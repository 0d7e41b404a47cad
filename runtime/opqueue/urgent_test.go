package opqueue_test

import (
	"context"
	"testing"

	"github.com/wacpd/wacpd/runtime/opqueue"
)

// TestUrgentLane: an Op marked Urgent is handed over on the Urgent lane,
// the others on C; the lane is one channel, as large as C.
func TestUrgentLane(t *testing.T) {
	q, _, _ := newQueue()
	if q.Urgent() != q.Urgent() || cap(q.Urgent()) != cap(q.C) {
		t.Fatalf("Urgent() is not one channel as large as C (cap %d, want %d)", cap(q.Urgent()), cap(q.C))
	}
	plain := opqueue.New(func() error { return nil }, 0, false)
	urgent := opqueue.New(func() error { return nil }, 0, false)
	urgent.Urgent = true
	res := []<-chan error{submit(context.Background(), q, plain), submit(context.Background(), q, urgent)}
	for _, tt := range []struct {
		lane chan *opqueue.Op
		want *opqueue.Op
		name string
	}{{q.C, plain, "C"}, {q.Urgent(), urgent, "Urgent"}} {
		got := <-tt.lane
		if got != tt.want {
			t.Errorf("%s lane handed over the wrong op", tt.name)
		}
		got.Take()
		got.Answer(nil)
	}
	for _, r := range res {
		if err := <-r; err != nil {
			t.Error(err)
		}
	}
}

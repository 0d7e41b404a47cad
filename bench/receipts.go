package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
)

// receipts records when the coordinator first received the checkpoint
// signal of each of the workers' checkpoints. It keys them by the id's 16
// bytes and keeps Unix nanoseconds, as committed does: the bench shares
// its process with the daemon, and a million ids as strings (and times
// with their location pointer) were millions of small objects its
// collector marked at every cycle, a cost that grew over a soak and that
// agents in processes of their own do not put on a daemon.
type receipts struct {
	from map[string]bool // the workers' workspace ids; read-only

	mu sync.Mutex          // guards at
	at map[ulid.ULID]int64 // checkpoint id -> first receipt, Unix nanoseconds

	more chan struct{} // poked after each new receipt
}

func newReceipts(workers []*client.Client) *receipts {
	r := &receipts{from: map[string]bool{}, at: map[ulid.ULID]int64{}, more: make(chan struct{}, 1)}
	for _, w := range workers {
		r.from[w.Workspace()] = true
	}
	return r
}

// record is the Watch callback. Delivery is at least once: a repeat keeps
// the first receipt.
func (r *receipts) record(s signal.Signal) error {
	now := time.Now().UnixNano()
	if s.Type != taxonomy.SignalCheckpoint || s.Ref == nil || !r.from[s.From] {
		return nil
	}
	id, err := ulid.ParseStrict(*s.Ref)
	if err != nil {
		return nil // not one of the workers' checkpoints
	}
	r.mu.Lock()
	if _, ok := r.at[id]; !ok {
		r.at[id] = now
	}
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
	return nil
}

func (r *receipts) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.at)
}

// wait returns once n signals arrived, or an error after timeout.
func (r *receipts) wait(ctx context.Context, n int, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for r.count() < n {
		select {
		case <-r.more:
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
			return fmt.Errorf("bench: %d of %d checkpoint signals arrived within %s", r.count(), n, timeout)
		}
	}
	return nil
}

// latencies returns, for each checkpoint whose signal arrived, the time
// from its timestamp to the receipt.
func (r *receipts) latencies(cps []committed) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, 0, len(cps))
	for _, cp := range cps {
		if at, ok := r.at[cp.id]; ok {
			out = append(out, time.Duration(at-cp.at))
		}
	}
	return out
}

package runtime

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wacpd/wacpd/wire"
)

// holdSeam holds the batch whose write it sees while armed, until released,
// and then reports fail (nil: the write's own result).
type holdSeam struct {
	armed   atomic.Bool
	held    chan struct{} // closed when a batch is held
	release chan struct{}
	fail    error
}

func newHoldSeam() *holdSeam {
	return &holdSeam{held: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdSeam) written() error {
	if !h.armed.CompareAndSwap(true, false) {
		return nil
	}
	close(h.held)
	<-h.release
	return h.fail
}

// TestGroupCommitPipelinesCheckpoints: while one batch is being written,
// checkpoints that arrive are run into the next batch at once (not after
// the write), and when both batches land every checkpoint is there, each
// chain is linear and the trail verifies.
func TestGroupCommitPipelinesCheckpoints(t *testing.T) {
	seam := newHoldSeam()
	obs := &batchObserver{}
	e := openTest(t, func(c *Config) { c.written = seam.written; c.Observer = obs })
	const n = 6
	ws := make([]string, n+1)
	for i := range ws {
		ws[i] = newWorker(t, e).ID
	}
	settled(t, e) // no batch in flight: the next one is held
	seam.armed.Store(true)
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	wg.Add(1)
	go func() { defer wg.Done(); _, errs[0] = e.CreateCheckpoint(ctx, ws[0], cpReq(nil, "provisional")) }()
	<-seam.held
	before := e.pipelinedOps.Load()
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = e.CreateCheckpoint(ctx, ws[i], cpReq(nil, "provisional")) }()
	}
	// All n run while the first batch is still held in flight.
	waitFor(t, "checkpoints run behind the held batch", func() bool { return e.pipelinedOps.Load()-before == n })
	if got := e.Trail().Len(); got == 0 {
		t.Fatal("empty trail")
	}
	close(seam.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
	}
	for i := range ws {
		if list := listCheckpoints(t, e, ws[i]); len(list) != 1 {
			t.Fatalf("workspace %d: %d checkpoints, want 1", i, len(list))
		}
	}
	obs.mu.Lock()
	ops := append([]int(nil), obs.ops...)
	obs.mu.Unlock()
	if total := sum(ops); total < n+1 {
		t.Fatalf("batches %v hold %d operations, want at least %d", ops, total, n+1)
	}
	verify(t, e)
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// TestGroupCommitPipelinedBatchFailsWithTheOneBelow: a batch built on one
// whose write then fails is never written: its callers get unavailable,
// and after a restart none of its checkpoints exists and the trail
// verifies.
func TestGroupCommitPipelinedBatchFailsWithTheOneBelow(t *testing.T) {
	dir := t.TempDir()
	seam := newHoldSeam()
	seam.fail = errors.New("injected: write reported failed")
	e := openEngineAt(t, dir, func(c *Config) {
		c.failAt = func(step string) error {
			if step == "segment" { // the batch's durable write: its block
				return seam.written()
			}
			return nil
		}
	})
	w1, w2 := newWorker(t, e), newWorker(t, e)
	settled(t, e) // no batch in flight: the next one is held
	seam.armed.Store(true)
	var wg sync.WaitGroup
	var e1, e2 error
	wg.Add(2)
	go func() { defer wg.Done(); _, e1 = e.CreateCheckpoint(ctx, w1.ID, cpReq(nil, "provisional")) }()
	<-seam.held
	before := e.pipelinedOps.Load()
	go func() { defer wg.Done(); _, e2 = e.CreateCheckpoint(ctx, w2.ID, cpReq(nil, "provisional")) }()
	waitFor(t, "the second checkpoint run behind the held batch", func() bool { return e.pipelinedOps.Load() > before })
	close(seam.release)
	wg.Wait()
	if Code(e1) != wire.CodeUnavailable || Code(e2) != wire.CodeUnavailable {
		t.Fatalf("got %v and %v; want unavailable for both", e1, e2)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngineAt(t, dir)
	if list := listCheckpoints(t, e, w1.ID); len(list) != 0 {
		t.Fatalf("the failed batch was written: %d checkpoints", len(list))
	}
	if list := listCheckpoints(t, e, w2.ID); len(list) != 0 {
		t.Fatalf("the batch built on the failed one was written: %d checkpoints", len(list))
	}
	verify(t, e)
}

// TestGroupCommitFreshSnapshotForQueuedEnvelopes: an operation that reads
// Badger (resuming a workspace drains its envelope queue) runs only on a
// snapshot that has the batch still being written: an envelope queued by
// that batch is delivered, not left behind.
func TestGroupCommitFreshSnapshotForQueuedEnvelopes(t *testing.T) {
	seam := newHoldSeam()
	e := openTest(t, func(c *Config) { c.written = seam.written })
	w := newWorker(t, e)
	drainInbox(t, e, w.ID)
	if _, err := e.Suspend(ctx, e.Root(), w.ID, ""); err != nil {
		t.Fatal(err)
	}
	settled(t, e) // no batch in flight: the next one is held
	seam.armed.Store(true)
	var wg sync.WaitGroup
	var sendErr, resumeErr error
	wg.Add(2)
	go func() { defer wg.Done(); _, sendErr = e.SendEnvelope(ctx, e.Root(), envBody(w.ID, "feedback", "")) }()
	<-seam.held
	received := e.receivedOps.Load()
	go func() { defer wg.Done(); _, resumeErr = e.Resume(ctx, e.Root(), w.ID) }()
	// Resume reaches the committer while the send's batch is held in
	// flight.
	waitFor(t, "the committer to receive Resume", func() bool { return e.receivedOps.Load() > received })
	close(seam.release)
	wg.Wait()
	if sendErr != nil || resumeErr != nil {
		t.Fatalf("send: %v, resume: %v", sendErr, resumeErr)
	}
	if got := drainInbox(t, e, w.ID); len(got) != 1 {
		t.Fatalf("inbox after resume = %v, want the queued envelope", got)
	}
	verify(t, e)
}

package runtime

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wacpd/wacpd/wire"
)

// batchObserver records the operations of each durable commit.
type batchObserver struct {
	mu  sync.Mutex
	ops []int
}

func (o *batchObserver) Committed(d time.Duration, ops int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops = append(o.ops, ops)
}

func (o *batchObserver) Rejected(string) {}

// holdFirstCommit makes the next batch's commit wait for release; blocked
// is closed once it waits.
func holdFirstCommit(t testing.TB, e *Engine) (blocked <-chan struct{}, release func()) {
	rel, blk := make(chan struct{}), make(chan struct{})
	var once sync.Once
	settled(t, e)
	e.cfg.failAt = func(step string) error {
		if step == "commit" {
			once.Do(func() { close(blk); <-rel })
		}
		return nil
	}
	return blk, func() { close(rel) }
}

// waitQueued waits until n requests are queued for the committer.
func waitQueued(t *testing.T, e *Engine, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d requests queued behind the blocked batch", n), func() bool { return len(e.queue.C) >= n })
}

// TestGroupCommit: operations that arrive while a batch is being written
// are committed together in the next batch, with one durable write, and
// each one's effect is there: every chain has its checkpoint, the trail
// verifies. A rejected operation in the batch fails alone.
func TestGroupCommit(t *testing.T) {
	obs := &batchObserver{}
	e := openTest(t, func(c *Config) { c.Observer = obs })
	const n = 8
	ws := make([]string, n)
	for i := range ws {
		ws[i] = newWorker(t, e).ID
	}
	blocked, release := holdFirstCommit(t, e)
	// The first operation's batch blocks in its commit...
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	wg.Add(1)
	go func() { defer wg.Done(); _, errs[n] = e.CreateCheckpoint(ctx, ws[0], cpReq(nil, "provisional")) }()
	<-blocked
	// ...while n more arrive: n-1 good ones and one with a stale parent.
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = e.CreateCheckpoint(ctx, ws[i], cpReq(nil, "provisional")) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); _, errs[0] = e.CreateCheckpoint(ctx, ws[1], cpReq(ptr("stale"), "final")) }()
	waitQueued(t, e, n)
	obs.mu.Lock()
	before := len(obs.ops)
	obs.mu.Unlock()
	release()
	wg.Wait()
	settled(t, e)
	e.cfg.failAt = nil

	for i := 1; i <= n; i++ {
		if errs[i] != nil {
			t.Fatalf("operation %d: %v", i, errs[i])
		}
	}
	if Code(errs[0]) != wire.CodeInvalidParent {
		t.Fatalf("the stale-parent checkpoint: %v, want invalid_parent alone", errs[0])
	}
	obs.mu.Lock()
	after := obs.ops[before:]
	obs.mu.Unlock()
	// The blocked batch (1 op), then one batch with the n queued operations.
	if len(after) != 2 || after[0] != 1 || after[1] != n {
		t.Fatalf("batches after the block = %v, want [1 %d]", after, n)
	}
	for i := range ws {
		list, err := e.ListCheckpoints(ctx, e.Root(), ws[i], "", 0)
		if err != nil || len(list) != 1 {
			t.Fatalf("workspace %d: %d checkpoints, %v; want 1", i, len(list), err)
		}
	}
	verify(t, e)
}

// TestGroupCommitFailureFailsTheBatch: when the durable write of a batch
// fails, every operation in it gets unavailable and nothing of it exists.
func TestGroupCommitFailureFailsTheBatch(t *testing.T) {
	e := openTest(t)
	w1, w2 := newWorker(t, e), newWorker(t, e)
	before := e.Trail().Len()
	release := make(chan struct{})
	blocked := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	settled(t, e)
	e.cfg.failAt = func(step string) error {
		if step != "commit" {
			return nil
		}
		mu.Lock()
		calls++
		c := calls
		mu.Unlock()
		if c == 1 {
			close(blocked)
			<-release
			return nil
		}
		return errors.New("disk full")
	}
	var wg sync.WaitGroup
	var e1, e2, e3 error
	wg.Add(1)
	go func() { defer wg.Done(); _, e1 = e.CreateCheckpoint(ctx, w1.ID, cpReq(nil, "provisional")) }()
	<-blocked
	wg.Add(2)
	go func() { defer wg.Done(); _, e2 = e.CreateCheckpoint(ctx, w2.ID, cpReq(nil, "provisional")) }()
	go func() { defer wg.Done(); _, e3 = e.EmitSignal(ctx, w2.ID, []byte(`{"type":"ready"}`)) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(e.queue.C) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("requests did not queue")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	settled(t, e)
	e.cfg.failAt = nil
	if e1 != nil {
		t.Fatalf("first batch: %v", e1)
	}
	if Code(e2) != wire.CodeUnavailable || Code(e3) != wire.CodeUnavailable {
		t.Fatalf("failed batch: %v, %v; want unavailable for both", e2, e3)
	}
	if list, _ := e.ListCheckpoints(ctx, e.Root(), w2.ID, "", 0); len(list) != 0 {
		t.Fatalf("a checkpoint of the failed batch exists")
	}
	// Degraded mode ends once a write succeeds; then work is admitted.
	waitAdmitting(t, e)
	if _, err := e.CreateCheckpoint(ctx, w2.ID, cpReq(nil, "provisional")); err != nil {
		t.Fatalf("after the failed batch: %v", err)
	}
	if e.Trail().Len() <= before {
		t.Fatal("trail did not grow")
	}
	verify(t, e)
}

// TestBatchFitsBadgerTransaction: large checkpoints queued behind a batch
// are committed in as many batches as Badger's transaction limit needs.
// Before, the batch was bounded by request bytes only (8 MiB, above the
// limit of 15% of a memtable): the write failed with "Txn is too big" and
// put the engine in degraded mode, so that any agent could stop it.
func TestBatchFitsBadgerTransaction(t *testing.T) {
	obs := &batchObserver{}
	e := openVerified(t, func(c *Config) { c.Observer = obs })
	const n = 24
	ws := make([]string, n)
	for i := range ws {
		ws[i] = newWorker(t, e).ID
	}
	blocked, release := holdFirstCommit(t, e)
	var wg sync.WaitGroup
	errs := make([]error, n)
	big := strings.Repeat("0123456789abcdef", 400_000/16) // 400 KB, kept in the LSM tree (under the value threshold)
	req := cpBody(nil, func(m map[string]any) { m["payload"].(map[string]any)["content"] = big })
	wg.Add(1)
	go func() { defer wg.Done(); _, errs[0] = e.CreateCheckpoint(ctx, ws[0], req) }()
	<-blocked
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = e.CreateCheckpoint(ctx, ws[i], req) }()
	}
	waitQueued(t, e, n-1)
	obs.mu.Lock()
	before := len(obs.ops)
	obs.mu.Unlock()
	release()
	wg.Wait()
	settled(t, e)
	e.cfg.failAt = nil
	for i, err := range errs {
		if err != nil {
			t.Fatalf("checkpoint %d of %d (400 KB each): %v", i, n, err)
		}
	}
	if _, err := e.CreateCheckpoint(ctx, newWorker(t, e).ID, cpReq(nil, "provisional")); err != nil {
		t.Fatalf("a checkpoint after the large ones: %v", err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	// The blocked batch, then the n-1 queued checkpoints (9.2 MB) split
	// into batches under the limit.
	after, sum := obs.ops[before:before+1], 0
	for _, ops := range obs.ops[before+1:] {
		if sum == n-1 {
			break
		}
		after, sum = append(after, ops), sum+ops
	}
	if after[0] != 1 || sum != n-1 || len(after) < 3 {
		t.Errorf("batches after the block = %v, want [1] and the %d queued ones split", after, n-1)
	}
}

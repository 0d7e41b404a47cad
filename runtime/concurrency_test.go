package runtime

import (
	"errors"
	"sync"
	"testing"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
)

// TestConcurrentAppendSameHead races many writers on the same chain head,
// round after round: exactly one wins each round, every other writer gets
// invalid_parent (and a checkpoint_rejected entry), and the chain stays
// linear.
func TestConcurrentAppendSameHead(t *testing.T) {
	const writers, rounds = 16, 12
	e := openTest(t)
	w := newWorker(t, e)
	var head *string
	for r := 0; r < rounds; r++ {
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			mu      sync.Mutex
			winners []checkpointchain.Checkpoint
			losers  int
			other   []error
		)
		for i := 0; i < writers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				cp, err := e.CreateCheckpoint(ctx, w.ID, cpReq(head, "provisional"))
				mu.Lock()
				defer mu.Unlock()
				var rj *checkpointchain.Rejection
				switch {
				case err == nil:
					winners = append(winners, cp)
				case errors.As(err, &rj) && rj.Reason == checkpointchain.ReasonInvalidParent:
					losers++
				default:
					other = append(other, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 || losers != writers-1 || len(other) != 0 {
			t.Fatalf("round %d: %d winners, %d invalid_parent, other errors %v; want 1, %d, none",
				r, len(winners), losers, other, writers-1)
		}
		head = &winners[0].ID
	}
	list, err := e.ListCheckpoints(ctx, e.Root(), w.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != rounds {
		t.Fatalf("chain has %d checkpoints, want %d", len(list), rounds)
	}
	prev := ""
	for i, cp := range list {
		if cp.ParentID() != prev {
			t.Fatalf("checkpoint %d parent = %q, want %q: chain not linear", i, cp.ParentID(), prev)
		}
		prev = cp.ID
	}
	if prev != *head {
		t.Fatalf("chain ends at %s, want the last winner %s", prev, *head)
	}
	rejected, _, err := e.Trail().Read(ctx, trail.Query{EventType: trail.EventCheckpointRejected, Limit: trail.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) != rounds*(writers-1) {
		t.Fatalf("%d checkpoint_rejected entries, want %d", len(rejected), rounds*(writers-1))
	}
	verify(t, e)
}

// TestConcurrentWorkspacesIndependent runs writers on separate workspaces at
// once: every chain gets all its checkpoints, in order.
func TestConcurrentWorkspacesIndependent(t *testing.T) {
	const workers, each = 8, 10
	e := openTest(t)
	ids := make([]string, workers)
	for i := range ids {
		ids[i] = newWorker(t, e).ID
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var head *string
			for j := 0; j < each; j++ {
				cp, err := e.CreateCheckpoint(ctx, id, cpReq(head, "provisional"))
				if err != nil {
					errs <- err
					return
				}
				head = &cp.ID
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		list, err := e.ListCheckpoints(ctx, e.Root(), id, "", 0)
		if err != nil || len(list) != each {
			t.Fatalf("workspace %s: %d checkpoints, %v; want %d", id, len(list), err, each)
		}
	}
	verify(t, e)
}

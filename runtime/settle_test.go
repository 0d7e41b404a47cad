package runtime

import (
	"sync"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

// TestReadsWaitForTheCommitOfWhatWasAnswered: a checkpoint's caller is
// answered once its batch's block is durable, before Badger's commit of
// the batch lands. A read of what was answered made in that window waits
// for the commit (settle) and finds it: the checkpoint by id, as the head,
// in the list, and its entries in the trail.
func TestReadsWaitForTheCommitOfWhatWasAnswered(t *testing.T) {
	held, holdC := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(holdC) })
	defer release() // a failing test must not leave the commit held: Close waits for it
	var once sync.Once
	var armed bool
	var mu sync.Mutex
	e := openTest(t, func(c *Config) {
		c.failAt = func(step string) error {
			mu.Lock()
			hold := armed && step == "badger"
			mu.Unlock()
			if hold {
				once.Do(func() { close(held); <-holdC })
			}
			return nil
		}
	})
	w := newWorker(t, e)
	settled(t, e)
	mu.Lock()
	armed = true
	mu.Unlock()
	cp, err := e.CreateCheckpoint(ctx, w.ID, cpReq(nil, "provisional"))
	if err != nil {
		t.Fatal(err)
	}
	<-held // Badger's commit of the answered batch waits for release
	trailLen := e.Trail().Len()

	type result struct {
		name string
		ok   bool
		err  error
	}
	results := make(chan result, 4)
	waits := e.settleWaits.Load()
	go func() {
		got, err := e.GetCheckpoint(ctx, e.Root(), cp.ID)
		results <- result{"get", err == nil && got.ID == cp.ID, err}
	}()
	go func() {
		got, err := e.Head(ctx, e.Root(), w.ID, false)
		results <- result{"head", err == nil && got.ID == cp.ID, err}
	}()
	go func() {
		list, err := e.ListCheckpoints(ctx, e.Root(), w.ID, "", 0)
		results <- result{"list", err == nil && len(list) == 1 && list[0].ID == cp.ID, err}
	}()
	go func() {
		entries, _, err := e.ReadTrail(ctx, e.Root(), trail.Query{After: "", Limit: trail.MaxLimit})
		results <- result{"trail", err == nil && uint64(len(entries)) == trailLen, err}
	}()
	waitFor(t, "the four reads to wait for the commit, or to answer", func() bool {
		return e.settleWaits.Load()-waits == 4 || len(results) > 0
	})
	if len(results) > 0 {
		r := <-results
		t.Fatalf("%s answered before the commit landed: ok %v, %v", r.name, r.ok, r.err)
	}
	release()
	for range 4 {
		if r := <-results; !r.ok {
			t.Errorf("%s after the commit: %v", r.name, r.err)
		}
	}
}

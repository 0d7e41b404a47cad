package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/signal"
)

// TestDurableConsumerAcrossRestarts: a coordinator's durable consumer sees
// the signal of every acknowledged checkpoint at least once, although the
// daemon is killed (SIGKILL) twice while the worker writes and the
// coordinator is not watching.
func TestDurableConsumerAcrossRestarts(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	d := startDaemon(t, dir)
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	// Create the durable consumer, then stop watching: Watch returns once
	// its context ends.
	wctx, stop := context.WithTimeout(ctx, time.Second)
	if err := coord.Watch(wctx, client.WatchOptions{Durable: "coord", DeliverAll: true}, func(signal.Signal) error {
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stop()
	_, tok := newWorkerToken(t, ctx, coord, d.url, true, "")
	list, err := coord.ListWorkspaces(ctx, coord.Workspace(), "")
	if err != nil || len(list) != 1 {
		t.Fatalf("ListWorkspaces = %v, %v", list, err)
	}
	ws := list[0].ID
	coord.Close()

	acked := map[string]bool{}
	var head *string
	for round := 0; round < 3; round++ {
		w := dial(t, ctx, client.Options{URL: d.url, Token: tok, Workspace: ws})
		for i := 0; i < 4; i++ {
			cp, err := w.CreateCheckpoint(ctx, artifact(head, "provisional", "step"))
			if err != nil {
				t.Fatal(err)
			}
			head, acked[cp.ID] = &cp.ID, true
		}
		w.Close()
		if round < 2 {
			d.kill()
			d = startDaemon(t, dir)
		}
	}

	coord = dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	seen := map[string]bool{}
	wctx, stop = context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	err = coord.Watch(wctx, client.WatchOptions{Durable: "coord"}, func(s signal.Signal) error {
		if s.Type == "checkpoint" && s.Ref != nil {
			seen[*s.Ref] = true
		}
		if len(seen) == len(acked) {
			stop()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := range acked {
		if !seen[id] {
			t.Errorf("the durable consumer never saw the signal of acknowledged checkpoint %s", id)
		}
	}
	d.stop()
}

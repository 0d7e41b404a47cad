package runtime

import (
	"context"
	"errors"
	goruntime "runtime"
	"sync"
	"testing"

	"github.com/wacpd/wacpd/workspace"
)

// TestCloseConcurrently: Close from several goroutines at once closes the
// engine once and every call returns the same result. Each Close used to
// run the whole close when it found the engine not yet closed, so two
// closed the inbox wake-up channels (and the committer's stop channel)
// twice: a panic.
func TestCloseConcurrently(t *testing.T) {
	for range 5 {
		e := openTest(t)
		// An agent waiting on an empty inbox: Close wakes it.
		w := newWorker(t, e)
		var wake <-chan struct{}
		for wake == nil {
			env, ch, err := e.popInbox(ctx, w.ID)
			if err != nil {
				t.Fatal(err)
			}
			if env == nil {
				wake = ch
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = e.Close() }()
		}
		wg.Wait()
		<-wake
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Close #%d = %v", i, err)
			}
		}
		if _, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`)); !errors.Is(err, ErrClosed) {
			t.Fatalf("CreateWorkspace after Close = %v, want ErrClosed", err)
		}
	}
}

// TestContextEndsAWaitNotACommit: a write whose context ends before the
// committer takes it returns ErrNotTaken with the context's cause, and
// never runs; one the committer has taken completes.
func TestContextEndsAWaitNotACommit(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e := openTest(t, func(c *Config) {
		c.failAt = func(step string) error {
			if step == "extra" {
				once.Do(func() { close(held); <-hold })
			}
			return nil
		}
	})
	count := func() int {
		ws, err := e.ListWorkspaces(ctx, e.Root(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		return len(ws)
	}
	before, root := count(), e.Root()
	// A: a workspace whose grant hook holds the committer inside its
	// operation.
	aDone := make(chan error, 1)
	go func() {
		_, err := e.CreateWorkspaceGranting(ctx, root, []byte(`{"role":"worker"}`), func(Grants, *workspace.Workspace) error { return nil })
		aDone <- err
	}()
	<-held
	// B: queued behind A, abandoned when its context ends.
	bctx, cancel := context.WithCancelCause(ctx)
	bDone := make(chan error, 1)
	go func() {
		_, err := e.CreateWorkspace(bctx, root, []byte(`{"role":"worker"}`))
		bDone <- err
	}()
	// The committer is inside A: B waits in its queue.
	for len(e.queue.C) == 0 {
		goruntime.Gosched()
	}
	cause := errors.New("the caller gave up")
	cancel(cause)
	err := <-bDone
	if !errors.Is(err, ErrNotTaken) || !errors.Is(err, cause) {
		t.Fatalf("CreateWorkspace with its context ended while queued = %v, want ErrNotTaken wrapping the cause", err)
	}
	close(hold)
	if err := <-aDone; err != nil {
		t.Fatalf("the operation the committer had taken: %v", err)
	}
	// Only A's workspace was created.
	if got := count(); got != before+1 {
		t.Fatalf("%d workspaces after, %d before: want only the taken operation's", got, before)
	}
}

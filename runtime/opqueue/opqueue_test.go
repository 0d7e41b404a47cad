package opqueue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wacpd/wacpd/runtime/opqueue"
)

var (
	errClosed   = errors.New("closed")
	errNotTaken = errors.New("not taken")
)

func newQueue() (q *opqueue.Queue, stop, stopped chan struct{}) {
	stop, stopped = make(chan struct{}), make(chan struct{})
	return &opqueue.Queue{C: make(chan *opqueue.Op, 4), Stop: stop, Stopped: stopped, Closed: errClosed, NotTaken: errNotTaken}, stop, stopped
}

// submit runs q.Submit(ctx, op) on a goroutine and returns its result's
// channel.
func submit(ctx context.Context, q *opqueue.Queue, op *opqueue.Op) <-chan error {
	res := make(chan error, 1)
	go func() { res <- q.Submit(ctx, op) }()
	return res
}

// TestSubmitGetsTheOutcome: the caller gets what the op returned, or the
// error its batch was answered with.
func TestSubmitGetsTheOutcome(t *testing.T) {
	q, _, _ := newQueue()
	errOp, errBatch := errors.New("op"), errors.New("batch")
	for _, tt := range []struct {
		fnErr, batchErr, want error
	}{{nil, nil, nil}, {errOp, nil, errOp}, {nil, errBatch, errBatch}, {errOp, errBatch, errBatch}} {
		op := opqueue.New(func() error { return tt.fnErr }, 10, false)
		res := submit(context.Background(), q, op)
		got := <-q.C
		if !got.Take() {
			t.Fatal("Take of a queued op = false")
		}
		got.Err = got.Fn()
		got.Answer(tt.batchErr)
		if err := <-res; err != tt.want {
			t.Errorf("op %v, batch %v: Submit = %v, want %v", tt.fnErr, tt.batchErr, err, tt.want)
		}
	}
}

// TestAbandonedBeforeTaken: a caller whose context ends before the
// committer takes its op gets NotTaken with the cause, and the op does not
// run.
func TestAbandonedBeforeTaken(t *testing.T) {
	q, _, _ := newQueue()
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("caller left")
	op := opqueue.New(func() error { t.Error("an abandoned op ran"); return nil }, 0, false)
	res := submit(ctx, q, op)
	got := <-q.C // handed over, not taken yet
	cancel(cause)
	err := <-res
	if !errors.Is(err, errNotTaken) || !errors.Is(err, cause) {
		t.Errorf("Submit = %v, want NotTaken wrapping the cause", err)
	}
	if got.Take() {
		t.Error("Take of an abandoned op = true")
	}
}

// TestTakenRunsToCompletion: once taken, an op's caller waits for its
// outcome even if its context ends.
func TestTakenRunsToCompletion(t *testing.T) {
	q, _, _ := newQueue()
	ctx, cancel := context.WithCancel(context.Background())
	op := opqueue.New(func() error { return nil }, 0, false)
	res := submit(ctx, q, op)
	got := <-q.C
	if !got.Take() || !got.Take() {
		t.Fatal("Take of a queued op, then again = false")
	}
	cancel()
	select {
	case err := <-res:
		t.Fatalf("Submit returned %v before its taken op was answered", err)
	default:
	}
	errOp := errors.New("done")
	got.Answer(errOp)
	if err := <-res; err != errOp {
		t.Errorf("Submit = %v, want the op's outcome", err)
	}
}

// TestStopped: after Stop nothing is handed over; an op handed over but
// not answered when the committer stopped never ran.
func TestStopped(t *testing.T) {
	q, stop, stopped := newQueue()
	op := opqueue.New(func() error { return nil }, 0, false)
	res := submit(context.Background(), q, op)
	<-q.C
	close(stopped)
	if err := <-res; err != errClosed {
		t.Errorf("Submit of an op the stopped committer never answered = %v, want Closed", err)
	}
	q.C = make(chan *opqueue.Op) // nobody receives
	close(stop)
	if err := q.Submit(context.Background(), opqueue.New(nil, 0, false)); err != errClosed {
		t.Errorf("Submit after Stop = %v, want Closed", err)
	}
}

func TestCost(t *testing.T) {
	if got := opqueue.New(nil, 1000, false).Cost(); got != 2000+opqueue.Overhead {
		t.Errorf("Cost of 1000 bytes = %d", got)
	}
	if got := opqueue.BatchLimit(4 << 20); got != 3<<20 {
		t.Errorf("BatchLimit(4 MiB) = %d, want 3 MiB", got)
	}
}

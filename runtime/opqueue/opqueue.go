// Package opqueue is the hand-off between the engine's callers and its
// committer goroutine (runtime/committer.go): an operation waits in a
// Queue until the committer takes it, or until its caller gives up first
// (its context ended), whichever comes first; once taken it runs to
// completion and its caller gets its outcome. It also says what an
// operation may cost the Badger transaction of the batch it joins, which
// bounds batches.
package opqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// An Op's states: queued until the committer takes it or its caller
// abandons it; whichever comes first wins.
const (
	queued int32 = iota
	taken
	abandoned
)

// Op is one operation waiting for the committer.
type Op struct {
	Fn        func() error
	Size      int  // the request's bytes (Cost)
	Pipelined bool // may run in a batch built while another is written
	Probe     bool // the degraded-mode probe (runtime/degraded.go)
	// Urgent ops go through Queue.Urgent, which the committer empties
	// before C: they run before the ops already waiting (WACP Workspace
	// §7, abort and external failure precedence).
	Urgent bool
	// Err is the outcome the caller gets: set by the committer before
	// Answer, or by Answer.
	Err   error
	state atomic.Int32
	done  chan struct{}
}

// New returns an Op that runs fn, for a request of size bytes.
func New(fn func() error, size int, pipelined bool) *Op {
	return &Op{Fn: fn, Size: size, Pipelined: pipelined, done: make(chan struct{})}
}

// Take marks op taken by the committer and reports whether it may run:
// false when its caller abandoned it first. Taking an op twice is allowed
// (one carried from a batch to the next is taken already).
func (op *Op) Take() bool {
	return op.state.Load() == taken || op.state.CompareAndSwap(queued, taken)
}

// Answer ends op's wait: its caller gets err if err is not nil, else
// op.Err. Call it once per taken op.
func (op *Op) Answer(err error) {
	if err != nil {
		op.Err = err
	}
	close(op.done)
}

// AnswerAll answers each of ops with err (see Answer).
func AnswerAll(ops []*Op, err error) {
	for _, op := range ops {
		op.Answer(err)
	}
}

// Queue hands Ops to the committer.
type Queue struct {
	// C is what the committer receives Ops from; Urgent returns the
	// priority lane, for Ops marked Urgent, which the committer empties
	// before C.
	C chan *Op
	// Stop is closed when the engine closes: nothing more is handed over.
	// Stopped is closed when the committer has stopped; it has answered
	// every Op it took by then.
	Stop, Stopped <-chan struct{}
	// Closed is the error of a Submit after Stop; NotTaken wraps the
	// context's cause when the context ended before the committer took
	// the Op.
	Closed, NotTaken error

	urgentOnce sync.Once
	urgent     chan *Op // made at first use, as large as C
}

// Urgent returns the priority lane: the committer receives the Ops marked
// Urgent from it, and takes them before any waiting in C.
func (q *Queue) Urgent() chan *Op {
	q.urgentOnce.Do(func() { q.urgent = make(chan *Op, cap(q.C)) })
	return q.urgent
}

// Submit hands op to the committer and waits for its answer. Until the
// committer takes op, ctx can end the wait (the operation then never runs);
// once taken, op runs to completion and its outcome is returned whatever
// ctx does, since a commit cannot be called back half-way.
func (q *Queue) Submit(ctx context.Context, op *Op) error {
	lane := q.C
	if op.Urgent {
		lane = q.Urgent()
	}
	select {
	case lane <- op:
	case <-q.Stop:
		return q.Closed
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", q.NotTaken, context.Cause(ctx))
	}
	cancelled := ctx.Done()
	for {
		select {
		case <-op.done:
			return op.Err
		case <-cancelled:
			if op.state.CompareAndSwap(queued, abandoned) {
				return fmt.Errorf("%w: %w", q.NotTaken, context.Cause(ctx))
			}
			cancelled = nil // taken: it completes, and so does the wait
		case <-q.Stopped:
			// The committer stopped; it answers every op it took before
			// stopping, so one still unanswered was never run.
			select {
			case <-op.done:
				return op.Err
			default:
				return q.Closed
			}
		}
	}
}

// Overhead is what Cost allows an operation beyond twice its request.
// A checkpoint of a 1 KiB payload (a 1.2 KB request) counts 6.6 KB in
// Badger's transaction (measured: its object, three trail entries with
// their indexes, nodes and heads, its chain records, the workspace record,
// the outbox), a 300 KB one 306 KB: the stored payload is at most the
// request's bytes.
const Overhead = 16 << 10

// Cost is what op may add to its batch's Badger transaction, at most.
func (op *Op) Cost() int64 { return 2*int64(op.Size) + Overhead }

// BatchLimit is how much of Badger's transaction limit max
// (db.MaxBatchSize: 15% of a memtable, 4.8 MiB with 32 MiB memtables) a
// batch may fill: three quarters, as Cost is an estimate.
func BatchLimit(max int64) int64 { return max / 4 * 3 }

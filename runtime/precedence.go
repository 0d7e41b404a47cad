package runtime

import (
	"context"

	"github.com/wacpd/wacpd/runtime/opqueue"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/workspace"
)

// Precedence (WACP Workspace §7). Operations run one at a time on the
// committer, in the order they reach it (invariant 1); while a batch is
// being written the next ones wait in the queue. A coordinator's abort
// (invariant 2) and the runtime's and protocol's failures — a timeout, a
// compute budget or a grace period running out (invariant 3) — do not wait
// behind them: they go through the queue's urgent lane, which the
// committer empties first, so they run before the agent signals already
// waiting. An agent signal that then finds its workspace terminal is
// recorded (signal_emitted, with no delivery and no effect) and refused
// with invalid_transition (signals.go, lateSignal).

// runUrgent is run for an operation that takes precedence over the ones
// waiting in the queue.
func (e *Engine) runUrgent(ctx context.Context, size int, fn func() error) error {
	op := opqueue.New(fn, size, false)
	op.Urgent = true
	return e.queue.Submit(ctx, op)
}

// runLane is runAs through the urgent lane when urgent is set.
func runLane[T any](ctx context.Context, e *Engine, urgent bool, size int, fn func() (T, error)) (T, error) {
	if !urgent {
		return runAs(ctx, e, size, fn)
	}
	var out T
	err := e.runUrgent(ctx, size, func() (err error) {
		out, err = fn()
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// waiting returns, without blocking, the urgent operation waiting, else
// the one held back for an earlier urgent one, else nil.
func (c *committer) waiting() *opqueue.Op {
	select {
	case r := <-c.e.queue.Urgent():
		c.e.receivedOps.Add(1)
		return r
	default:
	}
	r := c.held
	c.held = nil
	return r
}

// before returns the operation to run now, r having just been received
// from the ordinary lane: an urgent one that arrived meanwhile, r then
// held back for the next turn; else r.
func (c *committer) before(r *opqueue.Op) *opqueue.Op {
	select {
	case u := <-c.e.queue.Urgent():
		c.e.receivedOps.Add(1)
		c.held = r
		return u
	default:
		return r
	}
}

// lateSignal records the signal req from the agent of terminal workspace w
// (an abort, a failure or a timeout was processed first: Workspace §7
// invariants 2, 3 and 6) and refuses it: signal_emitted, system-level as
// every entry about a terminal workspace, with no delivery and no state
// effect. Caller runs on the committer.
func (e *Engine) lateSignal(w *workspace.Workspace, req agentsignal.Request) error {
	err := e.commit(func(t *tx) error {
		_, err := t.emitTo(w, nil, taxonomy.SignalType(req.Type), req.Reason, req.Ref, e.actorOf(w))
		return err
	})
	if err != nil {
		return err
	}
	return agentsignal.Reject(agentsignal.ReasonInvalidTransition,
		"workspace %s is %s: the %s signal is recorded and has no effect", w.ID, w.State, req.Type)
}

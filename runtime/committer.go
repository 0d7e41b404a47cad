package runtime

import (
	"fmt"
	"time"
)

// Group commit. Every operation that changes anything runs on the committer
// goroutine, which owns the open batch: operations that arrive while the
// previous batch is being written are run one after another into one Badger
// transaction, each seeing the effects of those before it, and the batch is
// committed with one synchronous write. Each operation's caller is answered
// only after its batch is durable. An operation refused before it wrote
// anything (a protocol rejection) fails alone; one that fails after writing
// poisons the batch, and every operation of a failed batch gets
// unavailable. The trail's chains and Merkle tree are exactly as if the
// operations had committed one by one, in the order they ran.

// Bounds of one batch.
const (
	maxBatchOps   = 256
	maxBatchBytes = 8 << 20 // request bytes, well under Badger's transaction limit
)

// request is one operation waiting for the committer.
type request struct {
	fn   func() error
	size int
	err  error
	done chan struct{}
}

// openBatch is the batch the committer is filling.
type openBatch struct {
	tx       *tx
	poisoned error // set when an operation failed after writing
}

// run executes fn on the committer goroutine, with e.mu held and a batch
// open, and returns once fn's batch is durable (or failed). size is the
// request's byte size, to bound batches. fn must not call run.
func (e *Engine) run(size int, fn func() error) error {
	r := &request{fn: fn, size: size, done: make(chan struct{})}
	select {
	case e.reqs <- r:
	case <-e.stop:
		return ErrClosed
	}
	select {
	case <-r.done:
		return r.err
	case <-e.loopDone:
		// The committer stopped; it answers every request it took before
		// stopping, so one still unanswered was never run.
		select {
		case <-r.done:
			return r.err
		default:
			return ErrClosed
		}
	}
}

// loop is the committer goroutine.
func (e *Engine) loop() {
	defer close(e.loopDone)
	for {
		var first *request
		select {
		case first = <-e.reqs:
		case <-e.stop:
			return
		}
		e.runBatch(first)
	}
}

// runBatch runs first and whatever else is waiting as one batch, commits it
// and answers every request.
func (e *Engine) runBatch(first *request) {
	start := time.Now()
	txn := e.db.NewTransaction(true)
	defer txn.Discard()
	steps := 0
	e.mu.Lock()
	b := &openBatch{tx: newLayer(e, nil, txn, e.log.NewBatch(txn), &steps)}
	e.open = b
	batch := []*request{first}
	size := first.size
	first.err = first.fn()
	for b.poisoned == nil && len(batch) < maxBatchOps && size < maxBatchBytes {
		var r *request
		select {
		case r = <-e.reqs:
		default:
		}
		if r == nil {
			break
		}
		batch = append(batch, r)
		size += r.size
		r.err = r.fn()
	}
	e.open = nil
	e.mu.Unlock()

	err := b.poisoned
	if err == nil && steps > 0 {
		if err = b.tx.step("commit"); err == nil {
			if cerr := txn.Commit(); cerr != nil {
				e.lg.Error("commit failed", "err", cerr)
				err = fmt.Errorf("%w: %v", ErrStorage, cerr)
			}
		}
	}

	e.mu.Lock()
	if err == nil {
		b.tx.batch.Commit()
		e.apply(b.tx)
		if obs := e.cfg.observer; obs != nil && steps > 0 {
			obs.Committed(time.Since(start), len(batch))
			for _, r := range b.tx.reasons {
				obs.Rejected(r)
			}
		}
	}
	e.mu.Unlock()
	for _, r := range batch {
		if err != nil {
			r.err = err
		}
		close(r.done)
	}
}

// runAs is run for an operation with a result.
func runAs[T any](e *Engine, size int, fn func() (T, error)) (T, error) {
	var out T
	err := e.run(size, func() (err error) {
		out, err = fn()
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

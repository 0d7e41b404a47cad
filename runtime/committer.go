package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/runtime/opqueue"
)

// Group commit. Every operation that changes anything runs on the committer
// goroutine, which owns the open batch: operations that arrive while the
// previous batch is being written are run one after another into one Badger
// transaction, each seeing the effects of those before it, and the batch is
// committed with one synchronous write: its segment block (the batch's
// values and the redo record of its Badger writes), after which Badger's
// commit follows unsynced. Each operation's caller is answered once its
// batch is durable, when the block is synced (durableLocked; reads of
// Badger settle until the commit lands, settle.go). An operation refused
// before it wrote anything (a protocol rejection) fails alone; one that
// fails after writing poisons the batch, and every operation of a failed
// batch gets unavailable. The trail's chains and Merkle tree are exactly as if the
// operations had committed one by one, in the order they ran.
//
// Pipelining. While batch N is being written (its sync takes as long as
// building a large batch), the committer already builds batch N+1 on top of
// N's in-memory state. N+1's Badger transaction was opened before N was
// submitted, so its snapshot lacks N's writes; only operations that read
// nothing of N from Badger may run in it (pipelined: creating a checkpoint;
// an operation that finds it would need more returns errNeedFresh before
// writing and is moved to the next batch). Every other operation waits for
// N and runs in a batch whose snapshot has every earlier write. N+1 is
// submitted only after N has landed in Badger, so batches reach the disk
// and Badger in order; if N fails, N+1 fails with it.

// maxBatchOps bounds the operations of one batch; what they may add to its
// Badger transaction is bounded too (opqueue.Op.Cost, opqueue.BatchLimit).
const maxBatchOps = 256

// errNeedFresh is returned, before writing anything, by a pipelined
// operation that needs a batch whose snapshot has every earlier write.
var errNeedFresh = errors.New("runtime: operation needs a fresh batch")

// openBatch is a batch: filled by the committer, then written.
type openBatch struct {
	tx       *tx
	txn      *badger.Txn
	steps    int
	reqs     []*opqueue.Op
	start    time.Time
	stale    bool  // txn was opened before the batch in flight was submitted
	probe    bool  // the degraded-mode probe, alone in its batch
	poisoned error // set when an operation failed after writing
}

// flight is a batch whose transaction has been submitted. Its goroutine
// sends once on durable (its block is written and synced, or that failed),
// then once on done (Badger's commit's result, or the block's error again).
type flight struct {
	b        *openBatch
	durable  chan error
	done     chan error
	seen     bool // durable was received
	answered bool // its callers were answered when its block was durable
}

// durableC is the channel of f's next event when it is its block's.
func (f *flight) durableC() <-chan error {
	if f == nil || f.seen {
		return nil
	}
	return f.durable
}

// doneC is the channel of f's next event when it is Badger's commit's.
func (f *flight) doneC() <-chan error {
	if f == nil || !f.seen {
		return nil
	}
	return f.done
}

// run executes fn on the committer goroutine, with e.mu held and a batch
// open, and returns once fn's batch is durable (or failed). size is the
// request's byte size, to bound batches. fn must not call run.
func (e *Engine) run(ctx context.Context, size int, fn func() error) error {
	return e.queue.Submit(ctx, opqueue.New(fn, size, false))
}

// runPipelined is run for an operation that may run in a batch built while
// the previous one is being written (see above). fn returns errNeedFresh,
// before writing anything, if it finds it needs more.
func (e *Engine) runPipelined(ctx context.Context, size int, fn func() error) error {
	return e.queue.Submit(ctx, opqueue.New(fn, size, true))
}

// committer is the state of the committer goroutine.
type committer struct {
	e        *Engine
	space    spaceGuard
	inflight *flight
	spare    *badger.Txn // opened before inflight was submitted
	carry    *opqueue.Op // taken from the queue, for the next batch
	held     *opqueue.Op // received from C, held back for an urgent op (precedence.go)
	degraded *degradedState
	ackTimer *time.Timer // runs while confirmed outbox items wait for a batch
}

// loop is the committer goroutine.
func (e *Engine) loop() {
	c := &committer{e: e, space: newSpaceGuard(e.cfg)}
	defer close(e.loopDone)
	defer c.drain()
	for {
		r := c.carry
		c.carry = nil
		if r == nil {
			r = c.waiting()
		}
		if r == nil {
			select {
			case r = <-e.queue.Urgent():
				e.receivedOps.Add(1)
			case r = <-e.queue.C:
				e.receivedOps.Add(1)
				r = c.before(r)
			case err := <-c.inflight.durableC():
				c.durable(err)
				continue
			case err := <-c.inflight.doneC():
				c.land(err)
				continue
			case <-e.ackKick:
				if c.ackTimer == nil {
					c.ackTimer = time.NewTimer(ackFlushDelay)
				}
				continue
			case <-c.ackC():
				c.ackTimer = nil
				r = c.ackFlush()
			case <-c.probeC():
				var err error
				if r, err = c.probe(); err != nil {
					e.mu.Lock()
					c.failed(nil, err)
					e.mu.Unlock()
					continue
				}
			case <-e.stop:
				return
			}
		}
		if c.degraded == nil && !r.Probe {
			if err := c.space.check(false); err != nil {
				e.mu.Lock()
				c.failed(nil, err)
				e.mu.Unlock()
			}
		}
		if c.degraded != nil && !r.Probe {
			r.Answer(c.refusal())
			continue
		}
		c.runBatch(r)
	}
}

// drain finishes the batch in flight when the committer stops.
func (c *committer) drain() {
	c.landInflight()
	if c.spare != nil {
		c.spare.Discard()
		c.spare = nil
	}
	if c.degraded != nil && c.degraded.timer != nil {
		c.degraded.timer.Stop()
	}
	if c.ackTimer != nil {
		c.ackTimer.Stop()
	}
	c.e.flushAcks()
}

// ackC is the channel of the confirmed-signals flush, nil when none waits.
func (c *committer) ackC() <-chan time.Time {
	if c.ackTimer == nil {
		return nil
	}
	return c.ackTimer.C
}

// ackFlush is a request whose batch carries only the outbox mark of the
// pending confirmation (submit adds it to every batch it writes).
func (c *committer) ackFlush() *opqueue.Op {
	e := c.e
	return opqueue.New(func() error {
		if !e.acksPending() {
			return nil
		}
		return e.commit(func(t *tx) error { return t.step("outbox_ack") })
	}, 0, true)
}

// landInflight waits for the batch in flight, if any, to land (its block
// and then Badger's commit), and lands it.
func (c *committer) landInflight() error {
	f := c.inflight
	if f == nil {
		return nil
	}
	if !f.seen {
		c.durable(<-f.durable)
	}
	err := <-f.done
	c.land(err)
	return err
}

// durable handles the outcome of the block of the batch in flight.
func (c *committer) durable(err error) {
	c.e.mu.Lock()
	c.durableLocked(err)
	c.e.mu.Unlock()
}

// durableLocked is durable with e.mu held. Once the block is written and
// synced, the batch is durable (a start, or degraded mode's probe, redoes
// a block whose commit Badger lost): its effects become the engine's state
// and its callers are answered, without waiting for Badger's commit, which
// takes a round through Badger's write goroutine. Until that commit lands,
// reads of Badger wait for it (settle.go). When the block failed, land
// answers them.
func (c *committer) durableLocked(err error) {
	e, f := c.e, c.inflight
	f.seen = true
	if err != nil {
		return
	}
	b := f.b
	b.tx.batch.Commit()
	e.apply(b.tx)
	if obs := e.cfg.Observer; obs != nil {
		obs.Committed(time.Since(b.start), len(b.reqs))
		for _, r := range b.tx.reasons {
			obs.Rejected(r)
		}
	}
	// The open batch, if any, was built on b: it now reads the engine.
	if o := e.open; o != nil && o.tx.parent == b.tx {
		o.tx.parent = nil
		o.tx.batch.Detach()
	}
	f.answered = true
	e.unsettled = make(chan struct{})
	opqueue.AnswerAll(b.reqs, nil)
}

// land finishes the batch in flight with its commit's result. A batch
// whose callers were answered (durableLocked) settles, or, when Badger's
// commit failed, the engine enters degraded mode, whose probe redoes the
// block; a batch whose block failed fails, and its callers are answered
// with the error.
func (c *committer) land(err error) {
	c.e.mu.Lock()
	c.landLocked(err)
	c.e.mu.Unlock()
}

// landLocked is land with e.mu held.
func (c *committer) landLocked(err error) {
	e, f := c.e, c.inflight
	b := f.b
	c.inflight = nil
	if !f.answered {
		// Its block was not written (durable reported the error, which
		// done repeats): nothing of the batch took effect.
		if err == nil {
			err = fmt.Errorf("%w: a batch landed without its durable write", ErrStorage) // not reached
		}
		c.failed(b, err)
		opqueue.AnswerAll(b.reqs, err)
		return
	}
	if err != nil {
		// Its callers keep their answers; e.unsettled stays open until
		// the probe redoes the block.
		e.unsettledLost = true
		c.failed(b, err)
		return
	}
	e.settledLocked()
	if b.probe {
		c.recovered()
	}
}

// runBatch runs first and whatever else is waiting as one batch and submits
// it.
func (c *committer) runBatch(first *opqueue.Op) {
	e := c.e
	if c.inflight != nil && !first.Pipelined {
		c.landInflight()
		if c.degraded != nil && !first.Probe {
			// That write failed: nothing new is admitted.
			first.Answer(c.refusal())
			return
		}
	}
	b := &openBatch{start: time.Now(), probe: first.Probe}
	if c.inflight != nil {
		b.txn, b.stale = c.spare, true
	} else {
		if c.spare != nil {
			c.spare.Discard()
		}
		b.txn = e.db.NewTransaction(true)
	}
	c.spare = nil

	e.mu.Lock()
	wt := e.seg.Txn(b.txn)
	if c.inflight != nil {
		p := c.inflight.b.tx
		b.tx = newLayer(e, p, wt, e.log.NewBatchAfter(p.batch, wt), &b.steps)
	} else {
		b.tx = newLayer(e, nil, wt, e.log.NewBatch(wt), &b.steps)
	}
	b.tx.reloaded = b.probe
	e.open = b
	var cost int64
	for r := first; r != nil; r = c.next(b, cost) {
		// A carried request is taken already; any other is taken here,
		// unless its caller's context ended first.
		if !r.Take() {
			continue
		}
		r.Err = r.Fn()
		if errors.Is(r.Err, errNeedFresh) {
			r.Pipelined, r.Err = false, nil
			c.carry = r
			break
		}
		b.reqs = append(b.reqs, r)
		cost += r.Cost()
		if b.stale {
			e.pipelinedOps.Add(1)
		}
	}
	e.open = nil
	e.mu.Unlock()
	c.submit(b)
}

// next returns the next request for batch b, or nil when b is closed: it is
// full, or nothing is waiting and no batch is in flight, or the batch in
// flight landed, or the next request may not join b (it is carried over:
// it needs a fresh batch, or its cost would take b's past the limit).
// While a batch is in flight, b stays open for requests until it lands.
// Caller holds e.mu with e.open = b; next releases it while it waits.
// cost is what b's requests may cost Badger's transaction (Op.Cost).
func (c *committer) next(b *openBatch, cost int64) *opqueue.Op {
	e := c.e
	limit := opqueue.BatchLimit(e.db.MaxBatchSize())
	if b.poisoned != nil || b.probe || c.degraded != nil || len(b.reqs) >= maxBatchOps || cost+opqueue.Overhead > limit || c.carry != nil {
		return nil
	}
	// The batch in flight's callers are answered as soon as its block is
	// durable, not when this batch stops filling.
	if f := c.inflight; f != nil && !f.seen {
		select {
		case err := <-f.durable:
			c.durableLocked(err)
		default:
		}
	}
	r := c.waiting()
	if r != nil {
		goto got
	}
	select {
	case r = <-e.queue.C:
		e.receivedOps.Add(1)
		r = c.before(r)
	default:
		if c.inflight == nil {
			return nil
		}
		// Readers must not see the open batch while the lock is free.
		e.open = nil
		e.mu.Unlock()
		var err error
		landed, durable := false, false
		select {
		case r = <-e.queue.Urgent():
			e.receivedOps.Add(1)
		case r = <-e.queue.C:
			e.receivedOps.Add(1)
			r = c.before(r)
		case err = <-c.inflight.durableC():
			durable = true
		case err = <-c.inflight.doneC():
			landed = true
		case <-e.stop:
		}
		e.mu.Lock()
		e.open = b
		if durable {
			c.durableLocked(err)
			return c.next(b, cost)
		}
		if landed {
			c.landLocked(err)
			if err != nil {
				b.poisoned = err // b was built on the batch that failed
			}
			return nil
		}
		if r == nil {
			return nil
		}
	}
got:
	if (b.stale && !r.Pipelined) || (len(b.reqs) > 0 && cost+r.Cost() > limit) {
		c.carry = r
		return nil
	}
	return r
}

// submit waits for the batch in flight, then hands b to Badger; b is then
// in flight. A batch with nothing to write is answered at once.
func (c *committer) submit(b *openBatch) {
	e := c.e
	if c.inflight != nil {
		err := c.landInflight()
		if err != nil && b.poisoned == nil {
			b.poisoned = err // b was built on the batch that failed
		}
	}
	err := b.poisoned
	if err == nil && b.steps > 0 {
		if err = b.tx.writeTraceState(); err != nil {
			err = fmt.Errorf("%w: the TRACE log's state: %v", ErrStorage, err)
		} else if err = b.tx.step("commit"); err == nil {
			if ferr := b.tx.batch.Flush(); ferr != nil {
				err = fmt.Errorf("%w: %v", ErrStorage, ferr)
			}
		}
	}
	if err != nil || b.steps == 0 {
		b.txn.Discard()
		e.seg.Discard()
		e.mu.Lock()
		if err == nil {
			b.tx.batch.Commit()
			e.apply(b.tx)
		} else {
			c.failed(b, err)
		}
		e.mu.Unlock()
		opqueue.AnswerAll(b.reqs, err)
		return
	}
	e.mu.Lock()
	e.takeAcks(b.tx)
	e.mu.Unlock()
	// The next batch's transaction is opened now, before b's commit takes
	// a timestamp, so that opening it does not wait for b's write.
	c.spare = e.db.NewTransaction(true)
	f := &flight{b: b, durable: make(chan error, 1), done: make(chan error, 1)}
	c.inflight = f
	// commit runs on a goroutine of the batch's own and waits for Badger's
	// write (Commit, not CommitWith, whose callback is one more goroutine
	// on the way to the answer).
	commit := func() error {
		cerr := b.txn.Commit()
		if seam := e.cfg.written; seam != nil {
			if serr := seam(); serr != nil && cerr == nil {
				cerr = serr
			}
		}
		if cerr != nil {
			e.lg.Error("commit failed", "err", cerr)
			cerr = fmt.Errorf("%w: %v", ErrStorage, cerr)
		}
		return cerr
	}
	// The batch's block (its trail entries, its objects, and the redo
	// record of all it writes to Badger) is written and synced before the
	// transaction commits, on a goroutine of its own: the committer goes
	// on building the next batch. That sync is the batch's only one:
	// Badger writes without syncing, and a start redoes the blocks whose
	// commits it lost (seglog.Replay).
	blk, serr := e.seg.Seal(b.txn)
	if blk == nil && serr == nil {
		// Nothing for the segments: Badger's commit is the batch's write.
		go func() {
			cerr := commit()
			f.durable <- cerr
			f.done <- cerr
		}()
		return
	}
	go func() {
		if serr == nil && e.cfg.failAt != nil {
			serr = e.cfg.failAt("segment") // test seam: the block's write fails
		}
		if serr == nil {
			serr = e.seg.Write(blk)
		}
		if serr != nil {
			b.txn.Discard()
			e.lg.Error("commit failed: segment write", "err", serr)
			err := fmt.Errorf("%w: %v", ErrStorage, serr)
			f.durable <- err
			f.done <- err
			return
		}
		f.durable <- nil // the batch is durable: its callers can be answered
		// Let the committer, which this send readied, answer them on this
		// thread now: this goroutine would otherwise run on into Badger's
		// commit while the committer waited for a thread (33 µs, median, at
		// one client; 10 with this).
		goruntime.Gosched()
		if e.cfg.failAt != nil {
			// Test seam: Badger's commit fails after the block is durable.
			if err := e.cfg.failAt("badger"); err != nil {
				b.txn.Discard()
				f.done <- fmt.Errorf("%w: %v", ErrStorage, err)
				return
			}
		}
		f.done <- commit()
	}()
}

// runAs is run for an operation with a result.
func runAs[T any](ctx context.Context, e *Engine, size int, fn func() (T, error)) (T, error) {
	var out T
	err := e.run(ctx, size, func() (err error) {
		out, err = fn()
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/signal/outboxstore"
)

// The outbox (package outboxstore): a delivered signal's item is written in
// the transaction that delivers it and removed by AckOutbox once the
// daemon's publish is confirmed.

func (t *tx) queueSignal(s agentsignal.Signal) error {
	if err := t.step("outbox"); err != nil {
		return err
	}
	it := agentsignal.OutboxItem{ID: s.ID, Subject: agentsignal.Subject(s), Signal: s}
	if err := outboxstore.Put(t.txn, it); err != nil {
		return err
	}
	t.outbox = append(t.outbox, it)
	return nil
}

// OutboxAfter returns up to limit unconfirmed signals emitted after signal
// after ("" = from the start), in emission order (outboxstore.After).
func (e *Engine) OutboxAfter(after string, limit int) (out []agentsignal.OutboxItem, err error) {
	if err := e.settle(context.Background()); err != nil {
		return nil, err
	}
	err = e.db.View(func(txn *badger.Txn) error {
		out, err = outboxstore.After(txn, after, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

// ackFlushDelay bounds how long confirmed signals wait for a batch to
// carry their deletes before they get a batch of their own.
const ackFlushDelay = 200 * time.Millisecond

// AckOutbox removes published signals from the outbox. The deletes ride on
// the next batch's durable write (or, after ackFlushDelay without one, a
// batch of their own, and at Close a last write): a confirmation costs no
// synchronous write of its own, and never holds the committer. Until then
// the items stay in the database; after a crash they are published again,
// and the stream drops duplicates by Nats-Msg-Id within its window.
func (e *Engine) AckOutbox(ids ...string) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	e.acks = append(e.acks, ids...)
	e.mu.Unlock()
	select {
	case e.ackKick <- struct{}{}:
	default:
	}
	return nil
}

// takeAcks deletes the confirmed outbox items pending into txn. Caller
// holds e.mu. If a delete cannot join txn, the rest stay pending.
func (e *Engine) takeAcks(txn *seglog.Txn) {
	for i, id := range e.acks {
		if err := outboxstore.Delete(txn, id); err != nil {
			e.acks = e.acks[i:]
			return
		}
	}
	e.acks = e.acks[:0]
}

// flushAcks writes the pending deletes on their own, at Close (Badger's
// Close writes them out; a crash before loses them, and their signals are
// published again, as any unconfirmed).
func (e *Engine) flushAcks() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.acks) == 0 {
		return
	}
	err := e.db.Update(func(txn *badger.Txn) error {
		e.takeAcks(seglog.Direct(txn))
		return nil
	})
	if err != nil {
		e.lg.Warn("outbox confirmations not written; their signals are published again at start", "err", err)
	}
}

// OutboxLen counts the outbox's items, reading keys only.
func (e *Engine) OutboxLen() (n int, err error) {
	if err := e.settle(context.Background()); err != nil {
		return 0, err
	}
	err = e.db.View(func(txn *badger.Txn) error {
		n = outboxstore.Count(txn)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count outbox: %w", err)
	}
	return n, nil
}

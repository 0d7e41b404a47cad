package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	agentsignal "github.com/wacpd/wacpd/signal"
)

// OutboxItem is a delivered signal waiting to be published on NATS. It is
// written in the transaction that delivers the signal and removed by
// AckOutbox once the publish is confirmed, so a signal whose trail entries
// are durable is published at least once, also across crashes.
type OutboxItem struct {
	ID      string             `json:"id"` // the signal id; also Nats-Msg-Id
	Subject string             `json:"subject"`
	Signal  agentsignal.Signal `json:"signal"`
}

var prefixOutbox = []byte("o/") // o/<signal id> -> OutboxItem

func (t *tx) queueSignal(s agentsignal.Signal) error {
	if err := t.step("outbox"); err != nil {
		return err
	}
	it := OutboxItem{ID: s.ID, Subject: agentsignal.Subject(s), Signal: s}
	b, err := json.Marshal(it)
	if err != nil {
		return err
	}
	if err := t.txn.Set(append([]byte("o/"), s.ID...), b); err != nil {
		return err
	}
	t.outbox = append(t.outbox, it)
	return nil
}

// OutboxAfter returns up to limit unconfirmed signals emitted after signal
// after ("" = from the start), in emission order. Signal ids increase in
// commit order, so a publisher that remembers the last id it confirmed never
// walks over the deleted records of earlier ones.
func (e *Engine) OutboxAfter(after string, limit int) ([]OutboxItem, error) {
	var out []OutboxItem
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixOutbox, PrefetchValues: true})
		defer it.Close()
		start := prefixOutbox
		if after != "" {
			start = append(append([]byte("o/"), after...), 0)
		}
		for it.Seek(start); it.Valid() && (limit <= 0 || len(out) < limit); it.Next() {
			var o OutboxItem
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &o) }); err != nil {
				return err
			}
			out = append(out, o)
		}
		return nil
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
func (e *Engine) takeAcks(txn *badger.Txn) {
	for i, id := range e.acks {
		if err := txn.Delete(append([]byte("o/"), id...)); err != nil {
			e.acks = e.acks[i:]
			return
		}
	}
	e.acks = e.acks[:0]
}

// flushAcks writes the pending deletes on their own, at Close.
func (e *Engine) flushAcks() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.acks) == 0 {
		return
	}
	err := e.db.Update(func(txn *badger.Txn) error {
		e.takeAcks(txn)
		return nil
	})
	if err != nil {
		e.lg.Warn("outbox confirmations not written; their signals are published again at start", "err", err)
	}
}

// OutboxLen counts the outbox's items, reading keys only.
func (e *Engine) OutboxLen() (int, error) {
	n := 0
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixOutbox})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count outbox: %w", err)
	}
	return n, nil
}

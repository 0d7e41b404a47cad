package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/signal/outboxstore"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
)

// The outbox is derived from the trail. A delivered signal is written
// once, as its signal_emitted and signal_delivered entries; the signals to
// publish are those of the signal_delivered entries after the mark
// (outboxstore.Mark, m/outbox), which moves forward as the daemon's
// publishes are confirmed (AckOutbox) and is written with the next batch.
// A signal costs no record of its own: the releases before wrote one
// record per signal and deleted it on confirmation (two of a
// checkpoint's fifteen writes to Badger, 400 of its 2,100 bytes).
//
// e.outMark is the mark as written (committed); e.outAck the last
// confirmation, ahead of it until a batch carries it. Both under e.mu.

// OutboxItem is a signal to publish, as OutboxAfter and Commit give it and
// AckOutbox takes it.
type OutboxItem = agentsignal.OutboxItem

// queueSignal hands s, whose signal_delivered entry was just appended, to
// the publisher with the batch's commit.
func (t *tx) queueSignal(s agentsignal.Signal) error {
	if err := t.step("outbox"); err != nil {
		return err
	}
	t.outbox = append(t.outbox, agentsignal.OutboxItem{ID: s.ID, Subject: agentsignal.Subject(s), Signal: s, Seq: t.batch.Seq()})
	return nil
}

// OutboxAfter returns up to limit unconfirmed signals emitted after signal
// after ("" = from the start), in emission order: those of the
// signal_delivered entries after the written mark.
func (e *Engine) OutboxAfter(after string, limit int) ([]agentsignal.OutboxItem, error) {
	var out []agentsignal.OutboxItem
	err := e.scanOutbox(func(it agentsignal.OutboxItem) bool {
		if it.ID > after {
			out = append(out, it)
		}
		return limit <= 0 || len(out) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

// OutboxLen counts the unconfirmed signals.
func (e *Engine) OutboxLen() (n int, err error) {
	err = e.scanOutbox(func(agentsignal.OutboxItem) bool { n++; return true })
	if err != nil {
		return 0, fmt.Errorf("count outbox: %w", err)
	}
	return n, nil
}

// scanOutbox calls fn with the signal of each signal_delivered entry after
// the written mark, in order, until fn returns false, once Badger holds
// every batch written (settle). A signal_delivered entry follows its
// signal_emitted entry at once (tx.emitTo appends the two together), which
// gives the rest of the signal.
func (e *Engine) scanOutbox(fn func(agentsignal.OutboxItem) bool) error {
	if err := e.settle(context.Background()); err != nil {
		return err
	}
	e.mu.Lock()
	from := e.outMark.Seq
	e.mu.Unlock()
	var prev trail.Entry
	var ferr error
	start := max(from, 1) - 1 // the entry before the first one scanned, for its signal_emitted
	err := e.log.ScanAfter(context.Background(), start, func(seq uint64, en trail.Entry) bool {
		emitted := prev
		prev = en
		if seq <= from || en.EventType != trail.EventSignalDelivered {
			return true
		}
		it, err := outboxItem(emitted, en)
		if err != nil {
			ferr = fmt.Errorf("trail entry #%d: %w", seq, err)
			return false
		}
		it.Seq = seq
		return fn(it)
	})
	if err != nil {
		return err
	}
	return ferr
}

// outboxItem rebuilds the signal of a signal_delivered entry from it and
// the signal_emitted entry before it.
func outboxItem(emitted, delivered trail.Entry) (agentsignal.OutboxItem, error) {
	var d struct {
		SignalID    string `json:"signal_id"`
		From        string `json:"from"`
		DeliveredTo string `json:"delivered_to"`
		DeliveredAt string `json:"delivered_at"`
	}
	if err := json.Unmarshal(delivered.Body, &d); err != nil {
		return agentsignal.OutboxItem{}, fmt.Errorf("signal_delivered body: %w", err)
	}
	var em struct {
		SignalID  string              `json:"signal_id"`
		From      string              `json:"from"`
		Type      taxonomy.SignalType `json:"type"`
		Reason    *string             `json:"reason"`
		Ref       *string             `json:"ref"`
		Timestamp string              `json:"timestamp"`
	}
	if emitted.EventType != trail.EventSignalEmitted || json.Unmarshal(emitted.Body, &em) != nil ||
		em.SignalID != d.SignalID || em.From != d.From {
		return agentsignal.OutboxItem{}, fmt.Errorf("the signal_delivered entry of signal %s does not follow its signal_emitted entry", d.SignalID)
	}
	s := agentsignal.Signal{ID: d.SignalID, From: em.From, Type: em.Type, Reason: em.Reason, Ref: em.Ref,
		Timestamp: em.Timestamp, DeliveredTo: &d.DeliveredTo, DeliveredAt: d.DeliveredAt}
	return agentsignal.OutboxItem{ID: s.ID, Subject: agentsignal.Subject(s), Signal: s}, nil
}

// openOutbox reads the mark at open. A database without one is new (the
// mark is the trail's start) or of a release that kept a record per
// unconfirmed signal: the mark goes before the first of those signals, or
// at the trail's end when none was left, and is written before the records
// are removed, so an interrupted upgrade loses nothing. A mark past the
// trail's end (a repair cut the trail's tail) is brought back to it.
func (e *Engine) openOutbox() error {
	var m outboxstore.Mark
	var found bool
	var legacy []agentsignal.OutboxItem
	err := e.db.View(func(txn *badger.Txn) (err error) {
		if m, found, err = outboxstore.GetMark(txn); err != nil || found {
			return err
		}
		legacy, err = outboxstore.Legacy(txn)
		return err
	})
	if err != nil {
		return fmt.Errorf("open outbox: %w", err)
	}
	if !found {
		m = outboxstore.Mark{Seq: e.log.Len()}
		if len(legacy) > 0 {
			// Ids strictly increase along the trail, and a signal's id is
			// taken just before its signal_emitted entry's.
			first, err := e.log.FirstAfterID(legacy[0].ID)
			if err != nil {
				return fmt.Errorf("open outbox: %w", err)
			}
			m = outboxstore.Mark{Seq: first - 1}
		}
		err := e.db.Update(func(txn *badger.Txn) error { return outboxstore.PutMark(seglog.Direct(txn), m) })
		if err != nil {
			return fmt.Errorf("open outbox: write its mark: %w", err)
		}
		if e.log.Len() > 0 {
			e.lg.Info("upgraded the signal outbox: derived from the trail", "unconfirmed_signals", len(legacy), "mark", m.Seq)
		}
	}
	if _, err := outboxstore.DeleteLegacy(e.db); err != nil {
		return fmt.Errorf("open outbox: remove the records of the release before: %w", err)
	}
	if n := e.log.Len(); m.Seq > n {
		e.lg.Warn("the outbox mark was past the trail's end; signals from the end on are published", "mark", m.Seq, "trail_entries", n)
		m = outboxstore.Mark{Seq: n}
	}
	e.outMark, e.outAck = m, m
	return nil
}

// ackFlushDelay bounds how long a confirmation waits for a batch to carry
// the mark before it gets a batch of its own.
const ackFlushDelay = 200 * time.Millisecond

// AckOutbox confirms the publish of upTo and of every signal emitted before
// it (the publisher confirms in emission order): the mark moves to upTo's
// signal_delivered entry. It rides on the next batch's durable write (or,
// after ackFlushDelay without one, a batch of its own, and at Close a last
// write): a confirmation costs no synchronous write of its own, and never
// holds the committer. Until then the signals stay unconfirmed in the
// database; after a crash they are published again, and the stream drops
// duplicates by Nats-Msg-Id within its window.
func (e *Engine) AckOutbox(upTo agentsignal.OutboxItem) error {
	if upTo.Seq == 0 {
		return fmt.Errorf("confirm signal %s: the item has no trail position (Seq)", upTo.ID)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	if upTo.Seq > e.outAck.Seq {
		e.outAck = outboxstore.Mark{Seq: upTo.Seq, Signal: upTo.ID}
	}
	e.mu.Unlock()
	select {
	case e.ackKick <- struct{}{}:
	default:
	}
	return nil
}

// acksPending reports whether a confirmation waits to be written. Caller
// holds e.mu.
func (e *Engine) acksPending() bool { return e.outAck.Seq > e.outMark.Seq }

// takeAcks writes the mark of the last confirmation into t's transaction,
// if it is ahead of the mark written; the engine takes it as written when
// t's batch commits (apply). Caller holds e.mu.
func (e *Engine) takeAcks(t *tx) {
	if !e.acksPending() {
		return
	}
	if err := outboxstore.PutMark(t.txn, e.outAck); err != nil {
		return // it stays pending, for the next batch
	}
	t.mark = e.outAck
}

// flushAcks writes the pending confirmation on its own, at Close (a crash
// before loses it, and its signals are published again, as any
// unconfirmed).
func (e *Engine) flushAcks() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.acksPending() {
		return
	}
	err := e.db.Update(func(txn *badger.Txn) error { return outboxstore.PutMark(seglog.Direct(txn), e.outAck) })
	if err != nil {
		e.lg.Warn("outbox confirmations not written; their signals are published again at start", "err", err)
		return
	}
	e.outMark = e.outAck
}

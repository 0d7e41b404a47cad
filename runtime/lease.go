package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
)

// Delivery leases (WACP Envelope §7, redelivery). inbox.next hands an
// envelope to its receiver's agent under a lease and leaves it in the
// inbox; the agent's acknowledgement (inbox.ack, or inbox.next with
// ack_previous) removes it. Hand-over n (1 for the first) leases the
// envelope for n × Config.DeliveryLease, the spec's linear backoff
// (attempt_number × base_timeout). When a lease ends unacknowledged the
// envelope is back in the inbox at its old place, with envelope_redelivered
// in the receiver's trail; when the lease of hand-over MaxDeliveries ends,
// the envelope leaves the inbox as undeliverable: envelope_undeliverable
// (reason delivery_exhausted) in the sender's trail and a failed signal,
// reason delivery_exhausted, ref the envelope, from the receiver to the
// sender, as the acknowledged receipt goes.
//
// # Format
//
// The lease state is the value of the envelope's inbox key (e/i/…): empty
// (an envelope never handed out, as every inbox key before leases) or a
// JSON delivery record. A leased envelope also has a deadline key
// e/x/<deadline, 8 bytes big-endian Unix ns><envelope id> whose value is
// its inbox key, so the expiry pass reads the due leases in deadline order.
// Both are written in the commit that hands the envelope out, acknowledges
// it or records its redelivery, so leases and attempts survive a restart;
// the timer loop (RunTimers) checks the leases at start.

const defaultDeliveryLease = 30 * time.Second

// reasonDeliveryExhausted is the reason of envelope_undeliverable and of the
// failed signal when an envelope's last lease ended (WACP failure reasons).
const reasonDeliveryExhausted = "delivery_exhausted"

var leasePrefix = []byte("e/x/")

func leaseKey(deadline time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(append([]byte(nil), leasePrefix...), uint64(deadline.UnixNano()))
	return append(k, id...)
}

// delivery is the lease state of an envelope in an inbox.
type delivery struct {
	// Attempt counts the hand-overs so far.
	Attempt int `json:"attempt"`
	// Until is the end of the current lease; empty when the envelope is
	// not leased (it may be handed out).
	Until string `json:"until,omitempty"`
}

func decodeDelivery(v []byte) (delivery, error) {
	var d delivery
	if len(v) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(v, &d); err != nil {
		return d, fmt.Errorf("decode delivery record: %w", err)
	}
	return d, nil
}

// lease hands the first envelope of ws's inbox that is not leased to the
// agent: it records the hand-over and the lease's deadline and returns the
// envelope with its Delivery set, or nil when every envelope is leased or
// the inbox is empty.
func (t *tx) lease(ws string) (*envelope.Envelope, error) {
	prefix := inboxPrefix(ws)
	var key []byte
	var d delivery
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 16})
	for it.Rewind(); it.Valid(); it.Next() {
		v, err := it.Item().ValueCopy(nil)
		if err == nil {
			d, err = decodeDelivery(v)
		}
		if err != nil {
			it.Close()
			return nil, err
		}
		if d.Until == "" {
			key = it.Item().KeyCopy(nil)
			break
		}
	}
	it.Close()
	if key == nil {
		return nil, nil
	}
	env, err := getEnvelope(t.txn, string(key[len(prefix)+1:]))
	if err != nil {
		return nil, err
	}
	ts := t.next()
	d.Attempt++
	until := ts.Add(time.Duration(d.Attempt) * t.e.cfg.DeliveryLease)
	d.Until = clock.Format(until)
	if err := t.step("lease"); err != nil {
		return nil, err
	}
	if err := t.setDelivery(key, d); err != nil {
		return nil, err
	}
	if err := t.txn.Set(leaseKey(until, env.ID), key); err != nil {
		return nil, err
	}
	t.leased = true
	env.Delivery = &envelope.Delivery{Attempt: d.Attempt, MaxAttempts: envelope.MaxDeliveries, LeaseExpiresAt: d.Until}
	return &env, nil
}

func (t *tx) setDelivery(key []byte, d delivery) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return t.txn.Set(key, b)
}

// removeFromInbox deletes an inbox key and, if its envelope is leased, the
// lease's deadline key.
func (t *tx) removeFromInbox(key []byte, d delivery, id string) error {
	if err := t.step("ack"); err != nil {
		return err
	}
	if d.Until != "" {
		until, err := clock.Parse(d.Until)
		if err != nil {
			return fmt.Errorf("envelope %s: lease deadline: %w", id, err)
		}
		if err := t.txn.Delete(leaseKey(until, id)); err != nil {
			return err
		}
	}
	return t.txn.Delete(key)
}

// AckResult is the reply of inbox.ack.
type AckResult struct {
	ID string `json:"id"`
	// Removed reports whether this acknowledgement took the envelope out
	// of the inbox; false when it had already left (acknowledged before,
	// or undeliverable) or has not arrived yet (queued).
	Removed bool `json:"removed"`
}

// AckEnvelope acknowledges envelope id for the agent of workspace ws: the
// envelope leaves ws's inbox, whether it is leased or back after a lease
// ended. Acknowledging an envelope that already left the inbox is not an
// error (a client may repeat an acknowledgement whose reply it lost); an
// id that is not an envelope addressed to ws is not_found.
func (e *Engine) AckEnvelope(ctx context.Context, ws, id string) (AckResult, error) {
	return runAs(ctx, e, len(id), func() (AckResult, error) {
		if e.get(ws) == nil {
			return AckResult{}, Refuse(CodeNotFound, "workspace %s does not exist", ws)
		}
		if id == "" {
			return AckResult{}, Refuse(CodeInvalidStructure, "id is required")
		}
		res := AckResult{ID: id}
		err := e.commit(func(t *tx) error {
			env, err := getEnvelope(t.txn, id)
			if errors.Is(err, badger.ErrKeyNotFound) || (err == nil && env.To != ws) {
				return Refuse(CodeNotFound, "no envelope %s was sent to workspace %s", id, ws)
			}
			if err != nil {
				return err
			}
			key := inboxKey(ws, envelope.Rank(env.Priority), id)
			item, err := t.txn.Get(key)
			if errors.Is(err, badger.ErrKeyNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			d, err := decodeDelivery(v)
			if err != nil {
				return err
			}
			res.Removed = true
			return t.removeFromInbox(key, d, id)
		})
		return res, err
	})
}

// AckLeased acknowledges every envelope leased to the agent of workspace
// ws: what inbox.next does first unless asked not to (an agent asking for
// the next envelope has handled the ones it has). It returns their ids.
func (e *Engine) AckLeased(ctx context.Context, ws string) ([]string, error) {
	return runAs(ctx, e, 0, func() ([]string, error) {
		if e.get(ws) == nil {
			return nil, Refuse(CodeNotFound, "workspace %s does not exist", ws)
		}
		var ids []string
		err := e.commit(func(t *tx) error {
			prefix := inboxPrefix(ws)
			type leased struct {
				key []byte
				d   delivery
			}
			var found []leased
			it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 16})
			for it.Rewind(); it.Valid(); it.Next() {
				v, err := it.Item().ValueCopy(nil)
				var d delivery
				if err == nil {
					d, err = decodeDelivery(v)
				}
				if err != nil {
					it.Close()
					return err
				}
				if d.Until != "" {
					found = append(found, leased{it.Item().KeyCopy(nil), d})
				}
			}
			it.Close()
			for _, l := range found {
				id := string(l.key[len(prefix)+1:])
				if err := t.removeFromInbox(l.key, l.d, id); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return nil
		})
		return ids, err
	})
}

// ExpireLeases ends every lease whose deadline is not after now: the
// envelope is delivered again (envelope_redelivered) or, after its last
// attempt, is undeliverable (delivery_exhausted). It returns how many
// leases it ended.
func (e *Engine) ExpireLeases(ctx context.Context, now time.Time) (int, error) {
	return runAs(ctx, e, 0, func() (int, error) {
		var due [][2][]byte // deadline key, inbox key
		it := e.open.tx.txn.NewIterator(badger.IteratorOptions{Prefix: leasePrefix, PrefetchValues: true, PrefetchSize: 16})
		limit := leaseKey(now, "")
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			if bytes.Compare(k[:len(limit)], limit) > 0 {
				break
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				it.Close()
				return 0, err
			}
			due = append(due, [2][]byte{k, v})
		}
		it.Close()
		for i, kv := range due {
			if err := e.commit(func(t *tx) error { return t.expireLease(kv[0], kv[1]) }); err != nil {
				return i, err
			}
		}
		return len(due), nil
	})
}

// expireLease ends the lease whose deadline key is dk on the envelope at
// inbox key ik.
func (t *tx) expireLease(dk, ik []byte) error {
	id := string(dk[len(leasePrefix)+8:])
	item, err := t.txn.Get(ik)
	if errors.Is(err, badger.ErrKeyNotFound) {
		// The envelope left the inbox without its deadline key (never
		// written so, but harmless): drop the key.
		if err := t.step("lease_gone"); err != nil {
			return err
		}
		return t.txn.Delete(dk)
	}
	if err != nil {
		return err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return err
	}
	d, err := decodeDelivery(v)
	if err != nil {
		return err
	}
	env, err := getEnvelope(t.txn, id)
	if err != nil {
		return err
	}
	if err := t.step("lease_expired"); err != nil {
		return err
	}
	if err := t.txn.Delete(dk); err != nil {
		return err
	}
	to := t.peek(env.To)
	if d.Attempt < envelope.MaxDeliveries {
		if err := t.setDelivery(ik, delivery{Attempt: d.Attempt}); err != nil {
			return err
		}
		t.inboxed[env.To] = true
		_, err := t.append(env.To, trail.ActorProtocol, trail.EventEnvelopeRedelivered, map[string]any{
			"envelope_id": env.ID, "from": env.From, "to": env.To, "timestamp": nil,
		})
		return err
	}
	if err := t.txn.Delete(ik); err != nil {
		return err
	}
	_, err = t.append(env.From, trail.ActorProtocol, trail.EventEnvelopeUndeliverable, map[string]any{
		"envelope_id": env.ID, "from": env.From, "to": env.To, "reason": reasonDeliveryExhausted, "timestamp": nil,
	})
	if err != nil {
		return err
	}
	if _, err := t.emitTo(to, t.peek(env.From), taxonomy.SignalFailed, reasonDeliveryExhausted, env.ID, trail.ActorProtocol); err != nil {
		return err
	}
	env.Status = envelope.StatusRejected
	return putEnvelope(t.txn, env)
}

// nextLeaseDeadline returns the earliest lease deadline, if any lease is
// held.
func (e *Engine) nextLeaseDeadline() (time.Time, bool, error) {
	var at time.Time
	found := false
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: leasePrefix})
		defer it.Close()
		it.Rewind()
		if it.Valid() {
			k := it.Item().Key()
			at, found = time.Unix(0, int64(binary.BigEndian.Uint64(k[len(leasePrefix):]))), true
		}
		return nil
	})
	return at, found, err
}

// kickLeases tells the timer loop that a lease was taken (its deadline may
// be the earliest). Caller holds e.mu; it never blocks.
func (e *Engine) kickLeases() {
	select {
	case e.leaseKick <- struct{}{}:
	default:
	}
}

// leaseTimer drives ExpireLeases for RunTimers: it owns one timer, set to
// the earliest lease deadline.
type leaseTimer struct {
	e     *Engine
	timer *time.Timer
	retry time.Duration // after a failed pass
}

func newLeaseTimer(e *Engine, retry time.Duration) *leaseTimer {
	// Fire at once: leases held when the daemon stopped may have ended.
	return &leaseTimer{e: e, timer: time.NewTimer(0), retry: retry}
}

// reset sets the timer to the earliest deadline, or stops it.
func (l *leaseTimer) reset() {
	at, ok, err := l.e.nextLeaseDeadline()
	switch {
	case err != nil:
		if !errors.Is(err, badger.ErrDBClosed) {
			l.e.lg.Error("read lease deadlines", "err", err)
		}
		l.timer.Reset(l.retry)
	case !ok:
		l.timer.Stop()
	default:
		l.timer.Reset(max(0, at.Sub(l.e.clock.Now())))
	}
}

// fire ends the leases due now and sets the timer again.
func (l *leaseTimer) fire(ctx context.Context) {
	if _, err := l.e.ExpireLeases(ctx, l.e.clock.Now()); err != nil {
		if !errors.Is(err, ErrClosed) {
			l.e.lg.Error("expire delivery leases", "err", err)
		}
		l.timer.Reset(l.retry)
		return
	}
	l.reset()
}

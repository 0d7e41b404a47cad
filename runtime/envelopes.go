package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Key layout of envelopes (owned by the runtime).
func envKey(id string) []byte { return append([]byte("e/e/"), id...) }

func inboxPrefix(ws string) []byte { return append(append([]byte("e/i/"), ws...), '/') }

func inboxKey(ws string, rank byte, id string) []byte {
	return append(append(inboxPrefix(ws), rank), id...)
}

func queuePrefix(ws string) []byte { return append(append([]byte("e/q/"), ws...), '/') }

// SendEnvelope sends an envelope from the agent of workspace ws (wire
// contract §3.2). Validation runs structure → type → matrix → right; a
// refusal writes envelope_rejected in the sender's trail. An accepted
// envelope is recorded (envelope_created) and, if the receiver's inbox
// accepts, delivered in the same commit: envelope_delivered, the first
// delivery moving an idle receiver to active, and the runtime's
// acknowledged signal to the sender. A suspended or migrating receiver
// queues it until resumed.
func (e *Engine) SendEnvelope(ctx context.Context, ws string, body []byte) (envelope.Envelope, error) {
	return runAs(ctx, e, len(body), func() (envelope.Envelope, error) { return e.sendEnvelopeLocked(ctx, ws, body) })
}

// sendEnvelopeLocked is SendEnvelope run by the committer.
func (e *Engine) sendEnvelopeLocked(ctx context.Context, ws string, body []byte) (envelope.Envelope, error) {
	from := e.get(ws)
	if from == nil {
		return envelope.Envelope{}, Refuse(CodeNotFound, "workspace %s does not exist", ws)
	}
	req, err := envelope.DecodeRequest(body)
	if err == nil {
		err = envelope.Check(e.tax, e.party(ws), e.party(req.To), req.Type)
	}
	switch from.State {
	case workspace.Suspended, workspace.Migrating, workspace.Integrating, workspace.Conflicted:
		if err == nil {
			err = envelope.Reject(envelope.ReasonPermissionDenied, "workspace %s is %s and sends nothing", ws, from.State)
		}
	}
	var rj *envelope.Rejection
	if errors.As(err, &rj) {
		return envelope.Envelope{}, e.rejectEnvelope(from, req, rj)
	}
	if err != nil {
		return envelope.Envelope{}, err
	}
	var env envelope.Envelope
	err = e.commit(func(t *tx) error {
		ts := t.next()
		env = envelope.Envelope{
			ID: e.ids.New(ts), From: ws, To: req.To, Originator: from.Originator, Type: req.Type,
			Payload: req.Payload, InReplyTo: req.InReplyTo, Priority: req.Priority,
			Timestamp: clock.Format(ts), Origin: envelope.OriginAgent, Status: envelope.StatusValidated,
		}
		err := t.appendAt(ts, ws, e.actorOf(from), trail.EventEnvelopeCreated, map[string]any{
			"envelope_id": env.ID, "from": ws, "to": env.To, "type": env.Type, "priority": env.Priority,
			"in_reply_to": env.InReplyTo, "originator": env.Originator, "timestamp": env.Timestamp,
		})
		if err != nil {
			return err
		}
		to := t.ws(req.To)
		if to.State == workspace.Suspended || to.State == workspace.Migrating {
			if err := t.step("queue"); err != nil {
				return err
			}
			if err := t.txn.Set(append(queuePrefix(to.ID), env.ID...), nil); err != nil {
				return err
			}
			return putEnvelope(t.txn, env)
		}
		return t.deliver(&env, to)
	})
	return env, err
}

// deliver puts env into to's inbox: envelope_delivered, the idle → active
// transition on a first delivery, and the acknowledged signal to the sender.
func (t *tx) deliver(env *envelope.Envelope, to *workspace.Workspace) error {
	ts := t.next()
	env.Status, env.DeliveredAt = envelope.StatusDelivered, clock.Format(ts)
	err := t.appendAt(ts, to.ID, trail.ActorProtocol, trail.EventEnvelopeDelivered, map[string]any{
		"envelope_id": env.ID, "from": env.From, "to": to.ID, "delivered_at": env.DeliveredAt,
	})
	if err != nil {
		return err
	}
	if err := t.step("inbox"); err != nil {
		return err
	}
	if err := t.txn.Set(inboxKey(to.ID, envelope.Rank(env.Priority), env.ID), nil); err != nil {
		return err
	}
	t.inboxed[to.ID] = true
	if to.State == workspace.Idle {
		if err := t.transition(to, workspace.FirstEnvelope, trail.ActorProtocol, "", false); err != nil {
			return err
		}
	}
	// Acknowledged: a runtime receipt from the receiver to the sender. The
	// record keeps status delivered, as the wire contract's reply shows; the
	// acknowledgement is the signal.
	if _, err := t.emitTo(to, t.peek(env.From), taxonomy.SignalAcknowledged, "", env.ID, trail.ActorProtocol); err != nil {
		return err
	}
	return putEnvelope(t.txn, *env)
}

// drainQueue removes, in order, the envelopes queued for w while it was
// suspended or migrating, and passes each to fn.
func (t *tx) drainQueue(w *workspace.Workspace, fn func(env envelope.Envelope) error) error {
	prefix := queuePrefix(w.ID)
	var ids []string
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	for it.Rewind(); it.Valid(); it.Next() {
		ids = append(ids, string(it.Item().Key()[len(prefix):]))
	}
	it.Close()
	for _, id := range ids {
		env, err := getEnvelope(t.txn, id)
		if err != nil {
			return err
		}
		if err := t.txn.Delete(append(prefix, id...)); err != nil {
			return err
		}
		if err := fn(env); err != nil {
			return err
		}
	}
	return nil
}

// deliverQueued delivers, in order, the envelopes queued for w while it was
// suspended or migrating.
func (t *tx) deliverQueued(w *workspace.Workspace) error {
	return t.drainQueue(w, func(env envelope.Envelope) error { return t.deliver(&env, w) })
}

// undeliverQueued ends the envelopes queued for w, which has become
// terminal: each gets envelope_undeliverable in its sender's trail and
// status rejected (WACP Envelope §7: the target became terminal after
// validation).
func (t *tx) undeliverQueued(w *workspace.Workspace) error {
	return t.drainQueue(w, func(env envelope.Envelope) error {
		_, err := t.append(env.From, trail.ActorProtocol, trail.EventEnvelopeUndeliverable, map[string]any{
			"envelope_id": env.ID, "from": env.From, "to": env.To, "reason": "target_terminal", "timestamp": nil,
		})
		if err != nil {
			return err
		}
		env.Status = envelope.StatusRejected
		return putEnvelope(t.txn, env)
	})
}

// rejectEnvelope records envelope_rejected in the sender's trail; the
// rejected envelope's id is consumed. Caller holds e.mu.
func (e *Engine) rejectEnvelope(from *workspace.Workspace, req envelope.Request, rj *envelope.Rejection) error {
	err := e.commit(func(t *tx) error {
		ts := t.next()
		return t.appendAt(ts, from.ID, e.actorOf(from), trail.EventEnvelopeRejected, map[string]any{
			"envelope_id": e.ids.New(ts), "from": from.ID, "to": optional(req.To), "type": optional(req.Type),
			"reason": rj.Reason, "timestamp": clock.Format(ts),
		})
	})
	if err != nil {
		return err
	}
	return rj
}

// party describes workspace id for envelope.Check. Caller holds e.mu.
func (e *Engine) party(id string) envelope.Party {
	w := e.get(id)
	if w == nil {
		return envelope.Party{ID: id}
	}
	return envelope.Party{
		ID: id, Role: w.Role, Parent: w.ParentID(), Delegate: w.Delegate, Exists: true,
		Sealed:   w.State == workspace.Integrating || w.State == workspace.Conflicted || w.State.Terminal(),
		Terminal: w.State.Terminal(),
	}
}

// NextEnvelope hands the agent of ws the first envelope of its inbox that
// is not leased (blocking > urgent > normal, FIFO within a level) under a
// delivery lease (lease.go), waiting up to wait for one to arrive. The
// envelope stays in the inbox until acknowledged. It returns nil when none
// arrived.
func (e *Engine) NextEnvelope(ctx context.Context, ws string, wait time.Duration) (*envelope.Envelope, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		env, ch, err := e.popInbox(ctx, ws)
		if err != nil || env != nil {
			return env, err
		}
		select {
		case <-ch:
		case <-deadline.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// popInbox leases the first envelope of ws's inbox that is not leased, or
// returns a channel that is closed when the inbox next receives one (a
// delivery, or a lease that ended).
func (e *Engine) popInbox(ctx context.Context, ws string) (*envelope.Envelope, <-chan struct{}, error) {
	var env *envelope.Envelope
	var ch chan struct{}
	err := e.run(ctx, 0, func() error {
		if e.get(ws) == nil {
			return Refuse(CodeNotFound, "workspace %s does not exist", ws)
		}
		return e.commit(func(t *tx) error {
			got, err := t.lease(ws)
			if err != nil || got != nil {
				env = got
				return err
			}
			// Registered inside the batch: a delivery later in it closes ch.
			var ok bool
			if ch, ok = e.inboxSig[ws]; !ok {
				ch = make(chan struct{})
				e.inboxSig[ws] = ch
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return env, ch, nil
}

func putEnvelope(txn *badger.Txn, env envelope.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	return txn.Set(envKey(env.ID), b)
}

func getEnvelope(txn *badger.Txn, id string) (envelope.Envelope, error) {
	var env envelope.Envelope
	item, err := txn.Get(envKey(id))
	if err != nil {
		return env, fmt.Errorf("envelope %s: %w", id, err)
	}
	err = item.Value(func(v []byte) error { return json.NewDecoder(bytes.NewReader(v)).Decode(&env) })
	return env, err
}

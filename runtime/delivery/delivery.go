// Package delivery is the engine's envelope delivery (WACP Envelope §§5-7):
// what sending, delivering, queueing, leasing, acknowledging and
// redelivering an envelope write, inside one of the engine's transactions.
// The engine (package runtime) admits the operation, validates the
// envelope and runs these functions on its transaction, seen through Tx;
// the records and keys are package envstore's.
//
// # Delivery leases
//
// inbox.next hands an envelope to its receiver's agent under a lease and
// leaves it in the inbox; the agent's acknowledgement (inbox.ack, or
// inbox.next with ack_previous) removes it. Hand-over n (1 for the first)
// leases the envelope for n × the base lease, the spec's linear backoff
// (attempt_number × base_timeout). When a lease ends unacknowledged the
// envelope is back in the inbox at its old place, with
// envelope_redelivered in the receiver's trail; when the lease of
// hand-over envelope.MaxDeliveries ends, the envelope leaves the inbox as
// undeliverable: envelope_undeliverable (reason delivery_exhausted) in the
// sender's trail and a failed signal, reason delivery_exhausted, ref the
// envelope, from the receiver to the sender, as the acknowledged receipt
// goes. Leases and attempts are stored, so they survive a restart.
package delivery

import (
	"errors"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// ReasonDeliveryExhausted is the reason of envelope_undeliverable and of
// the failed signal when an envelope's last lease ended (WACP failure
// reasons).
const ReasonDeliveryExhausted = "delivery_exhausted"

// reasonTargetTerminal is the reason of envelope_undeliverable for an
// envelope queued for a workspace that became terminal.
const reasonTargetTerminal = "target_terminal"

// ErrNotAddressed is returned by Ack for an id that is not an envelope
// sent to the workspace.
var ErrNotAddressed = errors.New("delivery: no such envelope was sent to the workspace")

// Tx is the engine's transaction as delivery uses it. Every write joins
// Txn; Step is called before each one.
type Tx interface {
	// Txn is the Badger transaction of the commit.
	Txn() *seglog.Txn
	// Step is called before each write: the engine counts the writes an
	// operation started (and tests inject failures there).
	Step(name string) error
	// Now returns a fresh timestamp, later than every earlier one.
	Now() time.Time
	// Record appends a trail entry at ts to workspace ws's trail.
	Record(ts time.Time, ws, actor string, typ trail.EventType, body map[string]any) error
	// Append appends a trail entry at a fresh timestamp; a "timestamp" key
	// in body is set to it.
	Append(ws, actor string, typ trail.EventType, body map[string]any) error
	// Workspace returns workspace id's record as the transaction sees it,
	// or nil; the caller does not modify it.
	Workspace(id string) *workspace.Workspace
	// Activate moves idle workspace id to active: its first envelope.
	Activate(id string) error
	// Signal records a signal of the runtime (actor protocol) from
	// workspace from to workspace to.
	Signal(from, to string, typ taxonomy.SignalType, reason, ref string) error
	// Arrived notes that an envelope is in ws's inbox, to be handed out.
	Arrived(ws string)
	// Leased notes that a lease was taken.
	Leased()
	// Rights settles the port rights env carries: with delivered they
	// move to its receiver (port_right_transferred); otherwise (it ended
	// undelivered) they stay with its sender.
	Rights(env *envelope.Envelope, delivered bool) error
	// Integrity proves envelopes and verifies stored ones (integrity.go).
	Integrity
}

// Send records env, created at ts by actor (envelope_created in its
// sender's trail), with its integrity proof, and delivers it in the same
// commit unless its receiver is suspended or migrating, which queues it
// until resumed.
func Send(t Tx, ts time.Time, actor string, env *envelope.Envelope) error {
	t.Prove(env)
	if err := created(t, ts, actor, env); err != nil {
		return err
	}
	return Release(t, env)
}

// created writes env's envelope_created.
func created(t Tx, ts time.Time, actor string, env *envelope.Envelope) error {
	return t.Record(ts, env.From, actor, trail.EventEnvelopeCreated, map[string]any{
		"envelope_id": env.ID, "from": env.From, "to": env.To, "type": env.Type, "priority": env.Priority,
		"in_reply_to": env.InReplyTo, "originator": env.Originator, "timestamp": env.Timestamp,
	})
}

// Hold records env, created at ts by actor, and stores it without
// delivering it: an envelope a highway gate holds (envelope_delivery).
// Release or Drop ends it.
func Hold(t Tx, ts time.Time, actor string, env *envelope.Envelope) error {
	t.Prove(env)
	if err := created(t, ts, actor, env); err != nil {
		return err
	}
	if err := t.Step("hold"); err != nil {
		return err
	}
	return envstore.Put(t.Txn(), *env)
}

// Drop ends env, held at a gate, without delivering it: envelope_rejected
// with reason (a person rejected it) or, with undeliverable,
// envelope_undeliverable (its receiver can no longer take it), in the
// sender's trail; status rejected.
func Drop(t Tx, env *envelope.Envelope, reason string, undeliverable bool) error {
	typ := trail.EventEnvelopeRejected
	body := map[string]any{"envelope_id": env.ID, "from": env.From, "to": env.To, "type": env.Type, "reason": reason, "timestamp": nil}
	if undeliverable {
		typ = trail.EventEnvelopeUndeliverable
		delete(body, "type")
	}
	if err := t.Append(env.From, trail.ActorProtocol, typ, body); err != nil {
		return err
	}
	env.Status = envelope.StatusRejected
	if err := t.Rights(env, false); err != nil {
		return err
	}
	if err := t.Step("drop"); err != nil {
		return err
	}
	return envstore.Put(t.Txn(), *env)
}

// Release delivers env, or queues it while its receiver is suspended or
// migrating.
func Release(t Tx, env *envelope.Envelope) error {
	to := t.Workspace(env.To)
	if to.State == workspace.Suspended || to.State == workspace.Migrating {
		if err := t.Step("queue"); err != nil {
			return err
		}
		if err := envstore.Queue(t.Txn(), to.ID, env.ID); err != nil {
			return err
		}
		return envstore.Put(t.Txn(), *env)
	}
	return Deliver(t, env)
}

// Deliver puts env into its receiver's inbox: envelope_delivered, the
// idle → active transition on a first delivery, and the acknowledged
// signal from the receiver to the sender.
func Deliver(t Tx, env *envelope.Envelope) error {
	ts := t.Now()
	env.Status, env.DeliveredAt = envelope.StatusDelivered, clock.Format(ts)
	err := t.Record(ts, env.To, trail.ActorProtocol, trail.EventEnvelopeDelivered, map[string]any{
		"envelope_id": env.ID, "from": env.From, "to": env.To, "delivered_at": env.DeliveredAt,
	})
	if err != nil {
		return err
	}
	if err := t.Rights(env, true); err != nil {
		return err
	}
	if err := t.Step("inbox"); err != nil {
		return err
	}
	if err := envstore.Deliver(t.Txn(), *env); err != nil {
		return err
	}
	t.Arrived(env.To)
	if t.Workspace(env.To).State == workspace.Idle {
		if err := t.Activate(env.To); err != nil {
			return err
		}
	}
	// Acknowledged: a runtime receipt from the receiver to the sender. The
	// record keeps status delivered, as the wire contract's reply shows; the
	// acknowledgement is the signal.
	if err := t.Signal(env.To, env.From, taxonomy.SignalAcknowledged, "", env.ID); err != nil {
		return err
	}
	return envstore.Put(t.Txn(), *env)
}

// drainQueue removes, in order, the envelopes queued for ws and passes
// each whose proof verifies to fn; one that does not is rejected
// (integrity.go).
func drainQueue(t Tx, ws string, fn func(env envelope.Envelope) error) error {
	if err := t.Step("dequeue"); err != nil {
		return err
	}
	ids, err := envstore.Dequeue(t.Txn(), ws)
	if err != nil {
		return err
	}
	for _, id := range ids {
		env, err := envstore.Get(t.Txn(), id)
		if err != nil {
			return err
		}
		if ok, err := Verified(t, &env); err != nil {
			return err
		} else if !ok {
			continue
		}
		if err := fn(env); err != nil {
			return err
		}
	}
	return nil
}

// DeliverQueued delivers, in order, the envelopes queued for ws while it
// was suspended or migrating.
func DeliverQueued(t Tx, ws string) error {
	return drainQueue(t, ws, func(env envelope.Envelope) error { return Deliver(t, &env) })
}

// UndeliverQueued ends the envelopes queued for ws, which has become
// terminal: each gets envelope_undeliverable in its sender's trail and
// status rejected (WACP Envelope §7: the target became terminal after
// validation).
func UndeliverQueued(t Tx, ws string) error {
	return drainQueue(t, ws, func(env envelope.Envelope) error {
		err := t.Append(env.From, trail.ActorProtocol, trail.EventEnvelopeUndeliverable, map[string]any{
			"envelope_id": env.ID, "from": env.From, "to": env.To, "reason": reasonTargetTerminal, "timestamp": nil,
		})
		if err != nil {
			return err
		}
		env.Status = envelope.StatusRejected
		if err := t.Rights(&env, false); err != nil {
			return err
		}
		return envstore.Put(t.Txn(), env)
	})
}

// Lease hands the first envelope of ws's inbox that is not leased to its
// agent under a lease of attempt × base, and returns it with its Delivery
// set; nil when every envelope is leased or the inbox is empty. An
// envelope whose proof does not verify leaves the inbox rejected
// (integrity.go) and the next one is taken.
func Lease(t Tx, ws string, base time.Duration) (*envelope.Envelope, error) {
	en, env, err := firstVerified(t, ws)
	if err != nil || en == nil {
		return nil, err
	}
	until := t.Now().Add(time.Duration(en.Delivery.Attempt+1) * base)
	if err := t.Step("lease"); err != nil {
		return nil, err
	}
	d, err := envstore.Lease(t.Txn(), *en, until)
	if err != nil {
		return nil, err
	}
	t.Leased()
	env.Delivery = &envelope.Delivery{Attempt: d.Attempt, MaxAttempts: envelope.MaxDeliveries, LeaseExpiresAt: d.Until}
	return &env, nil
}

// firstVerified returns the first entry of ws's inbox that is not leased
// and its envelope, rejecting those before it whose proof does not
// verify; nil when there is none.
func firstVerified(t Tx, ws string) (*envstore.Entry, envelope.Envelope, error) {
	for {
		en, ok, err := envstore.FirstUnleased(t.Txn().Txn, ws)
		if err != nil || !ok {
			return nil, envelope.Envelope{}, err
		}
		env, err := envstore.Get(t.Txn(), en.ID)
		if err != nil {
			return nil, envelope.Envelope{}, err
		}
		if ok, err := Verified(t, &env); err != nil {
			return nil, envelope.Envelope{}, err
		} else if ok {
			return &en, env, nil
		}
		if err := remove(t, en); err != nil {
			return nil, envelope.Envelope{}, err
		}
	}
}

func remove(t Tx, en envstore.Entry) error {
	if err := t.Step("ack"); err != nil {
		return err
	}
	return envstore.Remove(t.Txn(), en)
}

// Ack acknowledges envelope id for the agent of workspace ws: the
// envelope leaves ws's inbox, whether it is leased or back after a lease
// ended. removed is false when it had already left (acknowledged before,
// or undeliverable) or has not arrived (queued). An id that is not an
// envelope sent to ws is ErrNotAddressed.
func Ack(t Tx, ws, id string) (removed bool, err error) {
	env, err := envstore.Get(t.Txn(), id)
	if errors.Is(err, envstore.ErrNotFound) || (err == nil && env.To != ws) {
		return false, ErrNotAddressed
	}
	if err != nil {
		return false, err
	}
	en, ok, err := envstore.Lookup(t.Txn().Txn, env)
	if err != nil || !ok {
		return false, err
	}
	return true, remove(t, en)
}

// AckLeased acknowledges every envelope leased to the agent of ws and
// returns their ids.
func AckLeased(t Tx, ws string) ([]string, error) {
	leased, err := envstore.Leased(t.Txn().Txn, ws)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, en := range leased {
		if err := remove(t, en); err != nil {
			return nil, err
		}
		ids = append(ids, en.ID)
	}
	return ids, nil
}

// Expire ends due lease u: the envelope is delivered again
// (envelope_redelivered) or, after its last attempt, is undeliverable
// (delivery_exhausted).
func Expire(t Tx, u envstore.Due) error {
	if err := t.Step("lease_expired"); err != nil {
		return err
	}
	en, ok, err := envstore.Expire(t.Txn(), u)
	if err != nil || !ok {
		// !ok: the envelope left the inbox without its deadline key
		// (never written so, but harmless); the key is gone now.
		return err
	}
	env, err := envstore.Get(t.Txn(), u.ID)
	if err != nil {
		return err
	}
	if en.Delivery.Attempt < envelope.MaxDeliveries {
		if err := envstore.Release(t.Txn(), en); err != nil {
			return err
		}
		t.Arrived(env.To)
		return t.Append(env.To, trail.ActorProtocol, trail.EventEnvelopeRedelivered, map[string]any{
			"envelope_id": env.ID, "from": env.From, "to": env.To, "timestamp": nil,
		})
	}
	if err := envstore.Remove(t.Txn(), en); err != nil {
		return err
	}
	err = t.Append(env.From, trail.ActorProtocol, trail.EventEnvelopeUndeliverable, map[string]any{
		"envelope_id": env.ID, "from": env.From, "to": env.To, "reason": ReasonDeliveryExhausted, "timestamp": nil,
	})
	if err != nil {
		return err
	}
	if err := t.Signal(env.To, env.From, taxonomy.SignalFailed, ReasonDeliveryExhausted, env.ID); err != nil {
		return err
	}
	env.Status = envelope.StatusRejected
	return envstore.Put(t.Txn(), env)
}

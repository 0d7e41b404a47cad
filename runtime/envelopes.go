package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/runtime/delivery"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

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
		return envelope.Envelope{}, Refuse(wire.CodeNotFound, "workspace %s does not exist", ws)
	}
	req, err := envelope.DecodeRequest(body)
	var plan envelope.SendPlan
	if err == nil {
		plan, err = e.planSend(ws, req) // rights.go: validation with the rights table
	}
	if err == nil {
		err = e.checkGrace(req) // graceful.go
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
	var gateID string
	err = e.commit(metered(ws, len(body), func(t *tx) error {
		if err := t.mintRights(ws, &plan); err != nil { // rights.go
			return err
		}
		ts := t.next()
		env = envelope.Envelope{
			ID: e.ids.New(ts), From: ws, To: req.To, Originator: from.Originator, Type: req.Type,
			Payload: req.Payload, InReplyTo: req.InReplyTo, Priority: req.Priority,
			Timestamp: clock.Format(ts), Origin: envelope.OriginAgent, Status: envelope.StatusValidated,
		}
		if err := t.sendRights(&env, plan); err != nil {
			return err
		}
		if !e.cfg.Highway.Gated(highway.EnvelopeDelivery) {
			if err := delivery.Send(deliveryTx{t}, ts, e.actorOf(from), &env); err != nil {
				return err
			}
			if err := t.consumeRight(&env, plan); err != nil {
				return err
			}
			return t.startGrace(&env, e.actorOf(from)) // graceful.go
		}
		var err error
		if gateID, err = t.holdEnvelope(ts, e.actorOf(from), &env); err != nil {
			return err
		}
		return t.consumeRight(&env, plan)
	}))
	if err == nil && gateID != "" {
		err = gatePending(gateID, highway.EnvelopeDelivery, "the delivery of envelope "+env.ID)
	}
	return env, err
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
			return Refuse(wire.CodeNotFound, "workspace %s does not exist", ws)
		}
		return e.commit(func(t *tx) error {
			got, err := delivery.Lease(deliveryTx{t}, ws, e.cfg.DeliveryLease)
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

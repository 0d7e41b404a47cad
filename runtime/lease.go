package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/runtime/delivery"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Delivery leases (WACP Envelope §7, redelivery; package delivery): the
// engine's side. inbox.next leases (envelopes.go), inbox.ack and
// ack_previous acknowledge, and the timer loop (RunTimers) ends the
// leases that ran out, also those held when the daemon stopped.

const defaultDeliveryLease = 30 * time.Second

// AckEnvelope acknowledges envelope id for the agent of workspace ws: the
// envelope leaves ws's inbox, whether it is leased or back after a lease
// ended. Acknowledging an envelope that already left the inbox is not an
// error (a client may repeat an acknowledgement whose reply it lost); an
// id that is not an envelope addressed to ws is not_found.
func (e *Engine) AckEnvelope(ctx context.Context, ws, id string) (wire.AckResult, error) {
	return runAs(ctx, e, len(id), func() (wire.AckResult, error) {
		if e.get(ws) == nil {
			return wire.AckResult{}, Refuse(wire.CodeNotFound, "workspace %s does not exist", ws)
		}
		if id == "" {
			return wire.AckResult{}, Refuse(wire.CodeInvalidStructure, "id is required")
		}
		res := wire.AckResult{ID: id}
		err := e.commit(func(t *tx) error {
			removed, err := delivery.Ack(deliveryTx{t}, ws, id)
			if errors.Is(err, delivery.ErrNotAddressed) {
				return Refuse(wire.CodeNotFound, "no envelope %s was sent to workspace %s", id, ws)
			}
			res.Removed = removed
			return err
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
			return nil, Refuse(wire.CodeNotFound, "workspace %s does not exist", ws)
		}
		var ids []string
		err := e.commit(func(t *tx) error {
			var err error
			ids, err = delivery.AckLeased(deliveryTx{t}, ws)
			return err
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
		due, err := envstore.DueBy(e.open.tx.txn.Txn, now)
		if err != nil {
			return 0, err
		}
		for i, u := range due {
			if err := e.commit(func(t *tx) error { return delivery.Expire(deliveryTx{t}, u) }); err != nil {
				return i, err
			}
		}
		return len(due), nil
	})
}

// nextLeaseDeadline returns the earliest lease deadline, if any lease is
// held.
func (e *Engine) nextLeaseDeadline() (at time.Time, found bool, err error) {
	if err := e.settle(context.Background()); err != nil {
		return time.Time{}, false, err
	}
	err = e.db.View(func(txn *badger.Txn) error {
		at, found = envstore.NextDeadline(txn)
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

// deliveryTx is a commit's layer as package delivery sees it.
type deliveryTx struct{ t *tx }

func (d deliveryTx) Txn() *seglog.Txn                         { return d.t.txn }
func (d deliveryTx) Step(name string) error                   { return d.t.step(name) }
func (d deliveryTx) Now() time.Time                           { return d.t.next() }
func (d deliveryTx) Arrived(ws string)                        { d.t.inboxed[ws] = true }
func (d deliveryTx) Leased()                                  { d.t.leased = true }
func (d deliveryTx) Workspace(id string) *workspace.Workspace { return d.t.peek(id) }

func (d deliveryTx) Record(ts time.Time, ws, actor string, typ trail.EventType, body map[string]any) error {
	return d.t.appendAt(ts, ws, actor, typ, body)
}

func (d deliveryTx) Append(ws, actor string, typ trail.EventType, body map[string]any) error {
	_, err := d.t.append(ws, actor, typ, body)
	return err
}

func (d deliveryTx) Activate(id string) error {
	return d.t.transition(d.t.ws(id), workspace.FirstEnvelope, trail.ActorProtocol, "", false)
}

func (d deliveryTx) Signal(from, to string, typ taxonomy.SignalType, reason, ref string) error {
	_, err := d.t.emitTo(d.t.peek(from), d.t.peek(to), typ, reason, ref, trail.ActorProtocol)
	return err
}

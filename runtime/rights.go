package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// Port rights (PROTOCOL §5.6, Channels §2, Envelope §3 and §10).
//
// The rights table (envstore, e/r/ and e/h/) is written in the transaction
// of the trail entry that changes it, so it is always what the trail says:
// the rights created (port_right_created), minus those revoked
// (port_right_revoked) and consumed (port_right_consumed), with holders
// moved by transfers (port_right_transferred); envelope.ApplyRightEvent
// derives it from the trail, which is how a data dir of an earlier release
// gets its table at open (buildRights), and how tests compare.
//
//   - A new workspace and its parent get a send right to each other; so do
//     the root and a workspace the failure cascade moves under it.
//   - An envelope goes through only if its sender holds a right to the
//     receiver (a send right first, else a send_once right, which it
//     consumes: port_right_consumed in the sender's trail).
//   - The rights an envelope carries are the sender's (the coordinator
//     creates one it lacks: port_right_created); they are in transit until
//     delivery, which moves them to the receiver (port_right_transferred in
//     the receiver's trail). An envelope that ends undelivered leaves them
//     with the sender.
//   - The coordinator revokes any right (port_right_revoked in the
//     holder's trail); an envelope already accepted is still delivered.
//   - A right is valid while its holder is not terminal.

// heldBy returns the rights ws holds, read through the open batch. Caller
// runs in the committer.
func (e *Engine) heldBy(ws string) ([]envelope.Right, error) {
	return envstore.HeldBy(e.open.tx.txn.Txn, ws)
}

// planSend validates req from ws with the rights table and plans what it
// does to the sender's rights. Caller runs in the committer.
func (e *Engine) planSend(ws string, req envelope.Request) (envelope.SendPlan, error) {
	held, err := e.heldBy(ws)
	if err != nil {
		return envelope.SendPlan{}, err
	}
	_, noRight := envelope.Plan(held, ws, req.To, nil, false)
	err = envelope.CheckSend(e.tax, e.party(ws), e.party(req.To), req.Type, noRight == nil, e.canSee(ws, req.To))
	if err != nil {
		return envelope.SendPlan{}, err
	}
	return envelope.Plan(held, ws, req.To, req.Rights, e.get(ws).IsRoot())
}

// mintRights creates, in ws's trail, the rights of plan the sender (the
// coordinator) does not hold and sets their ids. It runs before the
// envelope's own timestamp is taken, so the entries stay in order.
func (t *tx) mintRights(ws string, plan *envelope.SendPlan) error {
	for i, tr := range plan.Transfers {
		if !tr.Mint {
			continue
		}
		r, err := t.createRight(ws, tr.Right.Type, ws, tr.Right.Target, ws)
		if err != nil {
			return err
		}
		plan.Transfers[i].Right = r
	}
	return nil
}

// sendRights puts plan's transfers in transit on env and records them in
// env.Rights. The envelope's record is written after.
func (t *tx) sendRights(env *envelope.Envelope, plan envelope.SendPlan) error {
	env.Rights = []envelope.RightSpec{}
	for _, tr := range plan.Transfers {
		r := tr.Right
		prev := r
		r.Transit = env.ID
		if err := t.step("right_transit"); err != nil {
			return err
		}
		if err := envstore.PutRight(t.txn, r, prev); err != nil {
			return err
		}
		env.Rights = append(env.Rights, envelope.RightSpec{Type: r.Type, Target: r.Target, RightID: r.ID})
	}
	return nil
}

// consumeRight ends the send_once right plan used for env, if it used one:
// port_right_consumed in the sender's trail.
func (t *tx) consumeRight(env *envelope.Envelope, plan envelope.SendPlan) error {
	r := plan.Use
	if r.Type != envelope.RightSendOnce {
		return nil
	}
	if err := t.step("right_consumed"); err != nil {
		return err
	}
	if err := envstore.DeleteRight(t.txn, r); err != nil {
		return err
	}
	_, err := t.append(r.Holder, trail.ActorProtocol, trail.EventPortRightConsumed, map[string]any{
		"right_id": r.ID, "holder": r.Holder, "target": r.Target, "via_envelope": env.ID,
	})
	return err
}

// createRight creates a right of type typ for holder to target, made by
// the agent of createdBy: port_right_created in ws's trail.
func (t *tx) createRight(ws, typ, holder, target, createdBy string) (envelope.Right, error) {
	ts := t.next()
	r := envelope.Right{ID: t.e.ids.New(ts), Type: typ, Holder: holder, Target: target}
	err := t.appendAt(ts, ws, trail.ActorProtocol, trail.EventPortRightCreated, map[string]any{
		"right_id": r.ID, "right_type": r.Type, "holder": r.Holder, "target": r.Target, "created_by": createdBy,
	})
	if err != nil {
		return r, err
	}
	if err := t.step("right"); err != nil {
		return r, err
	}
	return r, envstore.PutRight(t.txn, r, envelope.Right{})
}

// linkRights gives workspace child and its parent a send right to each
// other (at creation, and when the cascade moves child under the root),
// made by the agent of createdBy, in child's trail.
func (t *tx) linkRights(child, parent, createdBy string) error {
	for _, r := range [][2]string{{parent, child}, {child, parent}} {
		if _, err := t.createRight(child, envelope.RightSend, r[0], r[1], createdBy); err != nil {
			return err
		}
	}
	return nil
}

// settleRights is deliveryTx.Rights: env's rights in transit move to its
// receiver when delivered (port_right_transferred in the receiver's
// trail), or rest again with its sender when it ends undelivered. A right
// revoked in transit is gone.
func (t *tx) settleRights(env *envelope.Envelope, delivered bool) error {
	for _, s := range env.Rights {
		r, err := envstore.GetRight(t.txn.Txn, s.RightID)
		if errors.Is(err, envstore.ErrNoRight) {
			continue
		}
		if err != nil {
			return err
		}
		if r.Transit != env.ID {
			continue
		}
		prev := r
		r.Transit = ""
		if delivered {
			r.Holder = env.To
			_, err := t.append(env.To, trail.ActorProtocol, trail.EventPortRightTransferred, map[string]any{
				"right_id": r.ID, "right_type": r.Type, "from_holder": prev.Holder, "to_holder": r.Holder,
				"target": r.Target, "via_envelope": env.ID,
			})
			if err != nil {
				return err
			}
		}
		if err := t.step("right_settled"); err != nil {
			return err
		}
		if err := envstore.PutRight(t.txn, r, prev); err != nil {
			return err
		}
	}
	return nil
}

// RevokeRight revokes port right id for the agent of actor, which must be
// the coordinator (PROTOCOL §5.6: the coordinator revokes any send right):
// port_right_revoked in the holder's trail, with reason. An envelope that
// carries it, accepted before, is still delivered, without it.
func (e *Engine) RevokeRight(ctx context.Context, actor, id, reason string) (envelope.Right, error) {
	if reason == "" {
		reason = "coordinator_request"
	}
	return runAs(ctx, e, 0, func() (envelope.Right, error) {
		a := e.get(actor)
		if a == nil || !a.IsRoot() {
			return envelope.Right{}, Refuse(wire.CodePermissionDenied, "only the coordinator revokes port rights")
		}
		r, err := envstore.GetRight(e.open.tx.txn.Txn, id)
		if errors.Is(err, envstore.ErrNoRight) {
			return r, Refuse(wire.CodeNotFound, "port right %s does not exist (never created, or revoked or consumed)", id)
		}
		if err != nil {
			return r, err
		}
		err = e.commit(func(t *tx) error {
			if err := t.step("right_revoked"); err != nil {
				return err
			}
			if err := envstore.DeleteRight(t.txn, r); err != nil {
				return err
			}
			_, err := t.append(r.Holder, e.actorOf(a), trail.EventPortRightRevoked, map[string]any{
				"right_id": r.ID, "right_type": r.Type, "holder": r.Holder, "target": r.Target,
				"revoked_by": actor, "reason": reason,
			})
			return err
		})
		return r, err
	})
}

// Rights returns the rights workspace ws holds (outbound) and those held
// to it (inbound), by right id (Channels CH-C7), for the agent of actor,
// which must see ws.
func (e *Engine) Rights(ctx context.Context, actor, ws string) (out, in []envelope.Right, err error) {
	e.mu.Lock()
	_, err = e.lookupFor(actor, ws)
	e.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if err := e.settle(ctx); err != nil {
		return nil, nil, err
	}
	all, err := e.allRights()
	if err != nil {
		return nil, nil, err
	}
	out, in = []envelope.Right{}, []envelope.Right{}
	for _, r := range all {
		if r.Holder == ws {
			out = append(out, r)
		}
		if r.Target == ws {
			in = append(in, r)
		}
	}
	return out, in, nil
}

// allRights returns the committed rights table, sorted by right id.
func (e *Engine) allRights() ([]envelope.Right, error) {
	var all map[string]envelope.Right
	err := e.db.View(func(txn *badger.Txn) error {
		var err error
		all, err = envstore.AllRights(txn)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]envelope.Right, 0, len(all))
	for _, r := range all {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// rightsFromTrail derives the rights table from the global trail
// (envelope.ApplyRightEvent).
func (e *Engine) rightsFromTrail(ctx context.Context) (map[string]envelope.Right, error) {
	rights := map[string]envelope.Right{}
	var applyErr error
	err := e.log.ScanAfter(ctx, 0, func(_ uint64, en trail.Entry) bool {
		applyErr = envelope.ApplyRightEvent(rights, string(en.EventType), en.Body)
		if applyErr != nil {
			applyErr = fmt.Errorf("entry %s: %w", en.ID, applyErr)
		}
		return applyErr == nil
	})
	if err == nil {
		err = applyErr
	}
	return rights, err
}

// buildRights gives a data dir of an earlier release, which kept no rights
// table (its rights were implicit), the table its trail says; the envelopes
// then in transit carry none. It runs at open, once.
func (e *Engine) buildRights(ctx context.Context) error {
	var built bool
	if err := e.db.View(func(txn *badger.Txn) error {
		var err error
		built, err = envstore.RightsBuilt(txn)
		return err
	}); err != nil || built {
		return err
	}
	rights, err := e.rightsFromTrail(ctx)
	if err != nil {
		return fmt.Errorf("build the port rights table from the trail: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return e.run(ctx, 0, func() error {
		return e.commit(func(t *tx) error {
			if err := t.step("rights_table"); err != nil {
				return err
			}
			if err := envstore.ClearRights(t.txn); err != nil {
				return err
			}
			for _, r := range rights {
				if err := envstore.PutRight(t.txn, r, envelope.Right{}); err != nil {
					return err
				}
			}
			return envstore.MarkRightsBuilt(t.txn)
		})
	})
}

// Rights is delivery's hook (deliveryTx): see settleRights.
func (d deliveryTx) Rights(env *envelope.Envelope, delivered bool) error {
	return d.t.settleRights(env, delivered)
}

package runtime

import (
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/runtime/delivery"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// transition moves w (a tx copy) on trigger and writes
// workspace_state_changed in w's trail. actor is who caused it (a role,
// "system" for the coordinator, "protocol" for the runtime). A move to
// failed records reason and runs the failure cascade unless noCascade.
func (t *tx) transition(w *workspace.Workspace, trig workspace.Trigger, actor, reason string, noCascade bool) error {
	to, pre, err := workspace.Next(w.State, w.PreState, trig)
	if err != nil {
		return err
	}
	from := w.State
	ts := t.next()
	body := map[string]any{
		"workspace_id": w.ID, "from_state": from, "to_state": to,
		"trigger": trig, "initiator": actor,
	}
	if reason != "" {
		body["reason"] = reason
	}
	if t.detail != "" {
		body["detail"], t.detail = t.detail, ""
	}
	if err := t.appendAt(ts, w.ID, actor, trail.EventWorkspaceStateChanged, body); err != nil {
		return err
	}
	now := clock.Format(ts)
	if from == workspace.Active && to != workspace.Active {
		w.Meter.ActiveNanos += activeSince(w, ts)
		w.Meter.ActiveSince = ""
	}
	if to == workspace.Active {
		w.Meter.ActiveSince = now
	}
	w.State, w.PreState, w.UpdatedAt = to, pre, now
	if to == workspace.Failed {
		w.Reason = reason
	}
	if err := t.put(w); err != nil {
		return err
	}
	if err := t.staleWorkspaceGates(w, from, to); err != nil {
		return err
	}
	if err := t.followTask(w, from, to); err != nil {
		return err
	}
	if to == workspace.Active && from != workspace.Active {
		if err := t.stewardStart(w); err != nil {
			return err
		}
	}
	if to.Terminal() {
		if err := t.endCarpSession(w, to, reason); err != nil {
			return err
		}
		if err := delivery.UndeliverQueued(deliveryTx{t}, w.ID); err != nil {
			return err
		}
	}
	if to == workspace.Failed && !noCascade {
		return t.cascade(w.ID)
	}
	return nil
}

// activeSince returns the time w has been active in its current interval.
func activeSince(w *workspace.Workspace, now time.Time) int64 {
	if w.Meter.ActiveSince == "" {
		return 0
	}
	since, err := clock.Parse(w.Meter.ActiveSince)
	if err != nil || now.Before(since) {
		return 0
	}
	return int64(now.Sub(since))
}

// cascade applies the failure cascade of workspace id (WACP Workspace §3):
// same-owner descendants fail with parent_failed, cross-owner children move
// under the root with their subtrees. A child reparented because its parent
// was aborted (by the coordinator, a delegate or a person) says so with the
// User spec's reason, parent_aborted_cross_ownership (§4.4); one whose
// parent failed otherwise (a timeout, a failed signal) with parent_failed.
func (t *tx) cascade(id string) error {
	all, kids := t.snapshot()
	plan := workspace.Cascade(all, kids, id)
	why := "parent_failed"
	if r := all[id].Reason; r == "aborted_by_coordinator" || r == "aborted_by_human" || r == "batch_abort" {
		why = "parent_aborted_cross_ownership"
	}
	for _, cid := range plan.Reparent {
		c := t.ws(cid)
		old := c.ParentID()
		root := t.e.root
		c.Parent = &root
		_, err := t.append(cid, trail.ActorProtocol, trail.EventWorkspaceReparented, map[string]any{
			"workspace_id": cid, "old_parent": old, "new_parent": root, "reason": why,
		})
		if err != nil {
			return err
		}
		if err := t.put(c); err != nil {
			return err
		}
		if err := t.linkRights(cid, root, root); err != nil { // rights.go: the root and its new child
			return err
		}
	}
	for _, cid := range plan.Fail {
		c := t.ws(cid)
		if _, err := t.emit(c, taxonomy.SignalFailed, "parent_failed", "", trail.ActorProtocol); err != nil {
			return err
		}
		if err := t.transition(c, workspace.ParentFailed, trail.ActorProtocol, "parent_failed", true); err != nil {
			return err
		}
	}
	return nil
}

// emit records a signal from workspace from to its parent.
func (t *tx) emit(from *workspace.Workspace, typ taxonomy.SignalType, reason, ref, actor string) (agentsignal.Signal, error) {
	return t.emitTo(from, t.peek(from.ParentID()), typ, reason, ref, actor)
}

// emitTo records a signal from workspace from to workspace to: signal_emitted
// in from's trail and, when to exists and is not terminal, signal_delivered
// in to's trail and an outbox item to publish it. A root signal (to nil), or
// one whose recipient is terminal, is recorded with no recipient
// (delivered_to null, delivered_at = the emission time).
func (t *tx) emitTo(from, to *workspace.Workspace, typ taxonomy.SignalType, reason, ref, actor string) (agentsignal.Signal, error) {
	ts := t.next()
	s := agentsignal.Signal{
		ID: t.e.ids.New(ts), From: from.ID, Type: typ, Reason: optional(reason), Ref: optional(ref),
		Timestamp: clock.Format(ts),
	}
	err := t.appendAt(ts, from.ID, actor, trail.EventSignalEmitted, &trail.SignalEmitted{
		SignalID: s.ID, From: s.From, Type: string(s.Type), Reason: s.Reason, Ref: s.Ref,
		Timestamp: s.Timestamp,
	})
	if err != nil {
		return s, err
	}
	if to == nil || to.State.Terminal() {
		s.DeliveredAt = s.Timestamp
		return s, nil
	}
	dts := t.next()
	s.DeliveredTo, s.DeliveredAt = &to.ID, clock.Format(dts)
	err = t.appendAt(dts, to.ID, trail.ActorProtocol, trail.EventSignalDelivered, &trail.SignalDelivered{
		SignalID: s.ID, From: s.From, DeliveredTo: to.ID, DeliveredAt: s.DeliveredAt,
	})
	if err != nil {
		return s, err
	}
	return s, t.queueSignal(s)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// actorOf returns the trail actor for an action of workspace w's agent: the
// role name, or "system" for the coordinator (WACP User spec).
func (e *Engine) actorOf(w *workspace.Workspace) string {
	if w.IsRoot() {
		return trail.ActorSystem
	}
	return w.Role
}

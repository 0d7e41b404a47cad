package runtime

// What operators do to a session's approvals besides answering its
// checkpoints (issue 16): set its checkpoint mode, revoke a permit,
// restore a boundary's trust, and look at all of it.

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// Approvals returns session ws's approvals (every session's when ws is
// ""), sessions in id order.
func (e *Engine) Approvals(ctx context.Context, ws string) []wire.ApprovalState {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	states := map[string]*wire.ApprovalState{}
	state := func(id string) *wire.ApprovalState {
		st, ok := states[id]
		if !ok && (ws == "" || id == ws) {
			st = &wire.ApprovalState{Session: id, Envelope: e.appr.envelopes[id], TrustLog: e.appr.trust[id],
				Permits: []wire.PermitView{}, Checkpoints: []approval.Checkpoint{}}
			states[id] = st
		}
		return st
	}
	for id := range e.appr.envelopes {
		state(id)
	}
	for id := range e.appr.trust {
		state(id)
	}
	for _, cp := range e.appr.cps {
		if st := state(cp.Session); st != nil {
			st.Checkpoints = append(st.Checkpoints, cp)
		}
	}
	out := []wire.ApprovalState{}
	for id, st := range states {
		if st.TrustLog == nil {
			st.TrustLog = []approval.TrustEvent{}
		}
		trust := approval.Fold(st.TrustLog)
		st.Trust = trust.Snapshot(slices.Sorted(maps.Keys(trust)))
		for _, pid := range e.appr.bySession[id] {
			p := e.appr.permits[pid]
			st.Permits = append(st.Permits, wire.PermitView{Permit: p, Status: p.Status(now)})
		}
		slices.SortFunc(st.Permits, func(a, b wire.PermitView) int { return a.IssuedAt.Compare(b.IssuedAt) })
		slices.SortFunc(st.Checkpoints, func(a, b approval.Checkpoint) int { return a.CreatedAt.Compare(b.CreatedAt) })
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b wire.ApprovalState) int { return strings.Compare(a.Session, b.Session) })
	return out
}

// sessionTarget is session ws as a capability's target.
func (t *tx) sessionTarget(ws string) (user.Target, error) {
	w := t.peek(ws)
	if w == nil {
		return user.Target{}, Refuse(wire.CodeNotFound, "workspace %s does not exist", ws)
	}
	return user.Target{ID: w.ID, Owner: w.Owner}, nil
}

// SetApprovalMode sets session req.Workspace's checkpoint mode for
// person uid (checkpoint.mode: inject_directive over the workspace). The
// mode never is refused unless every loaded atlas's policy allows it; it
// never waives a mandatory trigger.
func (e *Engine) SetApprovalMode(ctx context.Context, uid string, req wire.ApprovalModeRequest) (approval.Envelope, error) {
	mode, err := approval.ParseMode(req.Mode)
	if err != nil || req.Mode == "" {
		return approval.Envelope{}, Refuse(wire.CodeInvalidStructure, "mode %q is not always, policy or never", req.Mode)
	}
	var out approval.Envelope
	err = e.run(ctx, 0, func() error {
		return e.userCommit(func(t *tx) error {
			ts := clock.Format(t.next())
			if err := t.authorizeOn(uid, "approval.mode", req.Workspace, ts); err != nil {
				return err
			}
			if mode == approval.ModeNever {
				list, sums := t.atlases()
				for _, m := range list {
					if !approval.FromAtlas(m, sums[m.AtlasID]).AllowNever {
						return Refuse(wire.CodePermissionDenied, "mode never is refused by the policy of atlas %s (approvals.allow_never is false)", m.AtlasID)
					}
				}
			}
			env := t.envelope(req.Workspace)
			from := env.Mode
			env.Mode = mode
			env.PerStep = false // setting a mode ends per-step approval (an operator's p)
			if err := t.putEnvelope(req.Workspace, env); err != nil {
				return err
			}
			out = env
			_, err = t.traceEmit(t.sessionSpan(req.Workspace, "", nil), approval.TraceModeChanged, map[string]any{
				"from": string(from), "to": string(mode), "by": uid, "reason": req.Reason})
			return err
		})
	})
	return out, err
}

// RevokePermit revokes permit req.PermitID for person uid (permit.revoke:
// inject_directive over its session), effective at once: an execute
// after it is not covered by it.
func (e *Engine) RevokePermit(ctx context.Context, uid string, req wire.PermitRevokeRequest) (approval.Permit, error) {
	var out approval.Permit
	err := e.run(ctx, 0, func() error {
		return e.userCommit(func(t *tx) error {
			pm, ok := t.permit(req.PermitID)
			if !ok {
				return Refuse(wire.CodeNotFound, "permit %s does not exist", req.PermitID)
			}
			target, err := t.sessionTarget(pm.Session)
			if err != nil {
				return err
			}
			now := t.next()
			if err := t.authorizeUser(uid, "permit.revoke", target, clock.Format(now)); err != nil {
				return err
			}
			if err := pm.Usable(now); err != nil {
				return Refuse(wire.CodeInvalidTransition, "%v", err)
			}
			reason := req.Reason
			if reason == "" {
				reason = "revoked_by_operator"
			}
			if err := t.revokePermit(t.sessionSpan(pm.Session, "", nil), pm, uid, reason, now); err != nil {
				return err
			}
			out, _ = t.permit(pm.ID)
			return nil
		})
	})
	return out, err
}

// RestoreTrust makes boundary req.Boundary of session req.Workspace
// trusted again for person uid (trust.restore: inject_directive over the
// workspace): an event of the trust log, no other boundary touched.
func (e *Engine) RestoreTrust(ctx context.Context, uid string, req wire.TrustRestoreRequest) (approval.BoundaryTrust, error) {
	if _, _, err := approval.ParseBoundary(req.Boundary); err != nil {
		return approval.BoundaryTrust{}, Refuse(wire.CodeInvalidStructure, "%v", err)
	}
	var out approval.BoundaryTrust
	err := e.run(ctx, 0, func() error {
		return e.userCommit(func(t *tx) error {
			now := t.next()
			if err := t.authorizeOn(uid, "trust.restore", req.Workspace, clock.Format(now)); err != nil {
				return err
			}
			if approval.Fold(t.trustEvents(req.Workspace)).Of(req.Boundary).State != approval.Untrusted {
				return Refuse(wire.CodeInvalidTransition, "boundary %s of %s is trusted", req.Boundary, req.Workspace)
			}
			ev, err := t.appendTrust(req.Workspace, approval.TrustEvent{Boundary: req.Boundary, Kind: approval.TrustRestored,
				Reason: req.Reason, At: clock.Format(now), Actor: uid})
			if err != nil {
				return err
			}
			out = approval.Fold(t.trustEvents(req.Workspace)).Of(req.Boundary)
			_, err = t.traceEmit(t.sessionSpan(req.Workspace, "", nil), approval.TraceTrust, map[string]any{"boundary": traceBoundary(req.Boundary),
				"kind": ev.Kind, "reason": req.Reason, "seq": ev.Seq, "state": approval.Trusted, "by": uid})
			return err
		})
	})
	return out, err
}

// cancelCheckpoints resolves the pending checkpoints of session ws as
// invalidated (their gates by the protocol, the held executions
// cancelled) as the workspace ends: nobody is left to run them.
func (t *tx) cancelCheckpoints(ws string) error {
	for _, g := range t.gatesSeen() {
		if !g.Pending() || g.Type != highway.EnvelopeDelivery {
			continue
		}
		if cp, ok := t.checkpoint(g.ID); !ok || cp.Session != ws {
			continue
		}
		res, ev, err := highway.Invalidate(g, clock.Format(t.next()))
		if err != nil {
			return err
		}
		if err := t.putGate(res); err != nil {
			return err
		}
		if err := t.gateAppend(gateWorkspace(res), highway.ActorProtocol, ev); err != nil {
			return err
		}
		if err := t.settleGate(res); err != nil {
			return err
		}
	}
	return nil
}

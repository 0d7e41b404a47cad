package runtime

// The operations of operator approvals (issue 16) on the CARP execute
// path and the human highway, over the records of approvals.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// governedReq is an execute's request as approvals see it: its canonical
// form, its action's facts and its atlas's approval policy.
type governedReq struct {
	req    approval.Canonical
	action approval.Action
	policy approval.Policy
}

// governed puts req, under grant g, in canonical form. It returns nil
// (and no refusal) when the grant does not name the action or its atlas
// is gone: carp.Authorize refuses those next.
func (t *tx) governed(g carp.Grant, req carp.Request, ws string) (*governedReq, *carp.Error) {
	ga, m, sum, a, ok := t.grantedAction(g, req.Action.ActionID)
	if !ok {
		return nil, nil
	}
	pol := approval.FromAtlas(m, sum)
	if pol.Timeout == 0 {
		// The steward's requires_approval timeout is the checkpoint's when
		// the approvals section sets none: the shortest of the policies
		// that require it.
		for _, p := range m.Policies {
			if p.Type == atlas.PolicyRequiresApproval && p.ApprovalTimeoutSeconds > 0 && slices.Contains(ga.ApprovalPolicies, p.PolicyID) {
				if d := time.Duration(p.ApprovalTimeoutSeconds) * time.Second; pol.Timeout == 0 || d < pol.Timeout {
					pol.Timeout = d
				}
			}
		}
	}
	c, err := approval.Canonicalize(ga.ActionID, req.Action.Parameters,
		approval.Context{Session: ws, Agent: req.Requester.AgentID, Atlas: m.AtlasID, PolicyVersion: pol.Version})
	if err != nil {
		return nil, carp.Errorf(carp.CodeInvalidRequest, "the request has no canonical form: %v", err)
	}
	return &governedReq{req: c, action: approval.FromAtlasAction(a, ga.RequiresApproval, ga.ApprovalPolicies), policy: pol}, nil
}

// grantedAction returns action id as grant g granted it, the loaded atlas
// that defines it with its checksum, and its definition there; ok is false
// when the grant does not name it, or its atlas or its definition is gone.
func (t *tx) grantedAction(g carp.Grant, id string) (ga carp.GrantedAction, m *atlas.Manifest, sum string, a atlas.Action, ok bool) {
	i := slices.IndexFunc(g.Actions, func(x carp.GrantedAction) bool { return x.ActionID == id })
	if i < 0 {
		return ga, nil, "", a, false
	}
	ga = g.Actions[i]
	if m, sum = t.atlasOf(ga.AtlasID); m == nil {
		return ga, nil, "", a, false
	}
	j := slices.IndexFunc(m.Actions, func(x atlas.Action) bool { return x.ActionID == id })
	if j < 0 {
		return ga, nil, "", a, false
	}
	return ga, m, sum, m.Actions[j], true
}

// atlasOf returns loaded atlas id and its checksum.
func (t *tx) atlasOf(id string) (*atlas.Manifest, string) {
	list, sums := t.atlases()
	for _, m := range list {
		if m.AtlasID == id {
			return m, sums[id]
		}
	}
	return nil, ""
}

// policyOf returns the approval policy of atlas id (the defaults when it
// is not loaded).
func (t *tx) policyOf(id string) approval.Policy {
	if m, sum := t.atlasOf(id); m != nil {
		return approval.FromAtlas(m, sum)
	}
	return approval.FromAtlas(&atlas.Manifest{AtlasID: id}, "")
}

// denied is the refusal of an execute whose checkpoint denied it (or
// whose approval cannot be used): ACTION_DENIED with details.denial.
func denied(cp approval.Checkpoint, reason, format string, args ...any) *carp.Error {
	ce := carp.Errorf(carp.CodeActionDenied, format, args...)
	d := map[string]any{"approval_id": cp.ApprovalID, "execution_id": cp.ExecutionID, "status": cp.Status,
		"reason": reason, "digest": cp.Digest, "checkpoint_type": cp.Pending.CheckpointType}
	if cp.Outcome != "" {
		d["outcome"] = string(cp.Outcome)
	}
	if cp.DecidedBy != "" {
		d["decided_by"] = cp.DecidedBy
	}
	ce.Details = map[string]any{"denial": d}
	return ce
}

// checkpointGate decides whether execution x of gv waits at a checkpoint:
// it returns the checkpoint that holds it (a new one, or, for an execute
// naming a pending approval, that one), or nil when x may run (a permit's
// use recorded in x.PermitID, or nothing to check), or sets *refusal.
func (t *tx) checkpointGate(sp span, req carp.Request, gv *governedReq, x *Execution, now time.Time, refusal **CarpError) (*approval.Checkpoint, error) {
	ws := x.SessionID
	events := t.trustEvents(ws)
	env := t.envelope(ws)
	eval := env
	eval.Mode = t.modeOf(ws)
	in := approval.Input{Request: gv.req, Action: gv.action, Policy: gv.policy, Envelope: eval,
		Trust: approval.Fold(events), TrustSeq: len(events), Now: now, Permits: t.sessionPermits(ws)}
	var named *approval.Permit
	if req.ApprovalID != "" {
		cp, ok := t.checkpoint(req.ApprovalID)
		if !ok || cp.Session != ws {
			return nil, t.refuse(sp, req, carp.Errorf(carp.CodeInvalidRequest, "approval %s does not exist in session %s", req.ApprovalID, ws), carp.TraceActionDenied, refusal)
		}
		switch cp.Status {
		case approval.StatusPending:
			return &cp, nil
		case approval.StatusDenied, approval.StatusCancelled:
			reason := cp.Reason
			if reason == "" {
				reason = string(cp.Outcome)
			}
			return nil, t.refuse(sp, req, denied(cp, reason, "approval %s is %s: the action does not run", cp.ApprovalID, cp.Status), carp.TraceActionDenied, refusal)
		}
		pm, _ := t.permit(cp.PermitID)
		if err := approval.Bind(pm, gv.req, now); err != nil {
			if !errors.Is(err, approval.ErrMutated) {
				return nil, t.refuse(sp, req, denied(cp, pm.Status(now), "approval %s cannot be used: %v", cp.ApprovalID, err), carp.TraceActionDenied, refusal)
			}
			// Not the approved request: the approval is cancelled, and the
			// tool's boundary has its violation.
			if err := t.revokePermit(sp, pm, trail.ActorProtocol, approval.ReasonArgumentsMutated, now); err != nil {
				return nil, err
			}
			cp.Status, cp.Reason = approval.StatusCancelled, approval.ReasonArgumentsMutated
			if err := t.putCheckpoint(cp); err != nil {
				return nil, err
			}
			if err := t.violate(sp, ws, approval.Boundary(approval.BoundaryTool, gv.req.Tool), approval.ReasonArgumentsMutated, gv.policy); err != nil {
				return nil, err
			}
			ce := denied(cp, approval.ReasonArgumentsMutated, "%v; approval %s is cancelled", err, cp.ApprovalID)
			ce.Details["denial"].(map[string]any)["approved_digest"] = pm.Digest
			ce.Details["denial"].(map[string]any)["request_digest"] = gv.req.Digest
			return nil, t.refuse(sp, req, ce, carp.TracePolicyViolated, refusal)
		}
		named = &pm
		in.Permits = []approval.Permit{pm}
	}
	d := approval.Evaluate(in)
	if d.Adopted { // a first provider class, a first policy version
		d.Envelope.Mode = env.Mode // the session's own mode, not the one it inherits
		if err := t.putEnvelope(ws, d.Envelope); err != nil {
			return nil, err
		}
	}
	if d.Checkpoint() {
		cp, err := t.openCheckpoint(sp, in, d, *x)
		return &cp, err
	}
	pm := d.Permit
	if pm == nil {
		pm = named
	}
	if pm == nil {
		pm = unusedExact(in.Permits, gv.req.Digest, now) // an approved request asked again without its approval_id
	}
	if pm == nil {
		return nil, nil
	}
	if pm.Digest != "" && len(pm.Uses) == 0 {
		// The approved request runs as the execution the checkpoint held.
		if cp, ok := t.checkpoint(pm.ApprovalID); ok {
			if held, ok := t.execution(cp.ExecutionID); ok && held.Status == carp.StatusPendingApproval {
				x.ID = held.ID
				if x.IdempotencyKey == "" {
					x.IdempotencyKey = held.IdempotencyKey
				}
			}
		}
	}
	used := pm.Use(x.ID)
	if err := t.putPermit(used); err != nil {
		return nil, err
	}
	x.PermitID = used.ID
	_, err := t.traceEmit(sp, approval.TracePermitUsed, map[string]any{"permit_id": used.ID, "approval_id": used.ApprovalID,
		"execution_id": x.ID, "uses": len(used.Uses), "max_uses": used.MaxUses, "digest": gv.req.Digest})
	return nil, err
}

// modeOf is session ws's checkpoint mode: its own, else its nearest
// ancestor's (a mode set on the root workspace is the run's), else policy.
func (t *tx) modeOf(ws string) approval.Mode {
	for id, n := ws, 0; id != "" && n < 1000; n++ {
		if m := t.envelope(id).Mode; m != "" {
			return m
		}
		w := t.peek(id)
		if w == nil {
			break
		}
		id = w.ParentID()
	}
	return approval.ModePolicy
}

// pathsHash is the SHA-256 of a permit's paths (their JSON): TRACE
// holds hashes of what an agent sent, never the content.
func pathsHash(paths []string) string {
	b, _ := json.Marshal(paths)
	return carp.ContentHash(b)
}

// traceBoundary is a boundary as TRACE records it: a path boundary's
// path is the agent's content, so its SHA-256 stands for it
// (path:sha256:<hex>); the other kinds name the atlas's own ids.
func traceBoundary(b string) string {
	if kind, name, err := approval.ParseBoundary(b); err == nil && kind == approval.BoundaryPath {
		return approval.Boundary(kind, carp.ContentHash([]byte(name)))
	}
	return b
}

// approvedNow reports whether approval id of session ws is approved and
// its permit usable at now.
func (t *tx) approvedNow(ws, id string, now time.Time) bool {
	if id == "" {
		return false
	}
	cp, ok := t.checkpoint(id)
	if !ok || cp.Session != ws || cp.Status != approval.StatusApproved {
		return false
	}
	pm, ok := t.permit(cp.PermitID)
	return ok && pm.Usable(now) == nil
}

// unusedExact returns a usable permit bound to digest that was never used.
func unusedExact(ps []approval.Permit, digest string, now time.Time) *approval.Permit {
	for i := range ps {
		if p := &ps[i]; p.Digest != "" && len(p.Uses) == 0 && p.Usable(now) == nil && approval.SameDigest(p.Digest, digest) {
			return p
		}
	}
	return nil
}

// checkpointSubject is a checkpoint gate's subject: what the operator is
// shown (checkpoint_pending first), the canonical request, and the
// envelope an approval grants (payload, what a modify changes).
type checkpointSubject struct {
	Pending          approval.Pending         `json:"checkpoint_pending"`
	ExecutionID      string                   `json:"execution_id"`
	Session          string                   `json:"session"`
	Agent            string                   `json:"agent"`
	Tool             string                   `json:"tool"`
	CanonicalRequest json.RawMessage          `json:"canonical_request"`
	Digest           string                   `json:"digest"`
	Version          string                   `json:"canonicalization_version"`
	Triggers         []approval.Trigger       `json:"triggers"`
	ScopeDelta       approval.Delta           `json:"scope_delta"`
	Trust            []approval.BoundaryTrust `json:"trust_snapshot"`
	SideEffectClass  string                   `json:"side_effect_class"`
	Outcomes         []string                 `json:"outcomes"`
	Payload          approval.Proposal        `json:"payload"`
}

// openCheckpoint holds execution x at a new checkpoint: a highway gate of
// type envelope_delivery (subject: the execution), opened whether or not
// the highway gates envelope deliveries, waiting for the policy's timeout
// (or indefinitely) and timing out to reject — never to approve.
func (t *tx) openCheckpoint(sp span, in approval.Input, d approval.Decision, x Execution) (approval.Checkpoint, error) {
	cp := approval.NewCheckpoint(in, d, x.ID, x.AgentID)
	body, err := json.Marshal(checkpointSubject{Pending: cp.Pending, ExecutionID: x.ID, Session: cp.Session, Agent: cp.Agent,
		Tool: cp.Tool, CanonicalRequest: cp.Form, Digest: cp.Digest, Version: cp.Version, Triggers: cp.Triggers,
		ScopeDelta: cp.Delta, Trust: cp.Trust, SideEffectClass: cp.SideEffectClass, Payload: cp.Proposal,
		Outcomes: []string{"approve: continue | per_step", "modify payload: continue_modified", "reject: deny | halt"}})
	if err != nil {
		return cp, err
	}
	cfg := *t.e.cfg.Highway
	pol := highway.Policy{Fallback: highway.FallbackReject}
	if to := in.Policy.Timeout; to > 0 {
		pol.Timeout = &to
	}
	cfg.Overrides = map[highway.GateType]highway.Policy{highway.EnvelopeDelivery: pol}
	id, held, err := t.openGateWith(cfg, highway.EnvelopeDelivery, highway.Subject{ID: x.ID, Body: body, Workspace: x.SessionID,
		Irreversible: cp.Irreversible()})
	if err != nil {
		return cp, err
	}
	if !held {
		return cp, fmt.Errorf("checkpoint of execution %s: its gate %s did not hold", x.ID, id)
	}
	cp.ApprovalID = id
	if err := t.putCheckpoint(cp); err != nil {
		return cp, err
	}
	kinds := make([]string, 0, len(cp.Triggers))
	for _, tr := range cp.Triggers {
		kinds = append(kinds, tr.Kind)
	}
	_, err = t.traceEmit(sp, approval.TraceCheckpointOpened, map[string]any{"approval_id": id, "execution_id": x.ID,
		"action_id": cp.Tool, "digest": cp.Digest, "canonicalization_version": cp.Version, "checkpoint_type": cp.Pending.CheckpointType,
		"triggers": kinds, "mode": string(cp.Mode), "side_effect_class": cp.SideEffectClass})
	return cp, err
}

// planCheckpoint returns, writing nothing, what resolved gate g does to
// checkpoint cp: the outcome's permit and envelope, or the denial of the
// held execution, and a halt. A fallback or the protocol denies.
func (t *tx) planCheckpoint(g highway.Gate, cp approval.Checkpoint) (func(*tx) error, error) {
	if cp.Status != approval.StatusPending {
		return nil, nil
	}
	r := *g.Resolution
	o := approval.OutcomeDeny
	if r.Actor != highway.ActorFallback && r.Actor != highway.ActorProtocol {
		var err error
		if o, err = approval.OutcomeOf(string(r.Action), r.Outcome); err != nil {
			return nil, Refuse(wire.CodeInvalidStructure, "%v", err)
		}
	}
	pol := t.policyOf(cp.Atlas)
	var pr approval.Proposal
	if o == approval.OutcomeModified {
		var mods map[string]json.RawMessage
		if err := json.Unmarshal(r.Modifications, &mods); err != nil {
			return nil, Refuse(wire.CodeInvalidStructure, "modifications: %v", err)
		}
		var err error
		if pr, err = approval.DecodeProposal(mods["payload"], cp, pol); err != nil {
			return nil, Refuse(wire.CodeInvalidStructure, "%v", err)
		}
	}
	return func(t *tx) error {
		now := t.next()
		x, _ := t.execution(cp.ExecutionID)
		sp := x.span()
		s, err := approval.Decide(cp, o, pr, t.envelope(cp.Session), newUUID(), now, len(t.trustEvents(cp.Session)))
		if err != nil {
			return err
		}
		cp.Outcome, cp.DecidedBy, cp.DecidedAt, cp.Reason = o, r.Actor, &now, r.Reason
		cp.Status = approval.StatusDenied
		if s.Permit != nil {
			cp.Status, cp.PermitID = approval.StatusApproved, s.Permit.ID
		}
		if _, err := t.traceEmit(sp, approval.TraceDecided, map[string]any{"approval_id": cp.ApprovalID, "execution_id": cp.ExecutionID,
			"outcome": string(o), "actor": r.Actor, "digest": cp.Digest, "reason": r.Reason, "status": cp.Status}); err != nil {
			return err
		}
		if err := t.putCheckpoint(cp); err != nil {
			return err
		}
		if pm := s.Permit; pm != nil {
			if err := t.putPermit(*pm); err != nil {
				return err
			}
			if _, err := t.traceEmit(sp, approval.TracePermitIssued, map[string]any{"permit_id": pm.ID, "approval_id": pm.ApprovalID,
				"tool": pm.Tool, "digest": pm.Digest, "paths": len(pm.Paths), "paths_hash": pathsHash(pm.Paths), "max_uses": pm.MaxUses, "expires_at": formatCarp(pm.ExpiresAt),
				"policy_version": pm.PolicyVersion, "side_effect_class": pm.SideEffectClass}); err != nil {
				return err
			}
			if err := t.putEnvelope(cp.Session, s.Envelope); err != nil {
				return err
			}
		} else if x.Status == carp.StatusPendingApproval {
			// The held execution ends, denied; the tool never had it.
			x.Status = carp.StatusCancelled
			res := carp.ExecutionResult{CARPVersion: carp.Version, RequestID: x.RequestID, ExecutionID: x.ID, Timestamp: formatCarp(now),
				Status: carp.StatusCancelled, TelemetryLink: carp.TelemetryLink{TraceID: x.TraceID, SpanID: x.SpanID}}
			ce := denied(cp, string(o), "approval %s denied the action (%s by %s)", cp.ApprovalID, o, r.Actor)
			res.Error = &carp.ExecutionError{Code: ce.Code, Message: ce.Message, Details: ce.Details}
			ref := cp.Ref()
			res.Approval = &ref
			if err := t.finish(&x, &res, now); err != nil {
				return err
			}
		}
		if s.Halt {
			return t.halt(cp.Session, r.Actor, "checkpoint_halt")
		}
		return nil
	}, nil
}

// halt suspends session's workspace, if it is active or blocked, for
// actor: the workflow stops until an operator resumes it.
func (t *tx) halt(session, actor, reason string) error {
	w := t.peek(session)
	if w == nil || (w.State != workspace.Active && w.State != workspace.Blocked) {
		return nil
	}
	return t.suspend(t.ws(session), t.ws(t.e.root), actor, reason)
}

// revokePermit revokes pm (by a user, or the protocol) and records it.
func (t *tx) revokePermit(sp span, pm approval.Permit, by, reason string, now time.Time) error {
	pm = pm.Revoke(by, now, reason)
	if err := t.putPermit(pm); err != nil {
		return err
	}
	_, err := t.traceEmit(sp, approval.TracePermitRevoked, map[string]any{"permit_id": pm.ID, "approval_id": pm.ApprovalID,
		"by": by, "reason": reason})
	return err
}

// violate records a violation on boundary in session's trust log. The
// first one on a trusted boundary resets it to untrusted, and does what
// the policy says besides: per-step approval (the trust trigger does it),
// the envelope invalidated (the session's permits touching the boundary
// revoked, its approvals forgotten), or a halt.
func (t *tx) violate(sp span, session, boundary, reason string, pol approval.Policy) error {
	events := t.trustEvents(session)
	first := approval.Fold(events).Of(boundary).State == approval.Trusted
	now := t.next()
	ev, err := t.appendTrust(session, approval.TrustEvent{Boundary: boundary, Kind: approval.TrustViolation, Reason: reason,
		At: clock.Format(now), Actor: trail.ActorProtocol})
	if err != nil {
		return err
	}
	if _, err := t.traceEmit(sp, approval.TraceTrust, map[string]any{"boundary": traceBoundary(boundary), "kind": ev.Kind, "reason": reason,
		"seq": ev.Seq, "state": approval.Untrusted, "first": first, "on_violation": pol.OnViolation}); err != nil {
		return err
	}
	if !first {
		return nil
	}
	switch pol.OnViolation {
	case atlas.OnViolationInvalidate:
		kind, name, _ := approval.ParseBoundary(boundary)
		for _, pm := range t.sessionPermits(session) {
			touches := kind == approval.BoundaryProvider || kind == approval.BoundaryWorkflow ||
				(kind == approval.BoundaryTool && pm.Tool == name) ||
				(kind == approval.BoundaryPath && slices.ContainsFunc(pm.Paths, func(p string) bool { return atlas.MatchPath(p, name) }))
			if touches && pm.Usable(now) == nil {
				if err := t.revokePermit(sp, pm, trail.ActorProtocol, approval.ReasonEnvelopeInvalidated, now); err != nil {
					return err
				}
			}
		}
		env := t.envelope(session)
		return t.putEnvelope(session, approval.Envelope{Mode: env.Mode, PerStep: env.PerStep})
	case atlas.OnViolationHalt:
		return t.halt(session, trail.ActorProtocol, "trust_violation")
	}
	return nil
}

// ApprovalStatus returns checkpoint id of session ws as its agent is told
// of it; with wait, it waits up to wait for the checkpoint to be decided.
func (e *Engine) ApprovalStatus(ctx context.Context, ws, id string, wait time.Duration) (approval.Ref, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		e.mu.Lock()
		cp, ok := e.appr.cps[id]
		if !ok || cp.Session != ws {
			e.mu.Unlock()
			return approval.Ref{}, Refuse(wire.CodeNotFound, "approval %s does not exist in workspace %s", id, ws)
		}
		if cp.Status != approval.StatusPending || wait <= 0 || e.closed {
			e.mu.Unlock()
			return cp.Ref(), nil
		}
		ch, ok := e.appr.sig[id]
		if !ok {
			ch = make(chan struct{})
			e.appr.sig[id] = ch
		}
		e.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			wait = 0
		case <-ctx.Done():
			return approval.Ref{}, ctx.Err()
		}
	}
}

// sideEffectViolations records the violations a tool's reported side
// effects show: a side effect whose target is a path outside the paths
// the request named (path boundary of that target), and a side effect of
// an action its atlas declares read_only (the tool's boundary).
func (t *tx) sideEffectViolations(sp span, x Execution, effects []carp.SideEffect) error {
	if len(effects) == 0 {
		return nil
	}
	g, ok := t.carpGrant(x.ResolutionID)
	if !ok {
		return nil
	}
	_, m, sum, a, ok := t.grantedAction(g, x.ActionID)
	if !ok {
		return nil
	}
	pol := approval.FromAtlas(m, sum)
	seen := map[string]bool{}
	for _, se := range effects {
		var boundary, reason string
		switch {
		case a.SideEffectClass == atlas.SideEffectReadOnly:
			boundary, reason = approval.Boundary(approval.BoundaryTool, x.ActionID), "side_effect_of_read_only_action"
		case len(a.PathParameters) > 0 && se.Target != "" && !slices.Contains(x.Paths, path.Clean(se.Target)):
			boundary, reason = approval.Boundary(approval.BoundaryPath, path.Clean(se.Target)), "side_effect_outside_scope"
		default:
			continue
		}
		if seen[boundary] {
			continue
		}
		seen[boundary] = true
		if err := t.violate(sp, x.SessionID, boundary, reason, pol); err != nil {
			return err
		}
	}
	return nil
}

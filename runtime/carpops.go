package runtime

// The CARP operations of a workspace's agent (resolve, execute and its
// outcome, validate), their sessions, refusals and TRACE events, over the
// records of carp.go.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/steward"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// runSpan is the span of the run's own TRACE events (atlas loads): the
// session is the root workspace's, its trace the one the session began.
func (t *tx) runSpan() span {
	return t.sessionSpan(t.e.root, "", nil)
}

// sessionSpan returns a new span in session's trace: traceID when the
// request names one, else the trace of the session's last event, else a
// new one.
func (t *tx) sessionSpan(session, traceID string, parent *string) span {
	if traceID == "" {
		if h, ok := t.traceHead(session); ok {
			traceID = h.TraceID
		} else {
			traceID = newUUID()
		}
	}
	return span{session: session, trace: traceID, span: newUUID(), parent: parent}
}

// carpSession checks that req comes from ws's agent (session_id the
// workspace, agent_id its agent) and that ws may act, and returns the
// span of the operation, having recorded session.started on the session's
// first operation.
func (t *tx) carpSession(ws string, req carp.Request) (span, *carp.Error, error) {
	w := t.peek(ws)
	if w == nil {
		return span{}, carp.Errorf(carp.CodeForbidden, "workspace %s does not exist", ws), nil
	}
	agent := AgentID(w)
	var ce *carp.Error
	switch {
	case req.Requester.SessionID != ws || req.Requester.AgentID != agent:
		ce = carp.Errorf(carp.CodeForbidden, "a CARP session is a workspace's agent: session_id must be %s and agent_id %s", ws, agent)
	case w.State.Terminal() || w.State == workspace.Suspended:
		ce = carp.Errorf(carp.CodeForbidden, "workspace %s is %s", ws, w.State)
	}
	if ce != nil {
		// Recorded in the workspace's own session (the caller is its
		// agent), not the one the request claims.
		sp := t.sessionSpan(ws, "", nil)
		_, err := t.traceEmit(sp, carp.TraceErrorOccurred, map[string]any{"request_id": req.RequestID, "operation": req.Operation,
			"code": ce.Code, "message": ce.Message})
		return sp, ce, err
	}
	var traceID string
	var parent *string
	if tl := req.Telemetry; tl != nil {
		traceID = tl.TraceID
		if tl.ParentSpanID != "" {
			p := tl.ParentSpanID
			parent = &p
		}
	}
	sp := t.sessionSpan(ws, traceID, parent)
	if _, ok := t.traceHead(ws); !ok {
		if _, err := t.traceEmit(sp, carp.TraceSessionStarted, map[string]any{"agent_id": agent, "workspace": ws, "role": w.Role}); err != nil {
			return span{}, nil, err
		}
	}
	return sp, nil, nil
}

// span is the span x's events go to.
func (x Execution) span() span {
	sp := span{session: x.SessionID, trace: x.TraceID, span: x.SpanID}
	if x.ParentSpanID != "" {
		p := x.ParentSpanID
		sp.parent = &p
	}
	return sp
}

// requestHash is what an idempotency key binds: the action, its
// resolution, its parameters and whether it is a dry run.
func requestHash(req carp.Request) string {
	dry := req.ExecutionOptions != nil && req.ExecutionOptions.DryRun
	s := canonicalSum(map[string]any{"action_id": req.Action.ActionID, "action_type": req.Action.ActionType,
		"resolution_id": req.Action.ResolutionID, "parameters": req.Action.Parameters, "dry_run": dry})
	return "sha256:" + hex.EncodeToString(s[:])
}

// canonicalSum is the SHA-256 of v's canonical JSON (RFC 8785).
func canonicalSum(v any) [32]byte {
	b, _ := json.Marshal(v)
	if c, err := jcs.Transform(b); err == nil {
		b = c
	}
	return sha256.Sum256(b)
}

// AgentID is the agent_id of ws's CARP session: the workspace's agent, or
// its id when none is bound.
func AgentID(w *workspace.Workspace) string {
	if w.Agent != "" {
		return w.Agent
	}
	return w.ID
}

// CarpError is a CARP refusal the engine answers (recorded in TRACE).
type CarpError struct {
	Err     *carp.Error
	TraceID string
}

func (e *CarpError) Error() string { return e.Err.Error() }

// WireCode is the wire-v1 code nearest CARP error code c: what the
// daemon's generic paths (metrics, logs, tests of every endpoint) read;
// the CARP endpoints answer c itself.
func WireCode(c string) string {
	switch c {
	case carp.CodeInvalidRequest, carp.CodeInvalidVersion, carp.CodeMissingField, carp.CodeInvalidFormat, carp.CodeConstraintViolated:
		return wire.CodeInvalidStructure
	case carp.CodeUnauthorized, carp.CodeTokenExpired:
		return wire.CodeUnauthorized
	case carp.CodeForbidden, carp.CodeActionNotPermitted, carp.CodeActionDenied, carp.CodeCheckpointRequired:
		return wire.CodePermissionDenied
	case carp.CodeAtlasNotFound, carp.CodeDomainNotFound, carp.CodeResolutionNotFound, carp.CodeResolutionExpired:
		return wire.CodeNotFound
	case carp.CodeRateLimited, carp.CodeServiceUnavailable, carp.CodeTimeout:
		return wire.CodeUnavailable
	}
	return wire.CodeInternal
}

// refusalMessage puts ce's message into a TRACE payload, or only its hash
// when it may quote what the agent sent: a parameter's value in a schema
// violation. TRACE holds hashes of content, never content.
func refusalMessage(p map[string]any, ce *carp.Error) {
	if ce.Code == carp.CodeConstraintViolated || ce.Code == carp.CodeInvalidRequest || ce.Code == carp.CodeInvalidFormat {
		p["message_hash"] = carp.ContentHash([]byte(ce.Message))
		if vs, ok := ce.Details["violations"].([]carp.Violation); ok {
			p["violations"] = len(vs)
		}
		return
	}
	p["message"] = ce.Message
}

// refuse records a refusal's TRACE events (the request, error.occurred)
// and sets *out to it: the refusal commits, and is answered after.
func (t *tx) refuse(sp span, req carp.Request, ce *carp.Error, typ string, out **CarpError) error {
	return t.refuseWith(sp, req, nil, ce, typ, out)
}

// refuseWith is refuse with events between the request's and the
// refusal's (between emits them).
func (t *tx) refuseWith(sp span, req carp.Request, between func() error, ce *carp.Error, typ string, out **CarpError) error {
	if _, err := t.traceEmit(sp, carp.TraceRequestReceived, requestPayload(req)); err != nil {
		return err
	}
	if between != nil {
		if err := between(); err != nil {
			return err
		}
	}
	p := map[string]any{"request_id": req.RequestID, "operation": req.Operation, "code": ce.Code}
	refusalMessage(p, ce)
	if req.Action != nil {
		p["action_id"] = req.Action.ActionID
		p["resolution_id"] = req.Action.ResolutionID
	}
	if _, err := t.traceEmit(sp, typ, p); err != nil {
		return err
	}
	*out = &CarpError{Err: ce, TraceID: sp.trace}
	return nil
}

func requestPayload(req carp.Request) map[string]any {
	p := map[string]any{"request_id": req.RequestID, "operation": req.Operation, "agent_id": req.Requester.AgentID}
	if req.Task != nil {
		p["goal_hash"] = carp.GoalHash(req.Task.Goal)
	}
	if req.Action != nil {
		p["action_id"] = req.Action.ActionID
		p["resolution_id"] = req.Action.ResolutionID
		if b, err := json.Marshal(req.Action.Parameters); err == nil {
			p["parameters_hash"] = carp.ContentHash(b)
		}
	}
	return p
}

// cacheKey is §7.1's {goal_hash}:{agent_id}:{scope_hash}; wacpd's scope
// hash covers everything else a resolution depends on: the session, the
// scope, the task's risk tier, hints and constraints.
func cacheKey(req carp.Request) string {
	scope := map[string]any{"session_id": req.Requester.SessionID, "scope": req.Scope,
		"risk_tier": req.Task.RiskTier, "context_hints": req.Task.ContextHints, "constraints": req.Task.Constraints}
	s := canonicalSum(scope)
	return carp.GoalHash(req.Task.Goal) + ":" + req.Requester.AgentID + ":" + hex.EncodeToString(s[:])
}

// CarpResolve answers a resolve of ws's agent (req decoded and validated:
// carp.DecodeRequest): the resolution, its grant kept for execute, and
// its TRACE events, in one commit. A resolution cached for the same key
// (§7) and not expired is answered again, with carp.resolution.cached.
func (e *Engine) CarpResolve(ctx context.Context, ws string, req carp.Request) (carp.Resolution, error) {
	var res carp.Resolution
	custom := e.evalCustom(ctx, ws, req, "")
	err := e.carpOp(ctx, ws, req, func(t *tx, sp span, refusal **CarpError) error {
		now := t.next()
		key := cacheKey(req)
		set, err := t.stewardSet()
		if err != nil {
			return err
		}
		var overlay *carp.Overlay
		var sess *steward.Session
		var evaluated steward.Result
		var inj steward.Injection
		if !set.Empty() {
			list, _ := t.atlases()
			ev := resolveEvent(req, set, list, now)
			ev.Custom, ev.CustomErr = custom.got, custom.failed
			// Recorded after the request's carp.request.received, and
			// only when the resolve is answered.
			sess, evaluated = t.stewardEvaluate(ws, set, ev)
			// A resolution depends on the session's checkpoints: one
			// cached for another state of theirs is not answered.
			key += ":" + strconv.Itoa(sess.Version)
			inScope := func(id string) bool { return slices.Contains(ev.Atlases, id) }
			inj = set.Inject(sess, inScope)
			overlay = stewardOverlay(set, sess, inj)
		}
		if c, ok := t.e.carp.cache[key]; ok && now.Before(c.expires) {
			if _, err := t.traceEmit(sp, carp.TraceRequestReceived, requestPayload(req)); err != nil {
				return err
			}
			if err := t.stewardCommit(sp, ws, sess, evaluated); err != nil {
				return err
			}
			res = c.out.Resolution
			res.RequestID = req.RequestID
			res.TelemetryLink = carp.TelemetryLink{TraceID: sp.trace, SpanID: sp.span, EventsEmitted: t.emitted + 1}
			_, err := t.traceEmit(sp, carp.TraceResolutionCached, map[string]any{"request_id": req.RequestID,
				"resolution_id": res.ResolutionID, "decision": res.Decision.Type, "expires_at": res.TTL.ResolutionExpiresAt})
			return err
		}
		list, sums := t.atlases()
		out, ce := carp.Resolve(carp.Input{
			Request: req, Atlases: list, Checksum: func(id string) string { return sums[id] },
			Now: now, NewID: newUUID, TraceID: sp.trace, SpanID: sp.span,
			Usage:       func(l carp.Limit) (int, time.Time) { return t.usage(l, now) },
			Checkpoints: overlay,
		})
		if ce != nil {
			return t.refuse(sp, req, ce, carp.TraceErrorOccurred, refusal)
		}
		if overlay != nil {
			out.Resolution.Checkpoints = set.Prompts(sess)
			out.Resolution.Guidance = inj.Guidance
			for _, w := range inj.Warnings {
				out.Resolution.Warnings = append(out.Resolution.Warnings, carp.Warning{Code: "max_context_injection_size", Message: w})
			}
		}
		for i, s := range out.Steps {
			if _, err := t.traceEmit(sp, s.Type, s.Payload); err != nil {
				return err
			}
			if i == 0 && sess != nil { // after carp.request.received
				if err := t.stewardCommit(sp, ws, sess, evaluated); err != nil {
					return err
				}
			}
		}
		if err := t.putGrant(out.Grant); err != nil {
			return err
		}
		res = out.Resolution
		res.TelemetryLink.EventsEmitted = t.emitted
		exp := out.Grant.ExpiresAt
		t.after(func() { e.carp.cache[key] = cachedResolution{out: out, expires: exp} })
		return nil
	})
	return res, err
}

// Intent is an execution checked and recorded, for the daemon to forward
// to its tool service: Tool is the request, Timeout its deadline.
type Intent struct {
	Execution Execution
	Tool      carp.ToolRequest
	Timeout   time.Duration
}

// Default and largest timeouts of a forwarded execution.
const (
	DefaultToolTimeout = 30 * time.Second
	MaxToolTimeout     = wire.MaxToolTimeout
)

// CarpExecute checks an execute of ws's agent and either answers it at
// once — a refusal (*CarpError), a dry run, an execution held at an
// operator's checkpoint (pending_approval, with the checkpoint in
// result.approval; approvalops.go), or the recorded result of an earlier
// execute with the same idempotency_key — or records the intent (the
// execution running, its limits counted, a permit's use, action.requested
// and action.approved in TRACE) and returns it: the daemon then forwards
// it and records the outcome with CarpFinish. The request is put in
// canonical form (package approval) before any policy or approval logic.
// If the intent's commit fails, nothing is forwarded.
func (e *Engine) CarpExecute(ctx context.Context, ws string, req carp.Request) (*carp.ExecutionResult, *Intent, error) {
	var res *carp.ExecutionResult
	var in *Intent
	custom := e.evalCustom(ctx, ws, req, req.Action.ActionID)
	err := e.carpOp(ctx, ws, req, func(t *tx, sp span, refusal **CarpError) error {
		res, in = nil, nil
		if x, ok := t.idempotent(ws, req.IdempotencyKey); ok && req.ApprovalID == "" {
			if x.Request != requestHash(req) {
				return t.refuse(sp, req, carp.Errorf(carp.CodeInvalidRequest,
					"idempotency_key %q was used for another request (execution %s); use a new key", req.IdempotencyKey, x.ID), carp.TraceErrorOccurred, refusal)
			}
			if x.Status == execRunning {
				return t.refuse(sp, req, carp.Errorf(carp.CodeServiceUnavailable,
					"execution %s with idempotency_key %q is still running; ask again", x.ID, req.IdempotencyKey), carp.TraceErrorOccurred, refusal)
			}
			var r carp.ExecutionResult
			if err := json.Unmarshal(x.Result, &r); err != nil {
				return fmt.Errorf("execution %s: %w", x.ID, err)
			}
			r.RequestID = req.RequestID
			if r.Approval != nil {
				if cp, ok := t.checkpoint(r.Approval.ApprovalID); ok {
					ref := cp.Ref()
					r.Approval = &ref
				}
			}
			res = &r
			_, err := t.traceEmit(sp, carp.TraceRequestReceived, requestPayload(req))
			return err
		}
		g, ok := t.carpGrant(req.Action.ResolutionID)
		if !ok {
			return t.refuse(sp, req, carp.Errorf(carp.CodeResolutionNotFound, "resolution %s does not exist; resolve first", req.Action.ResolutionID), carp.TraceActionDenied, refusal)
		}
		now := t.next()
		// Canonical form first: the binding digest of the request.
		gv, cerr := t.governed(g, req, ws)
		if cerr != nil {
			return t.refuse(sp, req, cerr, carp.TraceErrorOccurred, refusal)
		}
		// The steward's checkpoints first (an action they hold back is
		// answered CHECKPOINT_REQUIRED even when the resolution left it
		// out for them), then the policies, then the operator's
		// checkpoints (checkpointGate).
		set, stewardCommit, err := t.stewardGate(sp, ws, req, t.actionRef(g, req.Action.ActionID), now, custom, refusal)
		if err != nil || *refusal != nil {
			return err
		}
		_, sums := t.atlases()
		ga, vs, ce := carp.Authorize(carp.Check{Grant: g, Request: req, Now: now, Approved: t.approvedNow(ws, req.ApprovalID, now),
			Loaded: func(id string) string { return sums[id] },
			Usage:  func(l carp.Limit) (int, time.Time) { return t.usage(l, now) }})
		if ce != nil {
			typ := carp.TraceActionDenied
			if ce.Code == carp.CodeConstraintViolated || ce.Code == carp.CodeRateLimited {
				typ = carp.TracePolicyViolated
			}
			if gv != nil && slices.ContainsFunc(vs, func(v carp.Violation) bool { return v.Path != "parameters" }) {
				// Parameters outside the steward's parameter constraints (not
				// a malformed request, which its schema refuses): a
				// violation on the tool's boundary.
				if err := t.violate(sp, ws, approval.Boundary(approval.BoundaryTool, gv.req.Tool), "constraint_violated", gv.policy); err != nil {
					return err
				}
			}
			return t.refuse(sp, req, ce, typ, refusal)
		}
		if _, err := t.traceEmit(sp, carp.TraceRequestReceived, requestPayload(req)); err != nil {
			return err
		}
		if err := stewardCommit(); err != nil {
			return err
		}
		x := Execution{ID: newUUID(), RequestID: req.RequestID, ResolutionID: g.ResolutionID, SessionID: ws,
			AgentID: req.Requester.AgentID, ActionID: ga.ActionID, IdempotencyKey: req.IdempotencyKey,
			TraceID: sp.trace, SpanID: sp.span, Request: requestHash(req), StartedAt: now.UTC().Format(time.RFC3339Nano)}
		if sp.parent != nil {
			x.ParentSpanID = *sp.parent
		}
		opts := carp.ExecutionOptions{}
		if req.ExecutionOptions != nil {
			opts = *req.ExecutionOptions
		}
		link := carp.TelemetryLink{TraceID: sp.trace, SpanID: sp.span}
		if opts.DryRun {
			// A dry run calls no tool: no checkpoint holds it.
			x.IdempotencyKey = "" // a dry run does not take the key of the execute it rehearses
			if _, err := t.traceEmit(sp, carp.TraceActionApproved, map[string]any{"execution_id": x.ID, "action_id": ga.ActionID, "dry_run": true}); err != nil {
				return err
			}
			r := carp.ExecutionResult{CARPVersion: carp.Version, RequestID: req.RequestID, ExecutionID: x.ID,
				Timestamp: formatCarp(now), Status: carp.StatusSuccess, TelemetryLink: link,
				Result: &carp.ExecutionOutput{Output: json.RawMessage(`{"dry_run":true}`), OutputHash: carp.ContentHash([]byte(`{"dry_run":true}`)), OutputType: "application/json"}}
			res = &r
			return t.finish(&x, &r, now)
		}
		if gv == nil {
			return fmt.Errorf("execute %s: the action's atlas is not loaded", ga.ActionID)
		}
		x.Paths = gv.req.Paths(gv.action.PathParameters)
		held, err := t.checkpointGate(sp, req, gv, &x, now, refusal)
		if err != nil || *refusal != nil {
			return err
		}
		if held != nil {
			ref := held.Ref()
			r := carp.ExecutionResult{CARPVersion: carp.Version, RequestID: req.RequestID, ExecutionID: held.ExecutionID,
				Timestamp: formatCarp(now), Status: carp.StatusPendingApproval, TelemetryLink: link, Approval: &ref}
			res = &r
			if held.ExecutionID != x.ID {
				return nil // asked again while its checkpoint is pending: the held execution's answer
			}
			x.Status = carp.StatusPendingApproval
			return t.finish(&x, &r, now)
		}
		timeout := DefaultToolTimeout
		if ga.TimeoutMS > 0 {
			timeout = time.Duration(ga.TimeoutMS) * time.Millisecond
		}
		if opts.TimeoutMS > 0 {
			timeout = min(timeout, time.Duration(opts.TimeoutMS)*time.Millisecond)
		}
		timeout = min(timeout, MaxToolTimeout)
		for _, l := range ga.Limits {
			x.Limits = append(x.Limits, l.Key)
		}
		usedAnswers, err := t.stewardAdmit(sp, ws, set, ga, now)
		if err != nil {
			return err
		}
		x.Status = execRunning
		if _, err := t.traceEmit(sp, carp.TraceActionRequested, map[string]any{"execution_id": x.ID, "action_id": ga.ActionID,
			"risk_tier": ga.RiskTier, "timeout_ms": timeout.Milliseconds(), "digest": gv.req.Digest}); err != nil {
			return err
		}
		approved := map[string]any{"execution_id": x.ID, "action_id": ga.ActionID, "resolution_id": g.ResolutionID, "limits": x.Limits}
		if x.PermitID != "" {
			approved["permit_id"] = x.PermitID
		}
		if len(usedAnswers) > 0 {
			approved["checkpoints"] = usedAnswers // the steward checkpoints whose answers this execute used
		}
		if _, err := t.traceEmit(sp, carp.TraceActionApproved, approved); err != nil {
			return err
		}
		x.Emitted = t.emitted // the events so far; CarpFinish adds its own
		if err := t.putExecution(x, x.Limits, now); err != nil {
			return err
		}
		in = &Intent{Execution: x, Timeout: timeout, Tool: carp.ToolRequest{CARPVersion: carp.Version, ExecutionID: x.ID,
			RequestID: req.RequestID, ResolutionID: g.ResolutionID, ActionID: ga.ActionID, ActionType: req.Action.ActionType,
			Parameters: req.Action.Parameters, AgentID: x.AgentID, SessionID: ws, TraceID: sp.trace,
			TimeoutMS: int(timeout.Milliseconds()), Sandbox: opts.Sandbox}}
		return nil
	})
	return res, in, err
}

// finish records x's result r (its events emitted already, counted in
// telemetry_link.events_emitted).
func (t *tx) finish(x *Execution, r *carp.ExecutionResult, now time.Time) error {
	x.Emitted += t.emitted
	r.TelemetryLink.EventsEmitted = x.Emitted
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	x.Result, x.FinishedAt = b, now.UTC().Format(time.RFC3339Nano)
	if x.Status == "" || x.Status == execRunning {
		x.Status = r.Status
	}
	return t.putExecution(*x, nil, now)
}

func formatCarp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Outcome is what became of a forwarded execution.
type Outcome struct {
	Reply    *carp.ToolReply // the tool's answer; nil when it gave none
	Failure  string          // without a reply: "timeout", "no_responders" or a transport error
	Duration time.Duration
}

// CarpFinish records the outcome of execution id, forwarded by the
// daemon, and returns the CARPExecutionResult to answer: action.executed
// (success, partial_success) or action.failed (failed, timeout) in TRACE
// with the output's SHA-256, never the output.
func (e *Engine) CarpFinish(ctx context.Context, id string, o Outcome) (*carp.ExecutionResult, error) {
	var res *carp.ExecutionResult
	err := e.run(ctx, 0, func() error {
		return e.commit(func(t *tx) error {
			x, ok := t.execution(id)
			if !ok {
				return Refuse(wire.CodeNotFound, "execution %s does not exist", id)
			}
			if x.Status != execRunning {
				return Refuse(wire.CodeInvalidTransition, "execution %s is already %s", id, x.Status)
			}
			now := t.next()
			r := carp.ExecutionResult{CARPVersion: carp.Version, RequestID: x.RequestID, ExecutionID: x.ID,
				Timestamp: formatCarp(now), Metrics: carp.Metrics{DurationMS: float64(o.Duration.Microseconds()) / 1000},
				TelemetryLink: carp.TelemetryLink{TraceID: x.TraceID, SpanID: x.SpanID}}
			payload := map[string]any{"execution_id": x.ID, "action_id": x.ActionID, "duration_ms": r.Metrics.DurationMS}
			typ := carp.TraceActionFailed
			switch rep := o.Reply; {
			case rep != nil && (rep.Status == carp.StatusSuccess || rep.Status == carp.StatusPartialSuccess):
				typ, r.Status = carp.TraceActionExecuted, rep.Status
				out := answered(rep.Output)
				ot := rep.OutputType
				if ot == "" {
					ot = "application/json"
				}
				r.Result = &carp.ExecutionOutput{Output: out, OutputHash: carp.ContentHash(out), OutputType: ot}
				r.SideEffects, r.Metrics.TokensUsed, r.Metrics.APICalls = rep.SideEffects, rep.TokensUsed, rep.APICalls
				payload["output_hash"], payload["side_effects"] = r.Result.OutputHash, len(rep.SideEffects)
			case rep != nil:
				r.Status = carp.StatusFailed
				r.Error = rep.Error
				if r.Error == nil || r.Error.Code == "" {
					r.Error = &carp.ExecutionError{Code: carp.CodeExecutionFailed, Message: "the tool answered " + rep.Status}
				}
				r.SideEffects = rep.SideEffects
				payload["error_code"] = r.Error.Code
			case o.Failure == "timeout":
				r.Status = carp.StatusTimeout
				r.Error = &carp.ExecutionError{Code: carp.CodeTimeout, Retriable: true,
					Message: fmt.Sprintf("the tool did not answer %s in time; a late answer is recorded, not returned", x.ActionID)}
				payload["error_code"] = carp.CodeTimeout
			default:
				r.Status = carp.StatusFailed
				r.Error = &carp.ExecutionError{Code: carp.CodeServiceUnavailable, Retriable: true,
					Message: fmt.Sprintf("no tool service answers %s: %s", carp.ToolSubject(x.ActionID), o.Failure)}
				payload["error_code"] = carp.CodeServiceUnavailable
				// No tool got it: it does not count against the action's
				// limits (a timeout does: the tool may have run it).
				if at, err := time.Parse(time.RFC3339Nano, x.StartedAt); err == nil {
					l := t.carpOf()
					for _, k := range x.Limits {
						l.uncount[k] = append(l.uncount[k], at)
					}
				}
				x.Limits = nil
			}
			payload["status"] = r.Status
			sp := x.span()
			if _, err := t.traceEmit(sp, typ, payload); err != nil {
				return err
			}
			code := ""
			if r.Error != nil {
				code = r.Error.Code
			}
			if err := t.stewardFinished(x, typ == carp.TraceActionFailed, code, now); err != nil {
				return err
			}
			if err := t.sideEffectViolations(sp, x, r.SideEffects); err != nil {
				return err
			}
			res = &r
			return t.finish(&x, &r, now)
		})
	})
	return res, err
}

// CarpLate records a tool's answer to execution id that came after it
// timed out: action.executed or action.failed with late: true. The
// agent's answer (timeout) stands.
func (e *Engine) CarpLate(ctx context.Context, id string, rep carp.ToolReply) error {
	return e.run(ctx, 0, func() error {
		return e.commit(func(t *tx) error {
			x, ok := t.execution(id)
			if !ok {
				return Refuse(wire.CodeNotFound, "execution %s does not exist", id)
			}
			if x.Status != carp.StatusTimeout || x.Late != "" {
				return Refuse(wire.CodeInvalidTransition, "execution %s is %s; a late answer is recorded only after a timeout, once", id, x.Status)
			}
			x.Late, x.LateOutputHash = rep.Status, carp.ContentHash(answered(rep.Output))
			typ := carp.TraceActionFailed
			if rep.Status == carp.StatusSuccess || rep.Status == carp.StatusPartialSuccess {
				typ = carp.TraceActionExecuted
			}
			sp := x.span()
			if _, err := t.traceEmit(sp, typ, map[string]any{"execution_id": x.ID, "action_id": x.ActionID, "late": true,
				"status": rep.Status, "output_hash": x.LateOutputHash}); err != nil {
				return err
			}
			return t.putExecution(x, nil, t.next())
		})
	})
}

// CarpValidate runs an execute's checks without effect: the
// CARPValidationResult, with the violations found, and TRACE's request
// and its verdict. Nothing is counted.
func (e *Engine) CarpValidate(ctx context.Context, ws string, req carp.Request) (carp.ValidationResult, error) {
	var res carp.ValidationResult
	custom := e.evalCustom(ctx, ws, req, req.Action.ActionID)
	err := e.carpOp(ctx, ws, req, func(t *tx, sp span, refusal **CarpError) error {
		now := t.next()
		res = carp.ValidationResult{CARPVersion: carp.Version, RequestID: req.RequestID, Timestamp: formatCarp(now),
			Valid: true, Violations: []carp.Violation{}}
		g, ok := t.carpGrant(req.Action.ResolutionID)
		var vs []carp.Violation
		if !ok {
			vs = []carp.Violation{{Code: carp.CodeResolutionNotFound, Message: "resolution " + req.Action.ResolutionID + " does not exist"}}
		} else if vs = t.stewardViolations(ws, g, req.Action.ActionID, now, custom); len(vs) == 0 {
			_, sums := t.atlases()
			_, pv, ce := carp.Authorize(carp.Check{Grant: g, Request: req, Now: now,
				Loaded: func(id string) string { return sums[id] },
				Usage:  func(l carp.Limit) (int, time.Time) { return t.usage(l, now) }})
			switch {
			case len(pv) > 0:
				vs = pv
			case ce != nil:
				vs = []carp.Violation{{Code: ce.Code, Message: ce.Message}}
			}
		}
		if _, err := t.traceEmit(sp, carp.TraceRequestReceived, requestPayload(req)); err != nil {
			return err
		}
		typ := carp.TraceActionApproved
		p := map[string]any{"operation": carp.OpValidate, "action_id": req.Action.ActionID, "valid": len(vs) == 0}
		if len(vs) > 0 {
			typ = carp.TraceActionDenied
			res.Valid, res.Violations = false, vs
			p["violations"] = len(vs)
			p["code"] = vs[0].Code
		}
		if _, err := t.traceEmit(sp, typ, p); err != nil {
			return err
		}
		res.TelemetryLink = carp.TelemetryLink{TraceID: sp.trace, SpanID: sp.span, EventsEmitted: t.emitted}
		return nil
	})
	return res, err
}

// CarpRefused records a CARP request of ws's agent refused before it was
// understood (carp.DecodeRequest's refusal ce of a body that claimed
// request requestID): error.occurred in ws's session, so that every
// operation leaves TRACE (seed 004 §9.1). A workspace that does not exist
// or has ended records nothing.
func (e *Engine) CarpRefused(ctx context.Context, ws, op, requestID string, ce *carp.Error) error {
	return e.run(ctx, 0, func() error {
		return e.commit(func(t *tx) error {
			w := t.peek(ws)
			if w == nil || w.State.Terminal() {
				return nil
			}
			_, err := t.traceEmit(t.sessionSpan(ws, "", nil), carp.TraceErrorOccurred, map[string]any{"request_id": requestID,
				"operation": op, "code": ce.Code, "message_hash": carp.ContentHash([]byte(ce.Message))})
			return err
		})
	})
}

// interruptedExecutions marks every execution still running when the
// engine opened as not completed: the daemon stopped after its intent was
// recorded and before its outcome was (the tool may or may not have run
// it). It answers failed with details.completed false, never success.
func (e *Engine) interruptedExecutions() error {
	e.mu.Lock()
	var ids []string
	for id, x := range e.carp.execs {
		if x.Status == execRunning {
			ids = append(ids, id)
		}
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	return e.run(context.Background(), 0, func() error {
		return e.commit(func(t *tx) error {
			for _, id := range ids {
				x, _ := t.execution(id)
				now := t.next()
				r := carp.ExecutionResult{CARPVersion: carp.Version, RequestID: x.RequestID, ExecutionID: x.ID,
					Timestamp: formatCarp(now), Status: carp.StatusFailed,
					TelemetryLink: carp.TelemetryLink{TraceID: x.TraceID, SpanID: x.SpanID},
					Error: &carp.ExecutionError{Code: carp.CodeExecutionFailed, Details: map[string]any{"completed": false},
						Message: "not completed: the daemon stopped after recording the intent and before the tool's answer; the action may or may not have run"}}
				sp := x.span()
				if _, err := t.traceEmit(sp, carp.TraceActionFailed, map[string]any{"execution_id": x.ID, "action_id": x.ActionID,
					"status": r.Status, "completed": false, "error_code": carp.CodeExecutionFailed}); err != nil {
					return err
				}
				if err := t.stewardFinished(x, true, carp.CodeExecutionFailed, now); err != nil {
					return err
				}
				if err := t.finish(&x, &r, now); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// carpOp runs fn as one commit of ws's agent's operation req: the session
// is checked first (carpSession; its refusal is recorded and answered
// after the commit), and fn may refuse likewise (t.refuse with refusal).
func (e *Engine) carpOp(ctx context.Context, ws string, req carp.Request, fn func(t *tx, sp span, refusal **CarpError) error) error {
	var refusal *CarpError
	err := e.run(ctx, 0, func() error {
		return e.commit(func(t *tx) error {
			refusal = nil
			sp, ce, err := t.carpSession(ws, req)
			if err != nil {
				return err
			}
			if ce != nil {
				refusal = &CarpError{Err: ce, TraceID: sp.trace}
				return nil
			}
			return fn(t, sp, &refusal)
		})
	})
	if err == nil && refusal != nil {
		return refusal
	}
	return err
}

// answered returns a tool's output as the agent receives it (encoding/json
// writes a raw value compacted, with <, > and & escaped): output_hash is
// the SHA-256 of those bytes, so the agent can check it. No output is null.
func answered(out json.RawMessage) json.RawMessage {
	if len(out) == 0 {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(out)
	if err != nil { // not JSON: the tool's bytes as a JSON string
		b, _ = json.Marshal(string(out))
	}
	return b
}

// endCarpSession records session.ended in w's CARP session, if it has
// one, as w reaches terminal state to (in the commit of that transition):
// the session is the workspace's agent's, and it has ended.
func (t *tx) endCarpSession(w *workspace.Workspace, to workspace.State, reason string) error {
	if err := t.cancelCheckpoints(w.ID); err != nil {
		return err
	}
	if err := t.stewardEnd(w); err != nil {
		return err
	}
	if _, ok := t.traceHead(w.ID); !ok {
		return nil
	}
	p := map[string]any{"agent_id": AgentID(w), "workspace": w.ID, "state": string(to)}
	if reason != "" {
		p["reason"] = reason
	}
	_, err := t.traceEmit(t.sessionSpan(w.ID, "", nil), carp.TraceSessionEnded, p)
	return err
}

package runtime

// Steward checkpoints in the CARP operations (issue 17): evaluated on the
// session's start and end, on resolve, on execute (before its checks pass
// and when it is admitted) and on an execution's outcome; answered with
// CarpRespond. The decisions are package steward's; here they are
// persisted with their TRACE events in the operation's commit.

import (
	"context"
	"slices"
	"time"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/steward"
	"github.com/wacpd/wacpd/workspace"
)

// stewardEmit emits a steward evaluation's steps in sp.
func (t *tx) stewardEmit(sp span, steps []steward.Step) error {
	for _, s := range steps {
		if _, err := t.traceEmit(sp, s.Type, s.Payload); err != nil {
			return err
		}
	}
	return nil
}

// stewardEvaluate applies ev to a copy of session's checkpoint state and
// returns it with what changed; stewardCommit records it.
func (t *tx) stewardEvaluate(session string, set *steward.Set, ev steward.Event) (*steward.Session, steward.Result) {
	s, _ := t.stewardSession(session)
	ev.NewID = newUUID
	return s, steward.Evaluate(set, s, ev)
}

// stewardCommit emits r's steps in sp and writes s when r changed it.
func (t *tx) stewardCommit(sp span, session string, s *steward.Session, r steward.Result) error {
	if err := t.stewardEmit(sp, r.Steps); err != nil {
		return err
	}
	if r.Changed {
		return t.putStewardSession(session, s)
	}
	return nil
}

// stewardEval evaluates ev and records it at once.
func (t *tx) stewardEval(sp span, session string, set *steward.Set, ev steward.Event) (*steward.Session, error) {
	s, r := t.stewardEvaluate(session, set, ev)
	return s, t.stewardCommit(sp, session, s, r)
}

// stewardStart fires the session_start checkpoints of w's session as w
// becomes active (in the commit of that transition); the session begins
// then, with session.started.
func (t *tx) stewardStart(w *workspace.Workspace) error {
	set, err := t.stewardSet()
	if err != nil || set.Empty() {
		return err
	}
	if s, _ := t.stewardSession(w.ID); !s.Started.IsZero() {
		return nil
	}
	sp := t.sessionSpan(w.ID, "", nil)
	if _, ok := t.traceHead(w.ID); !ok {
		if _, err := t.traceEmit(sp, carp.TraceSessionStarted, map[string]any{"agent_id": AgentID(w), "workspace": w.ID, "role": w.Role}); err != nil {
			return err
		}
	}
	_, err = t.stewardEval(sp, w.ID, set, steward.Event{Kind: steward.EventSessionStart, Now: t.next()})
	return err
}

// stewardEnd fires the session_end checkpoints of w's session and skips
// what is pending, as w ends (before session.ended).
func (t *tx) stewardEnd(w *workspace.Workspace) error {
	set, err := t.stewardSet()
	if err != nil || set.Empty() {
		return err
	}
	if _, had := t.stewardSession(w.ID); !had {
		if _, ok := t.traceHead(w.ID); !ok {
			return nil // a session that never began
		}
	}
	_, err = t.stewardEval(t.sessionSpan(w.ID, "", nil), w.ID, set, steward.Event{Kind: steward.EventSessionEnd, Now: t.next()})
	return err
}

// resolveEvent is a resolve's steward event: its goal, hints, declared
// tier, the atlases the resolution is made from (carp.InScope) and the
// actions it covers (scope.actions of theirs, else all).
func resolveEvent(req carp.Request, set *steward.Set, list []*atlas.Manifest, now time.Time) steward.Event {
	ev := steward.Event{Kind: steward.EventResolve, Now: now, Goal: req.Task.Goal, Hints: req.Task.ContextHints, Tier: req.Task.RiskTier}
	var want []string
	if s := req.Scope; s != nil {
		want = s.Actions
	}
	ev.Explicit = len(want) > 0
	for _, m := range carp.InScope(req, list, set.Asks) {
		ev.Atlases = append(ev.Atlases, m.AtlasID)
		for _, a := range m.Actions {
			if len(want) > 0 && !slices.ContainsFunc(want, func(p string) bool { return atlas.Match(p, a.ActionID) }) {
				continue
			}
			ev.Actions = append(ev.Actions, steward.ActionRef{AtlasID: m.AtlasID, ActionID: a.ActionID, Tier: a.Tier()})
		}
	}
	if ev.Atlases == nil {
		ev.Atlases = []string{}
	}
	return ev
}

// customAnswers is what the custom triggers said, asked before the
// commit (they may call out).
type customAnswers struct {
	got    map[string]bool
	failed map[string]string
}

// evalCustom asks the custom triggers in effect about an operation of
// ws's agent, outside the engine's lock: only for a request the session
// check would let through, of the checkpoints of the atlases in scope
// (a resolve's; an execute's action's) that are not already waiting
// for answers.
func (e *Engine) evalCustom(ctx context.Context, ws string, req carp.Request, action string) customAnswers {
	e.mu.Lock()
	set, err := e.stewardSetLocked()
	if err != nil || !set.HasCustom() {
		e.mu.Unlock()
		return customAnswers{} // the usual case: nothing to ask, nothing copied
	}
	w := e.ws[ws]
	var sess *steward.Session
	if s, ok := e.stew.sessions[ws]; ok {
		sess = s.Clone()
	}
	list := e.carp.atlases
	e.mu.Unlock()
	if w == nil || w.State.Terminal() || w.State == workspace.Suspended || req.Requester.SessionID != ws || req.Requester.AgentID != AgentID(w) {
		return customAnswers{}
	}
	scope := map[string]bool{}
	if req.Task != nil {
		for _, m := range carp.InScope(req, list, set.Asks) {
			scope[m.AtlasID] = true
		}
	} else {
		for _, m := range list {
			if slices.ContainsFunc(m.Actions, func(a atlas.Action) bool { return a.ActionID == action }) {
				scope[m.AtlasID] = true
			}
		}
	}
	want := func(d *steward.Def) bool {
		if !scope[d.AtlasID] {
			return false
		}
		if sess == nil {
			return true
		}
		st := sess.Checkpoints[d.Key]
		return st == nil || st.EvalHeld || (st.Status != steward.StatusPending && st.Status != steward.StatusBlocked)
	}
	ec := steward.EvalContext{SessionID: ws, AgentID: req.Requester.AgentID, Operation: req.Operation, ActionID: action}
	if req.Task != nil {
		ec.Goal, ec.RiskTier = req.Task.Goal, req.Task.RiskTier
	}
	got, failed := steward.EvaluateCustom(ctx, set, e.cfg.CheckpointEvaluators, e.cfg.CheckpointCaller, ec, want, e.cfg.Now())
	return customAnswers{got, failed}
}

// stewardOverlay is the resolver's view of session s's checkpoints.
func stewardOverlay(set *steward.Set, s *steward.Session, in steward.Injection) *carp.Overlay {
	return &carp.Overlay{
		Deny: func(m *atlas.Manifest, a atlas.Action, tier string) (*carp.ActionDenial, bool) {
			d, allow := set.Deny(s, m, a.ActionID, tier)
			if d == nil {
				return nil, allow
			}
			return &carp.ActionDenial{ActionType: a.ActionID, Reason: d.Reason, PolicyRefs: []string{"checkpoint:" + d.Checkpoint},
				Permanent: d.Permanent, Remediation: d.Remediation}, false
		},
		Contexts: in.Contexts,
		Asked:    set.Asks,
	}
}

// actionRef is action as the session's checkpoints see it: granted by
// g, or (left out of g) an action of one of g's atlases; nil when no
// atlas of g has it (the policies refuse it).
func (t *tx) actionRef(g carp.Grant, action string) *steward.ActionRef {
	if i := slices.IndexFunc(g.Actions, func(a carp.GrantedAction) bool { return a.ActionID == action }); i >= 0 {
		return &steward.ActionRef{AtlasID: g.Actions[i].AtlasID, ActionID: action, Tier: g.Actions[i].RiskTier}
	}
	list, _ := t.atlases()
	for _, m := range list {
		if _, ok := g.Atlases[m.AtlasID]; !ok {
			continue
		}
		if i := slices.IndexFunc(m.Actions, func(a atlas.Action) bool { return a.ActionID == action }); i >= 0 {
			return &steward.ActionRef{AtlasID: m.AtlasID, ActionID: action, Tier: m.Actions[i].Tier()}
		}
	}
	return nil
}

// stewardGate refuses an execute of a that the session's checkpoints
// hold back: CHECKPOINT_REQUIRED while a blocking checkpoint waits for
// answers (the checkpoint in error.details), ACTION_DENIED when one
// blocked the session's answers, a capability is locked or a
// checkpoint denies the action. Otherwise it returns the checkpoints in
// effect and commit, which records the evaluation (after the request's
// carp.request.received, once the execute goes on).
func (t *tx) stewardGate(sp span, ws string, req carp.Request, a *steward.ActionRef, now time.Time, custom customAnswers, refusal **CarpError) (*steward.Set, func() error, error) {
	nothing := func() error { return nil }
	set, err := t.stewardSet()
	if err != nil || set.Empty() || a == nil {
		return set, nothing, err
	}
	ev := steward.Event{Kind: steward.EventExecute, Now: now, Actions: []steward.ActionRef{*a}, Custom: custom.got, CustomErr: custom.failed}
	s, r := t.stewardEvaluate(ws, set, ev)
	commit := func() error { return t.stewardCommit(sp, ws, s, r) }
	var ce *carp.Error
	switch b := set.Gate(s, a.AtlasID, a.ActionID, a.Tier); {
	case b == nil:
		if ce = t.stewardDenied(set, s, *a); ce == nil {
			return set, commit, nil
		}
	case b.Status == steward.StatusBlocked:
		ce = carp.Errorf(carp.CodeActionDenied, "checkpoint %s refused this session's answers (on_invalid block): %s stays denied", b.Def.CP.CheckpointID, a.ActionID)
		ce.Details = map[string]any{"checkpoint": steward.PromptOf(s, b.Def)}
	default:
		p := steward.PromptOf(s, b.Def)
		what := "answer its questions with carp.respond, then execute again"
		if p.WaitingFor != "" {
			what = "it waits for its evaluator; execute again later"
		}
		ce = carp.Errorf(carp.CodeCheckpointRequired, "checkpoint %s holds %s back: %s", b.Def.CP.CheckpointID, a.ActionID, what)
		ce.Details = map[string]any{"checkpoint": p}
	}
	// Refused: request.received, the checkpoints' events, action.denied.
	return set, nothing, t.refuseWith(sp, req, commit, ce, carp.TraceActionDenied, refusal)
}

// stewardDenied is ACTION_DENIED when a locked capability or a
// checkpoint's deny_actions covers a (after its resolution).
func (t *tx) stewardDenied(set *steward.Set, s *steward.Session, a steward.ActionRef) *carp.Error {
	list, _ := t.atlases()
	i := slices.IndexFunc(list, func(m *atlas.Manifest) bool { return m.AtlasID == a.AtlasID })
	if i < 0 {
		return nil
	}
	d, _ := set.Deny(s, list[i], a.ActionID, a.Tier)
	if d == nil {
		return nil
	}
	ce := carp.Errorf(carp.CodeActionDenied, "%s: %s", a.ActionID, d.Reason)
	ce.Details = map[string]any{"checkpoint_id": d.Checkpoint}
	return ce
}

// stewardAdmit records that an execute of ga goes to its tool: armed
// answers used, count_interval counted.
func (t *tx) stewardAdmit(sp span, ws string, set *steward.Set, ga *carp.GrantedAction, now time.Time) ([]string, error) {
	if set == nil || set.Empty() {
		return nil, nil
	}
	s, _ := t.stewardSession(ws)
	r, used := steward.Admit(set, s, steward.ActionRef{AtlasID: ga.AtlasID, ActionID: ga.ActionID, Tier: ga.RiskTier}, now, newUUID)
	if err := t.stewardEmit(sp, r.Steps); err != nil {
		return nil, err
	}
	if r.Changed {
		return used, t.putStewardSession(ws, s)
	}
	return used, nil
}

// stewardFinished fires the action_post and error_occurred checkpoints
// of x's outcome.
func (t *tx) stewardFinished(x Execution, failed bool, code string, now time.Time) error {
	set, err := t.stewardSet()
	if err != nil || set.Empty() {
		return err
	}
	g, ok := t.carpGrant(x.ResolutionID)
	if !ok {
		return nil
	}
	a := t.actionRef(g, x.ActionID)
	if a == nil {
		return nil
	}
	_, err = t.stewardEval(x.span(), x.SessionID, set, steward.Event{Kind: steward.EventFinished, Now: now, Failed: failed, ErrorCode: code,
		Actions: []steward.ActionRef{*a}})
	return err
}

// CarpRespond answers a steward checkpoint of ws's agent (req decoded
// and validated, operation respond). Answers that pass the checkpoint
// are answered with the result; answers to check again are refused
// CONSTRAINT_VIOLATED, and answers that block the checkpoint
// ACTION_DENIED, each with the results in error.details and committed
// with their TRACE events (answers only as hashes).
func (e *Engine) CarpRespond(ctx context.Context, ws string, req carp.Request) (carp.CheckpointResult, error) {
	var res carp.CheckpointResult
	err := e.carpOp(ctx, ws, req, func(t *tx, sp span, refusal **CarpError) error {
		now := t.next()
		set, err := t.stewardSet()
		if err != nil {
			return err
		}
		cr := req.CheckpointResponse
		s, _ := t.stewardSession(ws)
		out, rerr := steward.Respond(set, s, steward.Response{AtlasID: cr.AtlasID, CheckpointID: cr.CheckpointID, Answers: cr.Answers}, now)
		if rerr != nil {
			code := carp.CodeInvalidRequest
			if rerr.Reason == steward.ErrBlocked {
				code = carp.CodeActionDenied
			}
			ce := carp.Errorf(code, "%s", rerr.Message)
			ce.Details = map[string]any{"reason": rerr.Reason, "checkpoint_id": cr.CheckpointID}
			return t.refuse(sp, req, ce, carp.TraceErrorOccurred, refusal)
		}
		p := requestPayload(req)
		p["checkpoint_id"] = cr.CheckpointID
		if _, err := t.traceEmit(sp, carp.TraceRequestReceived, p); err != nil {
			return err
		}
		if err := t.stewardEmit(sp, out.Steps); err != nil {
			return err
		}
		if err := t.putStewardSession(ws, s); err != nil {
			return err
		}
		d := out.Def
		details := map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef, "instance_id": out.Instance,
			"outcome": out.Outcome, "results": out.Results}
		switch out.Outcome {
		case steward.OutcomeRetry:
			ce := carp.Errorf(carp.CodeConstraintViolated, "answers to checkpoint %s do not validate: answer again", d.CP.CheckpointID)
			ce.Details = details
			*refusal = &CarpError{Err: ce, TraceID: sp.trace}
			return nil
		case steward.OutcomeBlocked:
			ce := carp.Errorf(carp.CodeActionDenied, "answers to checkpoint %s do not validate and it blocks: %s stays denied this session", d.CP.CheckpointID, d.GatesWhat())
			ce.Details = details
			*refusal = &CarpError{Err: ce, TraceID: sp.trace}
			return nil
		}
		res = carp.CheckpointResult{CARPVersion: carp.Version, RequestID: req.RequestID, Timestamp: formatCarp(now),
			CheckpointID: d.CP.CheckpointID, AtlasRef: d.AtlasRef, InstanceID: out.Instance, Outcome: out.Outcome,
			Results: out.Results, Pending: set.Prompts(s),
			Effects: carp.CheckpointEffects{UnlockedCapabilities: orEmpty(d.CP.UnlockCapabilities), LockedCapabilities: orEmpty(d.CP.LockCapabilities),
				InjectedContexts: orEmpty(d.CP.InjectContexts), AllowActions: orEmpty(d.CP.AllowActions), DenyActions: orEmpty(d.CP.DenyActions),
				Guidance: d.CP.Guidance != nil}}
		if res.Pending == nil {
			res.Pending = []steward.Prompt{}
		}
		for _, w := range out.Warnings {
			res.Warnings = append(res.Warnings, carp.Warning{Code: "answer_accepted_with_warning", Message: w})
		}
		res.TelemetryLink = carp.TelemetryLink{TraceID: sp.trace, SpanID: sp.span, EventsEmitted: t.emitted}
		return nil
	})
	return res, err
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// stewardViolations is what the session's checkpoints would refuse of an
// execute of action (under g), for a validate: evaluated on a copy of the
// session, nothing changes. It checks what execute checks, in its order:
// before the policies.
func (t *tx) stewardViolations(ws string, g carp.Grant, action string, now time.Time, custom customAnswers) []carp.Violation {
	set, err := t.stewardSet()
	a := t.actionRef(g, action)
	if err != nil || set.Empty() || a == nil {
		return nil
	}
	s, _ := t.stewardSession(ws)
	steward.Evaluate(set, s, steward.Event{Kind: steward.EventExecute, Now: now, Actions: []steward.ActionRef{*a},
		Custom: custom.got, CustomErr: custom.failed})
	if b := set.Gate(s, a.AtlasID, a.ActionID, a.Tier); b != nil {
		code := carp.CodeCheckpointRequired
		if b.Status == steward.StatusBlocked {
			code = carp.CodeActionDenied
		}
		return []carp.Violation{{Code: code, Path: "checkpoint", Message: "checkpoint " + b.Def.CP.CheckpointID + " holds " + action + " back (" + b.Status + ")"}}
	}
	if ce := t.stewardDenied(set, s, *a); ce != nil {
		return []carp.Violation{{Code: ce.Code, Path: "checkpoint", Message: ce.Message}}
	}
	return nil
}

package carp

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wacpd/wacpd/atlas"
)

// Defaults of a resolution.
const (
	DefaultContextTTL    = 300 // seconds, a block without ttl_seconds
	DefaultResolutionTTL = 300 // seconds
	DefaultApprovalWait  = 900 // seconds, a requires_approval policy without a timeout
)

// Step is a TRACE event the resolver asks the engine to emit (type and
// payload; the engine gives it ids, time and its place in the chain).
// Payloads carry hashes, never content.
type Step struct {
	Type    string
	Payload map[string]any
}

// TRACE event types of CARP (issue 15, the CRA TRACE spec's names).
const (
	TraceSessionStarted     = "session.started"
	TraceSessionEnded       = "session.ended"
	TraceRequestReceived    = "carp.request.received"
	TracePolicyEvaluated    = "policy.evaluated"
	TraceContextInjected    = "context.injected"
	TraceContextRedacted    = "context.redacted"
	TraceResolutionComplete = "carp.resolution.completed"
	TraceResolutionCached   = "carp.resolution.cached"
	TraceActionRequested    = "action.requested"
	TraceActionApproved     = "action.approved"
	TraceActionDenied       = "action.denied"
	TraceActionExecuted     = "action.executed"
	TraceActionFailed       = "action.failed"
	TracePolicyViolated     = "policy.violated"
	TraceErrorOccurred      = "error.occurred"
)

// Limit is a counter an execution of a granted action adds to: a rate
// limit (Window > 0) or a session budget (Window 0). Key says what it
// counts (its scope).
type Limit struct {
	Key      string `json:"key"`
	Requests int    `json:"requests"`
	Window   int    `json:"window_seconds"` // 0: no window (a budget)
	Source   string `json:"source"`         // the policy, or "action" for the action's own limit
}

// Grant is what a resolution permits, as execute checks it later: kept by
// the engine under ResolutionID.
type Grant struct {
	ResolutionID string            `json:"resolution_id"`
	RequestID    string            `json:"request_id"`
	AgentID      string            `json:"agent_id"`
	SessionID    string            `json:"session_id"`
	TraceID      string            `json:"trace_id"`
	ExpiresAt    time.Time         `json:"expires_at"`
	Atlases      map[string]string `json:"atlases"` // atlas_id -> checksum when resolved
	Actions      []GrantedAction   `json:"actions"`
}

// GrantedAction is one permitted action with what execute enforces.
type GrantedAction struct {
	ActionID             string                      `json:"action_id"`
	AtlasID              string                      `json:"atlas_id"`
	AtlasRef             string                      `json:"atlas_ref"`
	RiskTier             string                      `json:"risk_tier"`
	Schema               []byte                      `json:"schema,omitempty"`
	ParameterConstraints []atlas.ParameterConstraint `json:"parameter_constraints,omitempty"`
	Limits               []Limit                     `json:"limits,omitempty"`
	RequiresApproval     bool                        `json:"requires_approval"`
	ApprovalPolicies     []string                    `json:"approval_policies,omitempty"`
	TimeoutMS            int                         `json:"timeout_ms,omitempty"`
}

// Input is what a resolution is made from.
type Input struct {
	Request  Request
	Atlases  []*atlas.Manifest // every loaded atlas, in load order
	Checksum func(atlasID string) string
	Now      time.Time
	NewID    func() string // UUIDv7
	TraceID  string        // the session's trace
	SpanID   string
	// Usage returns how much of limit is used at Now and when the oldest
	// counted use leaves the window (zero when nothing is counted). Nil:
	// nothing is counted yet.
	Usage func(Limit) (used int, resetsAt time.Time)
	// Checkpoints is what the session's steward checkpoints do to the
	// resolution (issue 17): nil when none are in effect.
	Checkpoints *Overlay
}

// Overlay is the steward checkpoints' part in a resolution (package
// steward decides it, the engine hands it over).
type Overlay struct {
	// Deny says why the checkpoints deny action a of m (nil: they do
	// not) and whether a checkpoint's allow_actions allows it. The
	// atlas's deny policies are applied before it; its denial before
	// any other policy; its allow lifts the default deny.
	Deny func(m *atlas.Manifest, a atlas.Action, tier string) (*ActionDenial, bool)
	// Contexts are the context blocks checkpoints injected, by atlas
	// id: handed out whatever their inject mode.
	Contexts map[string][]string
	// Asked reports whether a context hint names a checkpoint (an
	// explicit request): such a hint is not a missing domain.
	Asked func(hint string) bool
}

// Output is a resolution, its grant and its TRACE steps.
type Output struct {
	Resolution Resolution
	Grant      Grant
	Steps      []Step
}

// Resolve runs the resolution algorithm of §6 on in.Request (decoded and
// validated, authenticated by the caller): load the atlases in scope,
// evaluate the policies per action in priority order — deny first, then
// requires_approval, rate limits, budgets, allow, and whatever no allow
// covers is denied (default deny) —, assemble the context blocks,
// determine the permitted actions with their constraints, gather evidence,
// and list the TRACE steps. It returns a *Error (ATLAS_NOT_FOUND) when the
// scope names an atlas that is not loaded.
func Resolve(in Input) (Output, *Error) {
	r := &resolver{in: in, req: in.Request, ts: in.Now.UTC()}
	return r.run()
}

type resolver struct {
	in   Input
	req  Request
	ts   time.Time
	out  Output
	tier string // the task's declared risk tier
}

func (r *resolver) step(typ string, payload map[string]any) {
	r.out.Steps = append(r.out.Steps, Step{typ, payload})
}

func (r *resolver) run() (Output, *Error) {
	req := r.req
	r.tier = req.Task.RiskTier
	r.step(TraceRequestReceived, map[string]any{
		"request_id": req.RequestID, "operation": req.Operation, "agent_id": req.Requester.AgentID,
		"goal_hash": GoalHash(req.Task.Goal), "risk_tier": r.tier,
	})
	res := &r.out.Resolution
	*res = Resolution{
		CARPVersion: Version, RequestID: req.RequestID, ResolutionID: r.in.NewID(), Timestamp: formatTime(r.ts),
		ContextBlocks: []ContextBlock{}, AllowedActions: []ActionPermission{}, DeniedActions: []ActionDenial{},
		PoliciesApplied: []PolicyApplication{}, Evidence: []Evidence{},
	}
	atlases, missing, err := r.atlases()
	if err != nil {
		return Output{}, err
	}
	expires := r.ts.Add(DefaultResolutionTTL * time.Second)
	contextExpires := expires
	if len(atlases) == 0 {
		res.Decision = Decision{Type: DecisionInsufficientContext, MissingDomains: missing,
			Suggestion: "name a domain one of the loaded atlases covers in task.context_hints, or leave the hints out"}
	} else {
		approval := r.actions(atlases)
		if ttl := r.context(atlases); ttl > 0 && r.ts.Add(time.Duration(ttl)*time.Second).Before(contextExpires) {
			contextExpires = r.ts.Add(time.Duration(ttl) * time.Second)
		}
		res.Decision = r.decide(approval, missing)
	}
	if contextExpires.Before(expires) {
		expires = contextExpires // a resolution lives no longer than its context
	}
	res.TTL = TTL{ContextExpiresAt: formatTime(contextExpires), ResolutionExpiresAt: formatTime(expires),
		RefreshHintSeconds: int(expires.Sub(r.ts).Seconds() * 0.8)}
	g := &r.out.Grant
	g.ResolutionID, g.RequestID, g.AgentID, g.SessionID = res.ResolutionID, req.RequestID, req.Requester.AgentID, req.Requester.SessionID
	g.TraceID, g.ExpiresAt = r.in.TraceID, expires
	g.Atlases = map[string]string{}
	for _, m := range atlases {
		if r.in.Checksum != nil {
			g.Atlases[m.AtlasID] = r.in.Checksum(m.AtlasID)
		}
	}
	for i := range res.AllowedActions {
		res.AllowedActions[i].ValidUntil = formatTime(expires)
	}
	r.step(TraceResolutionComplete, map[string]any{
		"request_id": req.RequestID, "resolution_id": res.ResolutionID, "decision": res.Decision.Type,
		"allowed_actions": len(res.AllowedActions), "denied_actions": len(res.DeniedActions),
		"context_blocks": len(res.ContextBlocks), "expires_at": res.TTL.ResolutionExpiresAt,
	})
	res.TelemetryLink = TelemetryLink{TraceID: r.in.TraceID, SpanID: r.in.SpanID, EventsEmitted: len(r.out.Steps)}
	return r.out, nil
}

// InScope returns the atlases of loaded a resolve of req is made from
// (step 3; asked says which context hints name a steward checkpoint),
// none when its scope names an atlas that is not loaded.
func InScope(req Request, loaded []*atlas.Manifest, asked func(string) bool) []*atlas.Manifest {
	r := &resolver{in: Input{Request: req, Atlases: loaded, Checkpoints: &Overlay{Asked: asked}}, req: req}
	in, _, err := r.atlases()
	if err != nil {
		return nil
	}
	return in
}

// atlases returns the atlases in scope (step 3): those scope.atlases names
// (one not loaded is ATLAS_NOT_FOUND), else those covering a context hint,
// else all. missing lists the hints and scope domains no atlas in scope
// covers.
func (r *resolver) atlases() ([]*atlas.Manifest, []string, *Error) {
	var in []*atlas.Manifest
	if s := r.req.Scope; s != nil && len(s.Atlases) > 0 {
		for _, id := range s.Atlases {
			i := slices.IndexFunc(r.in.Atlases, func(m *atlas.Manifest) bool { return m.AtlasID == id || m.Ref() == id })
			if i < 0 {
				e := Errorf(CodeAtlasNotFound, "atlas %q is not loaded", id)
				e.Details = map[string]any{"atlas": id}
				return nil, nil, e
			}
			in = append(in, r.in.Atlases[i])
		}
	} else {
		in = slices.Clone(r.in.Atlases)
	}
	if len(r.in.Atlases) == 0 {
		return nil, nil, Errorf(CodeAtlasNotFound, "no atlas is loaded")
	}
	var missing []string
	if hints := r.req.Task.ContextHints; len(hints) > 0 && slices.ContainsFunc(hints, func(h string) bool { return !r.asked(h) }) {
		var covering []*atlas.Manifest
		for _, m := range in {
			if slices.ContainsFunc(hints, func(h string) bool { return covers(m, h) }) {
				covering = append(covering, m)
			}
		}
		for _, h := range hints {
			if o := r.in.Checkpoints; o != nil && o.Asked != nil && o.Asked(h) {
				continue
			}
			if !slices.ContainsFunc(covering, func(m *atlas.Manifest) bool { return covers(m, h) }) {
				missing = append(missing, h)
			}
		}
		in = covering
	}
	if s := r.req.Scope; s != nil {
		for _, d := range s.Domains {
			if !slices.ContainsFunc(in, func(m *atlas.Manifest) bool { return slices.Contains(domains(m), d) }) {
				missing = append(missing, d)
			}
		}
	}
	return in, missing, nil
}

// asked reports whether hint names a steward checkpoint.
func (r *resolver) asked(hint string) bool {
	o := r.in.Checkpoints
	return o != nil && o.Asked != nil && o.Asked(hint)
}

// covers reports whether hint names one of m's domains, context blocks or
// tags.
func covers(m *atlas.Manifest, hint string) bool {
	if slices.Contains(domains(m), hint) {
		return true
	}
	return slices.ContainsFunc(m.ContextBlocks, func(c atlas.ContextBlock) bool {
		return c.ContextID == hint || slices.Contains(c.Tags, hint)
	})
}

func domains(m *atlas.Manifest) []string {
	out := slices.Clone(m.Domains)
	for _, c := range m.ContextBlocks {
		if c.Domain != "" {
			out = append(out, c.Domain)
		}
	}
	return out
}

// policyCovers reports whether policy p applies to action a of m: its
// action patterns (if any) match and a is in one of its capabilities (if
// it names any).
func policyCovers(m *atlas.Manifest, p atlas.Policy, a atlas.Action) bool {
	if len(p.Actions) > 0 && !slices.ContainsFunc(p.Actions, func(s string) bool { return atlas.Match(s, a.ActionID) }) {
		return false
	}
	if len(p.Capabilities) > 0 && !slices.ContainsFunc(m.Capabilities, func(c atlas.Capability) bool {
		return slices.Contains(p.Capabilities, c.CapabilityID) &&
			slices.ContainsFunc(c.Actions, func(s string) bool { return atlas.Match(s, a.ActionID) })
	}) {
		return false
	}
	return len(p.Actions) > 0 || len(p.Capabilities) > 0
}

// byPriority returns m's policies of type typ, highest priority first
// (then in manifest order).
func byPriority(m *atlas.Manifest, typ string) []atlas.Policy {
	var out []atlas.Policy
	for _, p := range m.Policies {
		if p.Type == typ {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b atlas.Policy) int { return cmp.Compare(b.Priority, a.Priority) })
	return out
}

// approvalNeed is what the task's declared risk asks for: the
// requires_approval policies its tier triggers.
type approvalNeed struct {
	policies  []string
	approvers []Approver
	timeout   int
}

// policyStat accumulates one policy's PolicyApplication.
type policyStat struct{ app PolicyApplication }

// actions evaluates every action of the atlases in scope (steps 4 and 6)
// and fills allowed_actions, denied_actions and policies_applied. It
// returns what the task's declared risk tier needs approved.
func (r *resolver) actions(atlases []*atlas.Manifest) approvalNeed {
	res := &r.out.Resolution
	var need approvalNeed
	var requested []string
	if s := r.req.Scope; s != nil {
		requested = s.Actions
	}
	stats := map[string]*policyStat{}
	var order []string
	stat := func(m *atlas.Manifest, p atlas.Policy) *policyStat {
		key := m.Ref() + "/" + p.PolicyID
		if s, ok := stats[key]; ok {
			return s
		}
		s := &policyStat{PolicyApplication{PolicyID: p.PolicyID, PolicyName: cmp.Or(p.Name, p.PolicyID),
			PolicyVersion: cmp.Or(p.Version, m.Version), AtlasRef: m.Ref(), Effects: []PolicyEffect{}}}
		stats[key], order = s, append(order, key)
		return s
	}
	effect := func(m *atlas.Manifest, p atlas.Policy, eff, target, reason string) {
		s := stat(m, p)
		s.app.RulesMatched++
		s.app.Effects = append(s.app.Effects, PolicyEffect{RuleID: p.PolicyID, Effect: eff, Target: target, Reason: reason})
	}
	maxActions := 0
	if s := r.req.Scope; s != nil {
		maxActions = s.MaxActions
	}
	for _, m := range atlases {
		for _, p := range m.Policies {
			stat(m, p) // every policy of an atlas in scope is applied, matching or not
		}
		// The task's declared risk: a requires_approval policy with risk
		// tiers applies to the task as a whole when its tier is listed.
		if r.tier != "" {
			for _, p := range byPriority(m, atlas.PolicyRequiresApproval) {
				if slices.Contains(p.RiskTiers, r.tier) {
					need.policies = append(need.policies, p.PolicyID)
					need.approvers = append(need.approvers, p.Approvers...)
					need.timeout = max(need.timeout, cmp.Or(p.ApprovalTimeoutSeconds, DefaultApprovalWait))
					effect(m, p, "require_approval", "task", fmt.Sprintf("declared risk tier %s", r.tier))
				}
			}
		}
		for _, a := range m.Actions {
			if len(requested) > 0 && !slices.ContainsFunc(requested, func(s string) bool { return atlas.Match(s, a.ActionID) }) {
				continue
			}
			for _, p := range m.Policies {
				stat(m, p).app.RulesEvaluated++
			}
			perm, denial := r.evaluate(m, a, effect)
			if denial != nil {
				res.DeniedActions = append(res.DeniedActions, *denial)
				continue
			}
			if maxActions > 0 && len(res.AllowedActions) == maxActions {
				res.Warnings = append(res.Warnings, Warning{Code: "max_actions", Message: fmt.Sprintf("scope.max_actions %d: %s and later actions left out", maxActions, a.ActionID)})
				maxActions = -1
			}
			if maxActions < 0 {
				continue
			}
			res.AllowedActions = append(res.AllowedActions, perm.ActionPermission)
			r.out.Grant.Actions = append(r.out.Grant.Actions, perm.grant)
		}
	}
	for _, key := range order {
		app := stats[key].app
		res.PoliciesApplied = append(res.PoliciesApplied, app)
		r.step(TracePolicyEvaluated, map[string]any{
			"policy_id": app.PolicyID, "atlas_ref": app.AtlasRef, "rules_evaluated": app.RulesEvaluated,
			"rules_matched": app.RulesMatched, "effects": app.Effects,
		})
	}
	return need
}

type permission struct {
	ActionPermission
	grant GrantedAction
}

// evaluate applies m's policies to action a in the order deny,
// requires_approval, rate_limit, budget, allow, and default deny.
func (r *resolver) evaluate(m *atlas.Manifest, a atlas.Action, effect func(*atlas.Manifest, atlas.Policy, string, string, string)) (permission, *ActionDenial) {
	for _, p := range byPriority(m, atlas.PolicyDeny) {
		if policyCovers(m, p, a) {
			effect(m, p, "deny", a.ActionID, p.Reason)
			return permission{}, &ActionDenial{ActionType: a.ActionID, Reason: cmp.Or(p.Reason, "denied by policy "+p.PolicyID),
				PolicyRefs: []string{p.PolicyID}, Permanent: true, Remediation: p.Remediation}
		}
	}
	tier := a.Tier()
	overlayAllows := false
	if o := r.in.Checkpoints; o != nil && o.Deny != nil {
		var denial *ActionDenial
		if denial, overlayAllows = o.Deny(m, a, tier); denial != nil {
			return permission{}, denial
		}
	}
	perm := permission{
		ActionPermission: ActionPermission{
			ActionID: a.ActionID, ActionType: a.ActionID, Name: cmp.Or(a.Name, a.ActionID), Description: a.Description,
			Schema: schemaOf(a), Examples: a.Examples, Constraints: []Constraint{}, RiskTier: tier,
			AtlasRef: m.Ref(), EvidenceRefs: nonNil(a.EvidenceRefs),
		},
		grant: GrantedAction{ActionID: a.ActionID, AtlasID: m.AtlasID, AtlasRef: m.Ref(), RiskTier: tier,
			Schema: a.ParametersSchema, ParameterConstraints: a.ParameterConstraints, TimeoutMS: a.TimeoutMS},
	}
	for _, c := range a.ParameterConstraints {
		perm.ParameterConstraints = append(perm.ParameterConstraints, ParameterConstraint{
			Parameter: c.Parameter, ConstraintType: c.ConstraintType, Value: c.Value, Message: c.Message})
	}
	if a.RequiresApproval {
		perm.grant.RequiresApproval = true
	}
	for _, p := range byPriority(m, atlas.PolicyRequiresApproval) {
		if policyCovers(m, p, a) && (len(p.RiskTiers) == 0 || slices.Contains(p.RiskTiers, tier) || slices.Contains(p.RiskTiers, r.tier)) {
			perm.grant.RequiresApproval = true
			perm.grant.ApprovalPolicies = append(perm.grant.ApprovalPolicies, p.PolicyID)
			effect(m, p, "require_approval", a.ActionID, p.Reason)
		}
	}
	if perm.grant.RequiresApproval {
		perm.RequiresApproval, perm.ApprovalType = true, "async"
		perm.Constraints = append(perm.Constraints, Constraint{ID: a.ActionID + "/approval", Type: ConstraintApprovalRequired,
			Description: "a person approves each execution", Params: map[string]any{"policies": nonNil(perm.grant.ApprovalPolicies)}, Enforcement: "hard"})
	}
	addLimit := func(rl atlas.RateLimit, source string) {
		l := Limit{Key: r.limitKey(m, a, rl.Scope, source), Requests: rl.Requests, Window: rl.WindowSeconds, Source: source}
		perm.grant.Limits = append(perm.grant.Limits, l)
		shown := &RateLimit{Requests: rl.Requests, WindowSeconds: rl.WindowSeconds, Scope: cmp.Or(rl.Scope, atlas.ScopeAction)}
		if r.in.Usage != nil {
			used, resets := r.in.Usage(l)
			shown.CurrentUsage = &used
			if !resets.IsZero() {
				shown.ResetsAt = formatTime(resets)
			}
		}
		if perm.RateLimit == nil || rl.Requests < perm.RateLimit.Requests {
			perm.RateLimit = shown // the tightest is shown; all are enforced
		}
		perm.Constraints = append(perm.Constraints, Constraint{ID: a.ActionID + "/" + source, Type: ConstraintRateLimit,
			Description: fmt.Sprintf("at most %d executions per %d s (%s)", rl.Requests, rl.WindowSeconds, shown.Scope),
			Params:      map[string]any{"requests": rl.Requests, "window_seconds": rl.WindowSeconds, "scope": shown.Scope}, Enforcement: "hard"})
	}
	if a.RateLimit != nil {
		addLimit(*a.RateLimit, "action")
	}
	for _, p := range byPriority(m, atlas.PolicyRateLimit) {
		if policyCovers(m, p, a) {
			addLimit(*p.RateLimit, p.PolicyID)
			effect(m, p, "constrain", a.ActionID, "rate limit")
		}
	}
	for _, p := range byPriority(m, atlas.PolicyBudget) {
		if policyCovers(m, p, a) {
			l := Limit{Key: "budget|" + r.req.Requester.SessionID + "|" + m.AtlasID + "|" + p.PolicyID, Requests: p.MaxActions, Source: p.PolicyID}
			perm.grant.Limits = append(perm.grant.Limits, l)
			perm.Constraints = append(perm.Constraints, Constraint{ID: a.ActionID + "/" + p.PolicyID, Type: ConstraintCustom,
				Description: fmt.Sprintf("at most %d executions in this session (budget %s)", p.MaxActions, p.PolicyID),
				Params:      map[string]any{"max_actions": p.MaxActions}, Enforcement: "hard"})
			effect(m, p, "constrain", a.ActionID, "budget")
		}
	}
	for _, p := range byPriority(m, atlas.PolicyAllow) {
		if policyCovers(m, p, a) {
			effect(m, p, "allow", a.ActionID, p.Reason)
			return perm, nil
		}
	}
	if overlayAllows {
		return perm, nil // a checkpoint's allow_actions
	}
	return permission{}, &ActionDenial{ActionType: a.ActionID, Reason: "no policy allows it (default deny)", PolicyRefs: []string{},
		Permanent: false, Remediation: "the atlas's steward adds an allow policy covering " + a.ActionID}
}

// limitKey says what a rate limit counts, by its scope: the action's
// executions by everyone (action), the session's (session), the agent's
// (agent), or every execution the policy covers (global).
func (r *resolver) limitKey(m *atlas.Manifest, a atlas.Action, scope, source string) string {
	switch scope {
	case atlas.ScopeSession:
		return "session|" + r.req.Requester.SessionID + "|" + m.AtlasID + "|" + a.ActionID + "|" + source
	case atlas.ScopeAgent:
		return "agent|" + r.req.Requester.AgentID + "|" + m.AtlasID + "|" + a.ActionID + "|" + source
	case atlas.ScopeGlobal:
		if source != "action" {
			return "global|" + m.AtlasID + "|" + source
		}
	}
	return "action|" + m.AtlasID + "|" + a.ActionID + "|" + source
}

func schemaOf(a atlas.Action) []byte {
	if len(a.ParametersSchema) > 0 {
		return a.ParametersSchema
	}
	return []byte(`{"type":"object"}`)
}

// decide is the resolution's decision from what was evaluated.
func (r *resolver) decide(need approvalNeed, missing []string) Decision {
	res := &r.out.Resolution
	explicit := r.req.Scope != nil && len(r.req.Scope.Actions) > 0
	allowed := make([]string, len(res.AllowedActions))
	for i, a := range res.AllowedActions {
		allowed[i] = a.ActionID
	}
	denied := make([]string, len(res.DeniedActions))
	var refs []string
	for i, d := range res.DeniedActions {
		denied[i] = d.ActionType
		refs = append(refs, d.PolicyRefs...)
	}
	switch {
	case len(missing) > 0 && len(allowed) == 0 && len(res.ContextBlocks) == 0:
		return Decision{Type: DecisionInsufficientContext, MissingDomains: missing}
	case len(need.policies) > 0:
		return Decision{Type: DecisionRequiresApproval, Approvers: need.approvers, ApprovalTimeoutSeconds: need.timeout}
	case explicit && len(allowed) > 0 && len(denied) > 0:
		return Decision{Type: DecisionPartial, Reason: "some of the actions asked for are denied", AllowedSubset: allowed, DeniedSubset: denied}
	case len(allowed) == 0 && (explicit || len(res.ContextBlocks) == 0):
		reason := "no action is permitted"
		if len(denied) > 0 {
			reason = res.DeniedActions[0].Reason
		}
		return Decision{Type: DecisionDeny, Reason: reason, PolicyRefs: compact(refs), Remediation: "ask for actions the atlas's policies allow"}
	}
	var cs []Constraint
	for _, a := range res.AllowedActions {
		cs = append(cs, a.Constraints...)
	}
	if len(cs) > 0 {
		return Decision{Type: DecisionAllowWithConstraints, Constraints: cs}
	}
	return Decision{Type: DecisionAllow}
}

func compact(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// context assembles the context blocks (step 5) and the evidence (step 7):
// selected by inject mode, limited to scope.domains, highest priority
// first, redacted, hashed, within scope.max_context_tokens. It returns the
// shortest TTL of the blocks handed out (0 when none).
func (r *resolver) context(atlases []*atlas.Manifest) int {
	res := &r.out.Resolution
	type pick struct {
		m *atlas.Manifest
		c atlas.ContextBlock
	}
	var picks []pick
	for _, m := range atlases {
		var injected []string
		if o := r.in.Checkpoints; o != nil {
			injected = o.Contexts[m.AtlasID]
		}
		for _, c := range m.ContextBlocks {
			if slices.Contains(injected, c.ContextID) || r.selects(c) {
				picks = append(picks, pick{m, c})
			}
		}
	}
	slices.SortStableFunc(picks, func(a, b pick) int { return cmp.Compare(b.c.Priority, a.c.Priority) })
	budget := 0
	if s := r.req.Scope; s != nil {
		budget = s.MaxContextTokens
	}
	tokens, minTTL := 0, 0
	for _, p := range picks {
		content, redactions := r.redact(p.m, p.c)
		n := (len(content) + 3) / 4
		if budget > 0 && tokens+n > budget {
			res.Warnings = append(res.Warnings, Warning{Code: "max_context_tokens", Message: fmt.Sprintf("context block %s left out: scope.max_context_tokens %d", p.c.ContextID, budget)})
			continue
		}
		tokens += n
		ttl := cmp.Or(p.c.TTLSeconds, DefaultContextTTL)
		if minTTL == 0 || ttl < minTTL {
			minTTL = ttl
		}
		hash := ContentHash([]byte(content))
		ev := Evidence{EvidenceID: p.m.Ref() + "/context/" + p.c.ContextID, Type: "documentation",
			Source: "atlas " + p.m.Ref() + ", context block " + p.c.ContextID, AtlasRef: p.m.Ref(),
			ContentHash: ContentHash([]byte(p.c.Content)), ContentPreview: preview(content), CreatedAt: formatTime(r.ts),
			Verified: true, VerificationMethod: "sha256 of the block as the atlas holds it"}
		res.Evidence = append(res.Evidence, ev)
		block := ContextBlock{BlockID: p.c.ContextID, ContentHash: hash, AtlasRef: p.m.Ref(), PackRef: p.c.ContextID,
			Domain: p.c.Domain, ContentType: cmp.Or(p.c.ContentType, "markdown"), Content: content, TokenCount: n,
			TTLSeconds: ttl, Classification: p.c.Classification, Redactions: redactions,
			EvidenceRefs: append([]string{ev.EvidenceID}, p.c.EvidenceRefs...), Tags: nonNil(p.c.Tags), Priority: p.c.Priority}
		res.ContextBlocks = append(res.ContextBlocks, block)
		r.step(TraceContextInjected, map[string]any{"block_id": block.BlockID, "atlas_ref": block.AtlasRef,
			"content_hash": hash, "token_count": n, "ttl_seconds": ttl})
		for _, x := range redactions {
			r.step(TraceContextRedacted, map[string]any{"block_id": block.BlockID, "original_hash": x.OriginalHash,
				"content_hash": hash, "policy_ref": x.PolicyRef, "redacted_fields": x.RedactedFields})
		}
	}
	return minTTL
}

// selects reports whether context block c goes into this resolution.
func (r *resolver) selects(c atlas.ContextBlock) bool {
	if s := r.req.Scope; s != nil && len(s.Domains) > 0 && !slices.Contains(s.Domains, c.Domain) {
		return false
	}
	hints := r.req.Task.ContextHints
	named := slices.Contains(hints, c.ContextID)
	switch cmp.Or(c.InjectMode, atlas.InjectOnMatch) {
	case atlas.InjectAlways:
		return true
	case atlas.InjectOnDemand:
		return named
	case atlas.InjectRiskBased:
		return named || (r.tier != "" && atlas.TierAtLeast(r.tier, c.MinRiskTier))
	}
	// on_match
	if named || (c.Domain != "" && slices.Contains(hints, c.Domain)) || slices.ContainsFunc(c.Tags, func(t string) bool { return slices.Contains(hints, t) }) {
		return true
	}
	words := wordsOf(r.req.Task.Goal)
	return slices.ContainsFunc(c.Keywords, func(k string) bool { return containsWords(words, wordsOf(k)) })
}

// wordsOf splits s into lowercase words.
func wordsOf(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// containsWords reports whether phrase occurs in words as consecutive
// whole words, or as a word's prefix for a one-word phrase ("refund" in
// "refunds").
func containsWords(words, phrase []string) bool {
	if len(phrase) == 0 {
		return false
	}
	for i := range words {
		if len(phrase) == 1 {
			if strings.HasPrefix(words[i], phrase[0]) {
				return true
			}
			continue
		}
		if i+len(phrase) <= len(words) && slices.Equal(words[i:i+len(phrase)], phrase) {
			return true
		}
	}
	return false
}

// redact applies c's own redactions and m's redact policies naming c; it
// returns the content handed out and what was redacted.
func (r *resolver) redact(m *atlas.Manifest, c atlas.ContextBlock) (string, []Redaction) {
	content := c.Content
	var out []Redaction
	apply := func(patterns []string, reason, ref string) {
		before := content
		var hit []string
		for _, p := range patterns {
			re, err := regexp.Compile(p)
			if err != nil {
				continue // a manifest's regexes compiled when it was validated
			}
			if re.MatchString(content) {
				content = re.ReplaceAllString(content, "[REDACTED]")
				hit = append(hit, p)
			}
		}
		if len(hit) > 0 {
			out = append(out, Redaction{OriginalHash: ContentHash([]byte(before)), RedactedFields: hit, Reason: reason, PolicyRef: ref})
		}
	}
	if len(c.Redact) > 0 {
		apply(c.Redact, "the block's own redactions", m.Ref()+"/context/"+c.ContextID)
	}
	for _, p := range byPriority(m, atlas.PolicyRedact) {
		if len(p.Contexts) == 0 || slices.Contains(p.Contexts, c.ContextID) {
			apply(p.Patterns, cmp.Or(p.Reason, "redact policy"), p.PolicyID)
		}
	}
	return content, out
}

func preview(s string) string {
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// formatTime is CARP's timestamp form: RFC 3339 in UTC with milliseconds.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

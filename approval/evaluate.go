package approval

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wacpd/wacpd/atlas"
)

// Envelope is a session's standing against which requests are checked:
// its mode, the provider classes it uses (the first one it uses is
// adopted; an approved change adds one), the policy version of each atlas
// it acts under (adopted on first use; an approval acknowledges a move),
// and per-step approval once an operator asked for it. What an approval
// lets run is not here but in its permit: an approval never widens the
// scope beyond its permit, which expires, is used up or is revoked.
type Envelope struct {
	Mode           Mode              `json:"mode"`
	Providers      []string          `json:"providers,omitempty"`
	PolicyVersions map[string]string `json:"policy_versions,omitempty"`
	PerStep        bool              `json:"per_step,omitempty"`
}

// Trigger kinds, in the order a checkpoint presents them (seed 003, "When
// checkpoints fire").
const (
	TriggerHighRisk         = "high_risk_operation"
	TriggerCapability       = "capability_transition"
	TriggerPathScope        = "path_scope_expansion"
	TriggerDelegation       = "delegation"
	TriggerProvider         = "provider_class_change"
	TriggerPolicyBoundary   = "policy_boundary_change"
	TriggerTrust            = "trust_violation"
	TriggerPerStep          = "per_step_approval"
	TriggerPolicyCheckpoint = "policy_checkpoint" // checkpoint_actions: policy-defined, waived by never
	TriggerAlways           = "checkpoint_always" // the mode always: waived by nothing, needed by nothing else
)

// Trigger is one reason a checkpoint fires.
type Trigger struct {
	Kind        string `json:"kind"`
	Description string `json:"description"`
	Mandatory   bool   `json:"mandatory"`
}

// Delta is what a request needs beyond the session's envelope.
type Delta struct {
	PathsAdded    []string `json:"paths_added,omitempty"`
	RiskTier      *Change  `json:"risk_tier,omitempty"`
	ProviderClass *Change  `json:"provider_class,omitempty"`
	PolicyVersion *Change  `json:"policy_version,omitempty"`
}

// Change is a value moving from From to To.
type Change struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Empty reports whether d needs nothing beyond the envelope.
func (d Delta) Empty() bool {
	return len(d.PathsAdded) == 0 && d.RiskTier == nil && d.ProviderClass == nil && d.PolicyVersion == nil
}

// String is d for a person: "+path src/b.go; risk tier medium -> high",
// or a sentence saying there is nothing beyond the approved scope.
func (d Delta) String() string {
	var parts []string
	for _, p := range d.PathsAdded {
		parts = append(parts, "+path "+p)
	}
	if c := d.RiskTier; c != nil {
		parts = append(parts, fmt.Sprintf("risk tier %s -> %s", c.From, c.To))
	}
	if c := d.ProviderClass; c != nil {
		parts = append(parts, fmt.Sprintf("provider class %s -> %s", c.From, c.To))
	}
	if c := d.PolicyVersion; c != nil {
		parts = append(parts, fmt.Sprintf("policy version %s -> %s", c.From, c.To))
	}
	if len(parts) == 0 {
		return "none: the request stays within the session's approved scope"
	}
	return strings.Join(parts, "; ")
}

// Input is what Evaluate decides from.
type Input struct {
	Request  Canonical
	Action   Action
	Policy   Policy
	Envelope Envelope
	Trust    Trust
	Permits  []Permit // the session's permits, any state
	TrustSeq int      // the session's last trust event
	Now      time.Time
}

// Decision is what Evaluate decided.
type Decision struct {
	Triggers   []Trigger
	Delta      Delta
	Boundaries []string
	Untrusted  []BoundaryTrust
	Mode       Mode     // the mode in force: never falls back to policy when the policy refuses it
	Permit     *Permit  // the permit that lets the request run when triggers fire
	Envelope   Envelope // the envelope after what a request adopts without a checkpoint (a first provider class, a first policy version)
	Adopted    bool     // Envelope differs from the input's: the caller stores it
}

// Checkpoint reports whether the request waits for an operator.
func (d Decision) Checkpoint() bool { return len(d.Triggers) > 0 && d.Permit == nil }

// Evaluate decides whether in.Request needs a checkpoint: the triggers
// that fire, the delta to the envelope, and a permit that covers them.
func Evaluate(in Input) Decision {
	a, p, env, c := in.Action, in.Policy, in.Envelope, in.Request
	d := Decision{Boundaries: Boundaries(c, a), Mode: env.Mode, Envelope: env}
	if d.Mode == "" {
		d.Mode = ModePolicy
	}
	if d.Mode == ModeNever && !p.AllowNever {
		d.Mode = ModePolicy
	}
	fire := func(kind string, mandatory bool, format string, args ...any) {
		d.Triggers = append(d.Triggers, Trigger{Kind: kind, Mandatory: mandatory, Description: fmt.Sprintf(format, args...)})
	}
	tier := a.Tier()
	if a.RequiresApproval {
		by := "the atlas's requires_approval"
		if len(a.ApprovalPolicies) > 0 {
			by = "policy " + strings.Join(a.ApprovalPolicies, ", ")
		}
		fire(TriggerHighRisk, true, "%s is a high-risk operation by %s", c.Tool, by)
	} else if p.HighRiskTier != "" && rank(tier) >= rank(p.HighRiskTier) {
		fire(TriggerHighRisk, true, "%s is %s risk, at or above the policy's high-risk tier %s", c.Tool, tier, p.HighRiskTier)
	}
	approved := p.BaselineTier
	if rank(tier) > rank(approved) {
		d.Delta.RiskTier = &Change{From: approved, To: tier}
		fire(TriggerCapability, true, "%s moves the session from %s to %s risk", c.Tool, approved, tier)
	}
	for _, path := range c.Paths(a.PathParameters) {
		if !covered(path, p.ApprovedPaths) {
			d.Delta.PathsAdded = append(d.Delta.PathsAdded, path)
		}
	}
	if len(d.Delta.PathsAdded) > 0 {
		fire(TriggerPathScope, true, "%s touches %s, outside the approved paths", c.Tool, strings.Join(d.Delta.PathsAdded, ", "))
	}
	if a.Delegation {
		fire(TriggerDelegation, true, "%s delegates work to another agent, which needs its own trust treatment", c.Tool)
	}
	if pc := a.ProviderClass; pc != "" {
		known := append(slices.Clone(p.ProviderClasses), env.Providers...)
		switch {
		case len(known) == 0:
			d.Envelope.Providers = []string{pc} // the first class the session uses is its class
			d.Adopted = true
		case !slices.Contains(known, pc):
			d.Delta.ProviderClass = &Change{From: strings.Join(known, ","), To: pc}
			fire(TriggerProvider, true, "%s calls a %s provider; the session's approved provider classes are %s", c.Tool, pc, strings.Join(known, ", "))
		}
	}
	switch v := env.PolicyVersions[p.Atlas]; {
	case v == "":
		d.Envelope.PolicyVersions = withVersion(env.PolicyVersions, p.Atlas, p.Version)
		d.Adopted = true
	case v != p.Version:
		d.Delta.PolicyVersion = &Change{From: v, To: p.Version}
		fire(TriggerPolicyBoundary, true, "the policy of atlas %s moved from %s to %s since the session's approvals", p.Atlas, v, p.Version)
	}
	d.Untrusted = in.Trust.Untrusted(d.Boundaries)
	for _, b := range d.Untrusted {
		fire(TriggerTrust, true, "boundary %s is untrusted since %s (%s): every step needs approval", b.Boundary, b.Since, b.Reason)
	}
	if env.PerStep {
		fire(TriggerPerStep, true, "an operator shifted the session to per-step approval")
	}
	if d.Mode != ModeNever && slices.ContainsFunc(p.CheckpointActions, func(pat string) bool { return atlas.Match(pat, c.Tool) }) {
		fire(TriggerPolicyCheckpoint, false, "the policy of atlas %s checkpoints %s", p.Atlas, c.Tool)
	}
	if d.Mode == ModeAlways && len(d.Triggers) == 0 {
		fire(TriggerAlways, false, "the session's checkpoint mode is always: a checkpoint before every tool invocation")
	}
	if len(d.Triggers) > 0 {
		d.Permit = cover(in, d)
	}
	return d
}

func withVersion(m map[string]string, atlas, v string) map[string]string {
	out := map[string]string{atlas: v}
	for k, x := range m {
		if k != atlas {
			out[k] = x
		}
	}
	return out
}

// covered reports whether path is covered by one of patterns.
func covered(path string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return atlas.MatchPath(p, path) })
}

// cover returns the permit that covers the request despite d's triggers:
// one bound to its digest first, else an envelope permit.
func cover(in Input, d Decision) *Permit {
	var envelope *Permit
	for i := range in.Permits {
		pm := &in.Permits[i]
		if pm.Usable(in.Now) != nil || pm.Session != in.Request.Context.Session || pm.Tool != in.Request.Tool ||
			pm.PolicyVersion != in.Policy.Version {
			continue
		}
		if slices.ContainsFunc(d.Untrusted, func(b BoundaryTrust) bool { return b.SinceSeq > pm.TrustSeq }) {
			continue // issued before the violation: the boundary needs a new approval
		}
		if pm.Digest != "" {
			if SameDigest(pm.Digest, in.Request.Digest) {
				return pm
			}
			continue
		}
		if envelope != nil || d.Mode == ModeAlways || in.Envelope.PerStep || len(d.Untrusted) > 0 {
			continue
		}
		paths := in.Request.Paths(in.Action.PathParameters)
		if slices.IndexFunc(paths, func(p string) bool { return !covered(p, pm.Paths) }) < 0 {
			envelope = pm
		}
	}
	return envelope
}

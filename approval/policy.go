package approval

import (
	"fmt"
	"slices"
	"time"

	"github.com/wacpd/wacpd/atlas"
)

// Mode is how often a session's actions are checkpointed (seed 003,
// "Checkpoint frequency modes").
type Mode string

// The three modes.
const (
	ModeAlways Mode = "always" // a checkpoint before every tool invocation
	ModePolicy Mode = "policy" // the policy's checkpoints (the default)
	ModeNever  Mode = "never"  // no policy-defined checkpoints; the mandatory triggers still fire
)

// ParseMode returns s as a Mode ("" is policy).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModePolicy, nil
	case ModeAlways, ModePolicy, ModeNever:
		return m, nil
	}
	return "", fmt.Errorf("%w: %q is not always, policy or never", ErrMode, s)
}

// Policy is the steward's approval policy for one atlas, with defaults
// applied (FromAtlas).
type Policy struct {
	Atlas             string
	Version           string // the policy version: the atlas's ref and checksum
	BaselineTier      string
	HighRiskTier      string // "" for none
	CheckpointActions []string
	ApprovedPaths     []string
	ProviderClasses   []string
	AllowNever        bool
	OnViolation       string
	PermitTTL         time.Duration
	MaxPermitUses     int
	Timeout           time.Duration // 0 waits indefinitely
}

// Defaults of a policy.
const (
	DefaultPermitTTL     = time.Hour
	DefaultMaxPermitUses = 100
)

// FromAtlas returns m's approval policy; checksum is m's (atlas.Checksum).
func FromAtlas(m *atlas.Manifest, checksum string) Policy {
	p := Policy{Atlas: m.AtlasID, Version: m.Ref() + "#" + checksum, BaselineTier: atlas.RiskCritical,
		OnViolation: atlas.OnViolationPerStep, PermitTTL: DefaultPermitTTL, MaxPermitUses: DefaultMaxPermitUses}
	a := m.Approvals
	if a == nil {
		return p
	}
	if a.BaselineRiskTier != "" {
		p.BaselineTier = a.BaselineRiskTier
	}
	p.HighRiskTier = a.HighRiskTier
	p.CheckpointActions = a.CheckpointActions
	p.ApprovedPaths = a.ApprovedPaths
	p.ProviderClasses = a.ProviderClasses
	p.AllowNever = a.AllowNever
	if a.OnViolation != "" {
		p.OnViolation = a.OnViolation
	}
	if a.PermitTTLSeconds > 0 {
		p.PermitTTL = time.Duration(a.PermitTTLSeconds) * time.Second
	}
	if a.MaxPermitUses > 0 {
		p.MaxPermitUses = a.MaxPermitUses
	}
	p.Timeout = time.Duration(a.TimeoutSeconds) * time.Second
	return p
}

// Action is what the atlas says about the action a request names, and
// what the CARP resolution decided of it.
type Action struct {
	ID               string
	RiskTier         string // "" is low
	SideEffectClass  string // "" is irreversible
	ProviderClass    string
	PathParameters   []string
	Delegation       bool
	RequiresApproval bool     // a requires_approval of the atlas covers it
	ApprovalPolicies []string // the policies that require it
}

// FromAtlasAction returns the facts of a; requires and policies are the
// CARP resolution's (carp.GrantedAction).
func FromAtlasAction(a atlas.Action, requires bool, policies []string) Action {
	return Action{ID: a.ActionID, RiskTier: a.RiskTier, SideEffectClass: a.SideEffectClass, ProviderClass: a.ProviderClass,
		PathParameters: a.PathParameters, Delegation: a.Delegation, RequiresApproval: requires || a.RequiresApproval,
		ApprovalPolicies: policies}
}

// SideEffect returns a's side-effect class, irreversible when undeclared.
func (a Action) SideEffect() string {
	if a.SideEffectClass == "" {
		return atlas.SideEffectIrreversible
	}
	return a.SideEffectClass
}

// Tier returns a's risk tier, low when undeclared.
func (a Action) Tier() string {
	if a.RiskTier == "" {
		return atlas.RiskLow
	}
	return a.RiskTier
}

// rank orders risk tiers, low first; an unknown tier ranks highest.
func rank(tier string) int {
	if tier == "" {
		return 0
	}
	if i := slices.Index(atlas.RiskTiers(), tier); i >= 0 {
		return i
	}
	return len(atlas.RiskTiers())
}

package atlas

import "encoding/json"

// Manifest is an Atlas manifest (seed 000, "Complete Atlas Example"; the
// CARP/1.0 fields of seed 004 that the resolver hands out): what a steward
// publishes about a domain. Fields the resolver does not use yet are kept
// (Steward, Checkpoints) so that a manifest is validated as a whole.
type Manifest struct {
	AtlasVersion  string         `json:"atlas_version"` // "1.0"
	AtlasID       string         `json:"atlas_id"`      // e.g. com.acme.support
	Version       string         `json:"version"`       // full semver, e.g. 2.1.0
	Name          string         `json:"name"`
	Description   string         `json:"description,omitempty"`
	Domains       []string       `json:"domains,omitempty"` // what task.context_hints and scope.domains name
	Steward       *Steward       `json:"steward,omitempty"`
	Capabilities  []Capability   `json:"capabilities,omitempty"`
	Checkpoints   []Checkpoint   `json:"checkpoints,omitempty"`
	ContextBlocks []ContextBlock `json:"context_blocks,omitempty"`
	Policies      []Policy       `json:"policies,omitempty"`
	Actions       []Action       `json:"actions,omitempty"`
	// Approvals is the steward's policy for operator approvals (issue 16;
	// an extension of seed 000): when a governed action needs a
	// control-plane checkpoint beyond the mandatory triggers.
	Approvals *Approvals `json:"approvals,omitempty"`
}

// Side-effect classes of an action (issue 16): what running it changes.
// An action that declares none is taken to be irreversible.
const (
	SideEffectReadOnly     = "read_only"
	SideEffectReversible   = "reversible"
	SideEffectIrreversible = "irreversible"
)

// SideEffectClasses returns the classes, least consequential first.
func SideEffectClasses() []string {
	return []string{SideEffectReadOnly, SideEffectReversible, SideEffectIrreversible}
}

// Responses to a trust violation (Approvals.OnViolation): what the first
// violation on a boundary forces besides resetting it to untrusted.
const (
	OnViolationPerStep    = "per_step"            // every action touching the boundary needs its own approval (default)
	OnViolationInvalidate = "invalidate_envelope" // and the session's permits touching it are revoked
	OnViolationHalt       = "halt"                // and the workspace is suspended until an operator acts
)

// Approvals is the steward's approval policy (issue 16, seed 003): the
// risk tier a run may use before a capability-transition checkpoint, the
// tier from which every action is checkpointed, the policy-defined
// checkpoint boundaries (actions; the mode never waives these only), the
// paths and provider classes approved from the start, whether a run may
// ask for mode never, what a trust violation forces, and how long a
// permit lives.
type Approvals struct {
	BaselineRiskTier  string   `json:"baseline_risk_tier,omitempty"` // default critical: no capability-transition checkpoint
	HighRiskTier      string   `json:"high_risk_tier,omitempty"`     // default none
	CheckpointActions []string `json:"checkpoint_actions,omitempty"` // action patterns
	ApprovedPaths     []string `json:"approved_paths,omitempty"`     // path patterns: exact, path.Match globs, or dir/**
	ProviderClasses   []string `json:"provider_classes,omitempty"`
	AllowNever        bool     `json:"allow_never,omitempty"`
	OnViolation       string   `json:"on_violation,omitempty"`       // default per_step
	PermitTTLSeconds  int      `json:"permit_ttl_seconds,omitempty"` // default 3600
	MaxPermitUses     int      `json:"max_permit_uses,omitempty"`    // the most uses an operator may give a modified envelope; default 100
	TimeoutSeconds    int      `json:"timeout_seconds,omitempty"`    // a checkpoint's wait; 0 waits indefinitely; it times out to deny
}

// Steward is who publishes the atlas (seed 000). wacpd records it; access,
// delivery and notifications are the steward's service's, not wacpd's.
type Steward struct {
	ID            string          `json:"id"`
	Name          string          `json:"name,omitempty"`
	Contact       string          `json:"contact,omitempty"`
	Access        json.RawMessage `json:"access,omitempty"`
	Delivery      json.RawMessage `json:"delivery,omitempty"`
	Notifications json.RawMessage `json:"notifications,omitempty"`
}

// Capability is a named group of actions (patterns), which checkpoints
// unlock and lock and a request's scope may name.
type Capability struct {
	CapabilityID string   `json:"capability_id"`
	Name         string   `json:"name,omitempty"`
	Description  string   `json:"description,omitempty"`
	Actions      []string `json:"actions"`
}

// Inject modes of a context block (issue 15).
const (
	InjectAlways    = "always"     // in every resolution
	InjectOnMatch   = "on_match"   // when the goal or the hints match its keywords or domain
	InjectOnDemand  = "on_demand"  // when a checkpoint or the request names it
	InjectRiskBased = "risk_based" // when the declared risk tier is at least its min_risk_tier
)

// ContextBlock is context a steward publishes: handed out byte-exact, with
// its SHA-256, when its inject mode selects it.
type ContextBlock struct {
	ContextID      string   `json:"context_id"`
	Name           string   `json:"name,omitempty"`
	Domain         string   `json:"domain,omitempty"`
	ContentType    string   `json:"content_type,omitempty"` // markdown (default), json, yaml, text
	Content        string   `json:"content"`
	InjectMode     string   `json:"inject_mode,omitempty"` // default on_match
	Keywords       []string `json:"keywords,omitempty"`
	MinRiskTier    string   `json:"min_risk_tier,omitempty"` // risk_based
	Priority       int      `json:"priority,omitempty"`      // higher first
	TTLSeconds     int      `json:"ttl_seconds,omitempty"`   // default 300
	Classification string   `json:"classification,omitempty"`
	Tags           []string `json:"tags,omitempty"`
	Redact         []string `json:"redact,omitempty"` // regular expressions whose matches are redacted
	EvidenceRefs   []string `json:"evidence_refs,omitempty"`
}

// Risk tiers, lowest first.
const (
	RiskLow      = "low"
	RiskMedium   = "medium"
	RiskHigh     = "high"
	RiskCritical = "critical"
)

// RiskTiers returns the tiers, lowest first.
func RiskTiers() []string { return []string{RiskLow, RiskMedium, RiskHigh, RiskCritical} }

// Action is an action the atlas permits to be asked for: performed by a
// tool service, never by wacpd.
type Action struct {
	ActionID             string                `json:"action_id"`
	Name                 string                `json:"name,omitempty"`
	Description          string                `json:"description,omitempty"`
	RiskTier             string                `json:"risk_tier,omitempty"` // default low
	ParametersSchema     json.RawMessage       `json:"parameters_schema,omitempty"`
	ParameterConstraints []ParameterConstraint `json:"parameter_constraints,omitempty"`
	RequiresApproval     bool                  `json:"requires_approval,omitempty"`
	RateLimit            *RateLimit            `json:"rate_limit,omitempty"`
	TimeoutMS            int                   `json:"timeout_ms,omitempty"`
	Examples             json.RawMessage       `json:"examples,omitempty"`
	EvidenceRefs         []string              `json:"evidence_refs,omitempty"`
	// Approval facts (issue 16): what running the action changes, the
	// class of provider it calls, the parameters that name paths (a
	// string or a list of strings), and whether it hands work to another
	// agent (delegation needs its own trust treatment).
	SideEffectClass string   `json:"side_effect_class,omitempty"`
	ProviderClass   string   `json:"provider_class,omitempty"`
	PathParameters  []string `json:"path_parameters,omitempty"`
	Delegation      bool     `json:"delegation,omitempty"`
}

// ParameterConstraint is CARP's ParameterConstraint: a check of one
// parameter beyond its schema.
type ParameterConstraint struct {
	Parameter      string          `json:"parameter"`       // a top-level parameter name, or a JSON pointer
	ConstraintType string          `json:"constraint_type"` // enum, range, pattern, max_length, required, forbidden
	Value          json.RawMessage `json:"value,omitempty"`
	Message        string          `json:"message,omitempty"`
}

// Rate limit scopes (CARP RateLimit.scope).
const (
	ScopeAction  = "action"
	ScopeSession = "session"
	ScopeAgent   = "agent"
	ScopeGlobal  = "global"
)

// RateLimit is requests per window, counted on execute.
type RateLimit struct {
	Requests      int    `json:"requests"`
	WindowSeconds int    `json:"window_seconds"`
	Scope         string `json:"scope,omitempty"` // default action
}

// Policy types: the effects a policy rule has on the actions it covers,
// evaluated deny first, then requires_approval, rate_limit, budget, allow;
// whatever no allow covers is denied (default deny).
const (
	PolicyDeny             = "deny"
	PolicyRequiresApproval = "requires_approval"
	PolicyRateLimit        = "rate_limit"
	PolicyBudget           = "budget"
	PolicyAllow            = "allow"
	PolicyRedact           = "redact"
)

// Policy is a steward's rule over actions (patterns) or context.
type Policy struct {
	PolicyID     string   `json:"policy_id"`
	Name         string   `json:"name,omitempty"`
	Version      string   `json:"version,omitempty"`
	Type         string   `json:"type"`
	Actions      []string `json:"actions,omitempty"`      // patterns
	RiskTiers    []string `json:"risk_tiers,omitempty"`   // requires_approval: tiers that need it
	Capabilities []string `json:"capabilities,omitempty"` // allow: only within these capabilities
	Priority     int      `json:"priority,omitempty"`     // higher first, within its type
	Reason       string   `json:"reason,omitempty"`
	Remediation  string   `json:"remediation,omitempty"`
	// rate_limit
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// budget: at most MaxActions executions per session of the covered actions
	MaxActions int `json:"max_actions,omitempty"`
	// requires_approval
	Approvers              []Approver `json:"approvers,omitempty"`
	ApprovalTimeoutSeconds int        `json:"approval_timeout_seconds,omitempty"`
	// redact: regular expressions redacted from the context blocks named
	Contexts []string `json:"contexts,omitempty"`
	Patterns []string `json:"patterns,omitempty"`
}

// Approver is CARP's Approver.
type Approver struct {
	ID   string `json:"id"`
	Type string `json:"type"` // user, role, system
	Name string `json:"name,omitempty"`
}

// Checkpoint is a steward's checkpoint (seed 000). Issue 17 enforces them;
// here they are validated with the rest of the manifest.
type Checkpoint struct {
	CheckpointID       string          `json:"checkpoint_id"`
	Name               string          `json:"name,omitempty"`
	Trigger            Trigger         `json:"trigger"`
	Mode               string          `json:"mode,omitempty"` // blocking, advisory, observational
	Questions          []Question      `json:"questions,omitempty"`
	Guidance           json.RawMessage `json:"guidance,omitempty"`
	InjectContexts     []string        `json:"inject_contexts,omitempty"`
	UnlockCapabilities []string        `json:"unlock_capabilities,omitempty"`
	LockCapabilities   []string        `json:"lock_capabilities,omitempty"`
	AllowActions       []string        `json:"allow_actions,omitempty"`
	DenyActions        []string        `json:"deny_actions,omitempty"`
	ForceSyncTrace     bool            `json:"force_sync_trace,omitempty"`
	Priority           int             `json:"priority,omitempty"`
}

// Trigger is when a checkpoint fires (seed 000, "Checkpoint Triggers").
type Trigger struct {
	Type          string          `json:"type"`
	Patterns      []string        `json:"patterns,omitempty"` // action patterns, or keywords
	CaseSensitive bool            `json:"case_sensitive,omitempty"`
	MatchMode     string          `json:"match_mode,omitempty"` // any, all, phrase, regex
	MinTier       string          `json:"min_tier,omitempty"`
	CapabilityIDs []string        `json:"capability_ids,omitempty"`
	Seconds       int             `json:"seconds,omitempty"`
	Actions       int             `json:"actions,omitempty"`
	TriggerID     string          `json:"trigger_id,omitempty"`
	Params        json.RawMessage `json:"params,omitempty"`
}

// Question is a blocking checkpoint's question.
type Question struct {
	QuestionID   string          `json:"question_id"`
	Question     string          `json:"question"`
	ResponseType string          `json:"response_type"`
	Required     *bool           `json:"required,omitempty"`
	Hint         string          `json:"hint,omitempty"`
	Options      []string        `json:"options,omitempty"`
	Validation   *Validation     `json:"validation,omitempty"`
	OnInvalid    string          `json:"on_invalid,omitempty"`
	Schema       json.RawMessage `json:"schema,omitempty"`
}

// Validation is a question's answer validation.
type Validation struct {
	Pattern         string   `json:"pattern,omitempty"`
	MinLength       int      `json:"min_length,omitempty"`
	MaxLength       int      `json:"max_length,omitempty"`
	MustContain     []string `json:"must_contain,omitempty"`
	MustNotContain  []string `json:"must_not_contain,omitempty"`
	CustomValidator string   `json:"custom_validator,omitempty"`
}

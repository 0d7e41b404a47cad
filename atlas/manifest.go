package atlas

import (
	"cmp"
	"encoding/json"
	"slices"
)

// Manifest is an Atlas manifest (seed 000, "Complete Atlas Example"; the
// CARP/1.0 fields of seed 004 that the resolver hands out): what a steward
// publishes about a domain.
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
	// CheckpointConfig and CacheConfig: the built-in checkpoints, the
	// checkpoint budget and the evaluation caches' TTLs (seeds 000, 001).
	CheckpointConfig *CheckpointConfig `json:"checkpoint_config,omitempty"`
	CacheConfig      *CacheConfig      `json:"cache_config,omitempty"`
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

// TierAtLeast reports whether risk tier tier is min or above; an empty
// tier (either) is low.
func TierAtLeast(tier, min string) bool {
	t := RiskTiers()
	return slices.Index(t, cmp.Or(tier, RiskLow)) >= slices.Index(t, cmp.Or(min, RiskLow))
}

// Tier is a's risk tier: low when it declares none.
func (a Action) Tier() string { return cmp.Or(a.RiskTier, RiskLow) }

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

// Checkpoint is a steward's checkpoint (seed 000; enforced by package
// steward in the CARP resolver and execute path, issue 17).
type Checkpoint struct {
	CheckpointID       string     `json:"checkpoint_id"`
	Name               string     `json:"name,omitempty"`
	Trigger            Trigger    `json:"trigger"`
	Mode               string     `json:"mode,omitempty"` // blocking, advisory (default), observational
	Questions          []Question `json:"questions,omitempty"`
	Guidance           *Guidance  `json:"guidance,omitempty"`
	InjectContexts     []string   `json:"inject_contexts,omitempty"`
	UnlockCapabilities []string   `json:"unlock_capabilities,omitempty"`
	LockCapabilities   []string   `json:"lock_capabilities,omitempty"`
	AllowActions       []string   `json:"allow_actions,omitempty"`
	DenyActions        []string   `json:"deny_actions,omitempty"`
	// ForceSyncTrace is accepted and always holds: wacpd writes every
	// TRACE event in the commit of what it records.
	ForceSyncTrace bool `json:"force_sync_trace,omitempty"`
	// Priority orders the checkpoints that trigger together, highest
	// first; a steward checkpoint without one has DefaultCheckpointPriority.
	Priority *int `json:"priority,omitempty"`
}

// DefaultCheckpointPriority is a steward checkpoint's priority when it
// names none.
const DefaultCheckpointPriority = 500

// Checkpoint modes (seed 000).
const (
	ModeBlocking      = "blocking"      // the agent answers before the gated actions run
	ModeAdvisory      = "advisory"      // guidance, contexts and effects, nothing blocked
	ModeObservational = "observational" // TRACE only
)

// Guidance formats (seed 000).
const (
	GuidanceText              = "text"
	GuidanceMarkdown          = "markdown"
	GuidanceJSON              = "json"
	GuidanceSystemInstruction = "system_instruction"
)

// Guidance is a checkpoint's guidance block: injected into the session's
// resolutions from when the checkpoint takes effect until it expires.
type Guidance struct {
	Format   string `json:"format,omitempty"` // text (default), markdown, json, system_instruction
	Content  string `json:"content"`
	Priority int    `json:"priority,omitempty"` // higher first
	// Append adds the block to the session's guidance (default); false
	// replaces the guidance the same atlas's checkpoints gave before.
	Append *bool `json:"append,omitempty"`
	// ExpiresAfter removes the block when the checkpoint it names
	// triggers: a checkpoint_id of the atlas, or a trigger type
	// ("session_end"; "session-end" is read as it).
	ExpiresAfter string   `json:"expires_after,omitempty"`
	Labels       []string `json:"labels,omitempty"`
}

// Trigger is when a checkpoint fires (seed 000, "Checkpoint Triggers").
type Trigger struct {
	Type          string   `json:"type"`
	Patterns      []string `json:"patterns,omitempty"` // action patterns, or keywords
	CaseSensitive bool     `json:"case_sensitive,omitempty"`
	MatchMode     string   `json:"match_mode,omitempty"` // any (default), all, phrase, regex, fuzzy
	// Threshold is fuzzy matching's least similarity, in (0, 1]
	// (default 0.8): 1 - Levenshtein distance / the longer length.
	Threshold float64 `json:"threshold,omitempty"`
	// OncePerSession: a keyword checkpoint fires at most once a session.
	OncePerSession bool     `json:"once_per_session,omitempty"`
	MinTier        string   `json:"min_tier,omitempty"`
	CapabilityIDs  []string `json:"capability_ids,omitempty"`
	Seconds        int      `json:"seconds,omitempty"`
	Actions        int      `json:"actions,omitempty"`
	// TriggerID names a custom trigger's evaluator (registered in Go, or
	// the NATS service answering on Subject).
	TriggerID string          `json:"trigger_id,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Subject   string          `json:"subject,omitempty"`
}

// Question is a checkpoint's question to the agent.
type Question struct {
	QuestionID   string          `json:"question_id"`
	Question     string          `json:"question"`
	ResponseType string          `json:"response_type"`      // text, boolean, acknowledgment, choice, number, json
	Required     *bool           `json:"required,omitempty"` // default true
	Hint         string          `json:"hint,omitempty"`
	Options      []string        `json:"options,omitempty"` // choice
	Validation   *Validation     `json:"validation,omitempty"`
	OnInvalid    string          `json:"on_invalid,omitempty"` // retry (default), block, warn_and_continue, log_and_continue
	Schema       json.RawMessage `json:"schema,omitempty"`     // json: the answer's JSON Schema
	// Expected is the one answer that passes (wacpd's extension): a
	// boolean question of terms to accept says true.
	Expected json.RawMessage `json:"expected,omitempty"`
}

// Response types of a question (seed 000).
const (
	ResponseText           = "text"
	ResponseBoolean        = "boolean"
	ResponseAcknowledgment = "acknowledgment"
	ResponseChoice         = "choice"
	ResponseNumber         = "number"
	ResponseJSON           = "json"
)

// What an invalid answer does (seed 000, "Invalid Answer Actions").
const (
	OnInvalidRetry           = "retry"
	OnInvalidBlock           = "block"
	OnInvalidWarnAndContinue = "warn_and_continue"
	OnInvalidLogAndContinue  = "log_and_continue"
)

// Validation is a question's answer validation. Lengths count
// characters (Unicode code points); must_contain and must_not_contain
// compare case-insensitively; pattern is an RE2 regular expression the
// answer must match.
type Validation struct {
	Pattern        string   `json:"pattern,omitempty"`
	MinLength      int      `json:"min_length,omitempty"`
	MaxLength      int      `json:"max_length,omitempty"`
	MustContain    []string `json:"must_contain,omitempty"`
	MustNotContain []string `json:"must_not_contain,omitempty"`
	// Minimum and Maximum bound a number answer (wacpd's extension).
	Minimum *float64 `json:"minimum,omitempty"`
	Maximum *float64 `json:"maximum,omitempty"`
	// CustomValidator (a steward API callback) is refused at load: wacpd
	// calls no steward service to validate an answer.
	CustomValidator string `json:"custom_validator,omitempty"`
}

// CheckpointConfig is an atlas's checkpoint configuration (seeds 000 and
// 001, "Atlas-Level Configuration"): the built-in checkpoints, each
// advisory at its type's default priority unless it asks for
// confirmation, and the budget of the atlas's checkpoint evaluation.
type CheckpointConfig struct {
	SessionStart  *BuiltinCheckpoint `json:"session_start,omitempty"`
	KeywordMatch  *BuiltinKeywords   `json:"keyword_match,omitempty"`
	ActionPre     *BuiltinActions    `json:"action_pre,omitempty"`
	RiskThreshold *BuiltinCheckpoint `json:"risk_threshold,omitempty"`
	TimeInterval  *BuiltinCheckpoint `json:"time_interval,omitempty"`
	CountInterval *BuiltinCheckpoint `json:"count_interval,omitempty"`
	Budget        *CheckpointBudget  `json:"budget,omitempty"`
}

// BuiltinCheckpoint is one built-in checkpoint of checkpoint_config.
type BuiltinCheckpoint struct {
	Enabled        bool     `json:"enabled"`
	InjectContexts []string `json:"inject_contexts,omitempty"`
	MinTier        string   `json:"min_tier,omitempty"` // risk_threshold
	Seconds        int      `json:"seconds,omitempty"`  // time_interval
	Actions        int      `json:"actions,omitempty"`  // count_interval
	// RequireSyncTrace (require_sync in seed 001) is accepted and always
	// holds.
	RequireSyncTrace bool `json:"require_sync_trace,omitempty"`
	RequireSync      bool `json:"require_sync,omitempty"`
}

// BuiltinKeywords is checkpoint_config.keyword_match: keywords
// ("delete|remove": alternatives) mapped to the context blocks they
// inject.
type BuiltinKeywords struct {
	Enabled       bool                `json:"enabled"`
	Mappings      map[string][]string `json:"mappings,omitempty"`
	CaseSensitive bool                `json:"case_sensitive,omitempty"`
	MatchMode     string              `json:"match_mode,omitempty"`
}

// BuiltinActions is checkpoint_config.action_pre: action patterns mapped
// to what an execute of a matching action gets.
type BuiltinActions struct {
	Enabled  bool                     `json:"enabled"`
	Mappings map[string]BuiltinAction `json:"mappings,omitempty"`
}

// BuiltinAction is one action_pre mapping.
type BuiltinAction struct {
	InjectContexts []string `json:"inject_contexts,omitempty"`
	// RequirePolicyCheck raises the checkpoint's priority to 800 (seed
	// 001); wacpd checks the policies of every execute regardless.
	RequirePolicyCheck bool `json:"require_policy_check,omitempty"`
	// RequireConfirmation makes the checkpoint blocking, with one
	// acknowledgment question.
	RequireConfirmation bool `json:"require_confirmation,omitempty"`
}

// CheckpointBudget bounds an atlas's checkpoint evaluation (seed 000,
// "Checkpoint Budgets").
type CheckpointBudget struct {
	MaxCheckpointsPerInput  int `json:"max_checkpoints_per_input,omitempty"`
	MaxContextInjectionSize int `json:"max_context_injection_size,omitempty"` // bytes of guidance and injected context per resolution
	MaxCheckpointTimeMS     int `json:"max_checkpoint_time_ms,omitempty"`     // a custom evaluator's deadline
}

// CacheConfig is how long cached checkpoint evaluations live (seed 001,
// "TTL Configuration"); every cache is dropped when the atlases change.
type CacheConfig struct {
	ContextTTLSeconds int `json:"context_ttl_seconds,omitempty"`
	PolicyTTLSeconds  int `json:"policy_ttl_seconds,omitempty"`
	KeywordTTLSeconds int `json:"keyword_ttl_seconds,omitempty"`
}

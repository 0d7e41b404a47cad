// Package carp is CARP/1.0, the Context & Action Resolution Protocol (seed
// 004, issue 15): its messages exactly as the seed defines them, their
// validation, and the resolver that decides, from the loaded Atlas
// manifests, what context an agent may see and which actions it may take.
// It is a pure core: the engine stores resolutions and usage, the daemon
// serves the operations and forwards executions to tool services.
package carp

import (
	"encoding/json"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/steward"
)

// Version is the carp_version of every message.
const Version = "1.0"

// Operations.
const (
	OpResolve  = "resolve"
	OpExecute  = "execute"
	OpValidate = "validate"
	// OpRespond answers a steward checkpoint's questions (wacpd's
	// extension, issue 17; wire-v1 §6 names carp.respond).
	OpRespond = "respond"
)

// Request is CARPRequest (§3.1), and with ExecutionOptions the
// CARPActionRequest of execute (§4.1); validate takes the same shape as
// execute.
type Request struct {
	CARPVersion      string            `json:"carp_version"`
	RequestID        string            `json:"request_id"`
	Timestamp        string            `json:"timestamp"`
	Operation        string            `json:"operation"`
	Requester        Requester         `json:"requester"`
	Task             *Task             `json:"task,omitempty"`
	Action           *ActionSpec       `json:"action,omitempty"`
	Scope            *Scope            `json:"scope,omitempty"`
	ExecutionOptions *ExecutionOptions `json:"execution_options,omitempty"`
	Telemetry        *Telemetry        `json:"telemetry,omitempty"`
	// IdempotencyKey makes a repeated execute answer the first one's result
	// instead of running the action again (issue 15; an extension).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// ApprovalID names the checkpoint whose approval this execute runs
	// under (issue 16; an extension): the request must be the approved
	// one, canonically, or the approval is cancelled.
	ApprovalID string `json:"approval_id,omitempty"`
	// CheckpointResponse is a respond's answers (OpRespond only).
	CheckpointResponse *CheckpointResponse `json:"checkpoint_response,omitempty"`
}

// Requester is who asks: for wacpd a workspace's agent.
type Requester struct {
	AgentID   string            `json:"agent_id"`
	AgentType string            `json:"agent_type,omitempty"`
	SessionID string            `json:"session_id"`
	AuthToken string            `json:"auth_token,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// Task is what a resolution is for.
type Task struct {
	Goal         string           `json:"goal"`
	GoalHash     string           `json:"goal_hash,omitempty"`
	RiskTier     string           `json:"risk_tier,omitempty"`
	ContextHints []string         `json:"context_hints,omitempty"`
	Constraints  []TaskConstraint `json:"constraints,omitempty"`
	ParentTaskID string           `json:"parent_task_id,omitempty"`
}

// TaskConstraint is a requester's constraint on its task.
type TaskConstraint struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
}

// ActionSpec names the action of an execute or validate.
type ActionSpec struct {
	ActionID     string         `json:"action_id"`
	ActionType   string         `json:"action_type"`
	Parameters   map[string]any `json:"parameters"`
	ResolutionID string         `json:"resolution_id"`
}

// Scope limits a resolution.
type Scope struct {
	Atlases          []string `json:"atlases,omitempty"`
	Domains          []string `json:"domains,omitempty"`
	Actions          []string `json:"actions,omitempty"`
	MaxContextTokens int      `json:"max_context_tokens,omitempty"`
	MaxActions       int      `json:"max_actions,omitempty"`
}

// ExecutionOptions are an execute's options (§4.1).
type ExecutionOptions struct {
	TimeoutMS     int  `json:"timeout_ms,omitempty"`
	DryRun        bool `json:"dry_run,omitempty"`
	CaptureOutput bool `json:"capture_output,omitempty"`
	Sandbox       bool `json:"sandbox,omitempty"`
}

// Telemetry joins a request to an existing trace.
type Telemetry struct {
	TraceID      string   `json:"trace_id,omitempty"`
	ParentSpanID string   `json:"parent_span_id,omitempty"`
	SamplingRate *float64 `json:"sampling_rate,omitempty"`
}

// Resolution is CARPResolution (§3.2).
type Resolution struct {
	CARPVersion     string              `json:"carp_version"`
	RequestID       string              `json:"request_id"`
	ResolutionID    string              `json:"resolution_id"`
	Timestamp       string              `json:"timestamp"`
	Decision        Decision            `json:"decision"`
	ContextBlocks   []ContextBlock      `json:"context_blocks"`
	AllowedActions  []ActionPermission  `json:"allowed_actions"`
	DeniedActions   []ActionDenial      `json:"denied_actions"`
	PoliciesApplied []PolicyApplication `json:"policies_applied"`
	Evidence        []Evidence          `json:"evidence"`
	TTL             TTL                 `json:"ttl"`
	TelemetryLink   TelemetryLink       `json:"telemetry_link"`
	Warnings        []Warning           `json:"warnings,omitempty"`
	// Checkpoints are the steward checkpoints waiting for the agent
	// (pending: answer with carp.respond; blocked: for good), highest
	// priority first; Guidance the guidance blocks in effect (issue 17,
	// wacpd's extension of the resolution).
	Checkpoints []steward.Prompt      `json:"checkpoints,omitempty"`
	Guidance    []steward.GuidanceOut `json:"guidance,omitempty"`
}

// CheckpointResponse is a respond request's answers to a steward
// checkpoint: its id, its atlas (when the id is in several) and the
// answers by question_id.
type CheckpointResponse struct {
	CheckpointID string                     `json:"checkpoint_id"`
	AtlasID      string                     `json:"atlas_id,omitempty"`
	Answers      map[string]json.RawMessage `json:"answers"`
}

// CheckpointResult answers a respond whose answers passed the checkpoint
// (outcome passed, or warned / logged: an invalid answer whose
// on_invalid continues). Answers that do not pass are refused:
// CONSTRAINT_VIOLATED (retry) or ACTION_DENIED (blocked), with the
// results in error.details.
type CheckpointResult struct {
	CARPVersion   string                 `json:"carp_version"`
	RequestID     string                 `json:"request_id"`
	Timestamp     string                 `json:"timestamp"`
	CheckpointID  string                 `json:"checkpoint_id"`
	AtlasRef      string                 `json:"atlas_ref"`
	InstanceID    string                 `json:"instance_id"`
	Outcome       string                 `json:"outcome"`
	Results       []steward.AnswerResult `json:"results"`
	Warnings      []Warning              `json:"warnings,omitempty"`
	Effects       CheckpointEffects      `json:"effects"`
	Pending       []steward.Prompt       `json:"pending"`
	TelemetryLink TelemetryLink          `json:"telemetry_link"`
}

// CheckpointEffects is what a checkpoint that passed changed: the next
// resolution has it.
type CheckpointEffects struct {
	UnlockedCapabilities []string `json:"unlocked_capabilities"`
	LockedCapabilities   []string `json:"locked_capabilities"`
	InjectedContexts     []string `json:"injected_contexts"`
	AllowActions         []string `json:"allow_actions"`
	DenyActions          []string `json:"deny_actions"`
	Guidance             bool     `json:"guidance"`
}

// Decision types (§3.2).
const (
	DecisionAllow                = "allow"
	DecisionAllowWithConstraints = "allow_with_constraints"
	DecisionDeny                 = "deny"
	DecisionRequiresApproval     = "requires_approval"
	DecisionInsufficientContext  = "insufficient_context"
	DecisionPartial              = "partial"
)

// Decision is the CARPDecision union: Type says which fields it has.
type Decision struct {
	Type string `json:"type"`
	// allow_with_constraints
	Constraints []Constraint `json:"constraints,omitempty"`
	// deny, partial
	Reason string `json:"reason,omitempty"`
	// deny
	PolicyRefs  []string `json:"policy_refs,omitempty"`
	Remediation string   `json:"remediation,omitempty"`
	// requires_approval
	Approvers              []Approver `json:"approvers,omitempty"`
	ApprovalTimeoutSeconds int        `json:"approval_timeout_seconds,omitempty"`
	ApprovalURL            string     `json:"approval_url,omitempty"`
	// insufficient_context
	MissingDomains []string `json:"missing_domains,omitempty"`
	MissingAtlases []string `json:"missing_atlases,omitempty"`
	Suggestion     string   `json:"suggestion,omitempty"`
	// partial
	AllowedSubset []string `json:"allowed_subset,omitempty"`
	DeniedSubset  []string `json:"denied_subset,omitempty"`
}

// MarshalJSON writes exactly the fields of d's type, required ones even
// when empty (a deny's policy_refs, an insufficient_context's
// missing_domains).
func (d Decision) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": d.Type}
	switch d.Type {
	case DecisionAllowWithConstraints:
		m["constraints"] = nonNil(d.Constraints)
	case DecisionDeny:
		m["reason"], m["policy_refs"] = d.Reason, nonNil(d.PolicyRefs)
		if d.Remediation != "" {
			m["remediation"] = d.Remediation
		}
	case DecisionRequiresApproval:
		m["approvers"], m["approval_timeout_seconds"] = nonNil(d.Approvers), d.ApprovalTimeoutSeconds
		if d.ApprovalURL != "" {
			m["approval_url"] = d.ApprovalURL
		}
	case DecisionInsufficientContext:
		m["missing_domains"] = nonNil(d.MissingDomains)
		if len(d.MissingAtlases) > 0 {
			m["missing_atlases"] = d.MissingAtlases
		}
		if d.Suggestion != "" {
			m["suggestion"] = d.Suggestion
		}
	case DecisionPartial:
		m["reason"], m["allowed_subset"], m["denied_subset"] = d.Reason, nonNil(d.AllowedSubset), nonNil(d.DeniedSubset)
	}
	return json.Marshal(m)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Approver is who may approve (§3.2): the atlas's policy names them in
// the same form.
type Approver = atlas.Approver

// Constraint types (§3.2).
const (
	ConstraintRateLimit        = "rate_limit"
	ConstraintApprovalRequired = "approval_required"
	ConstraintAuditRequired    = "audit_required"
	ConstraintParameter        = "parameter_restriction"
	ConstraintCustom           = "custom"
)

// Constraint is a condition an allowed action runs under.
type Constraint struct {
	ID          string         `json:"id"`
	Type        string         `json:"type"`
	Description string         `json:"description"`
	Params      map[string]any `json:"params"`
	Enforcement string         `json:"enforcement"` // hard, soft
}

// ContextBlock is §3.3's.
type ContextBlock struct {
	BlockID        string      `json:"block_id"`
	ContentHash    string      `json:"content_hash"`
	AtlasRef       string      `json:"atlas_ref"`
	PackRef        string      `json:"pack_ref"`
	Domain         string      `json:"domain"`
	ContentType    string      `json:"content_type"`
	Content        string      `json:"content"`
	TokenCount     int         `json:"token_count"`
	TTLSeconds     int         `json:"ttl_seconds"`
	Classification string      `json:"classification,omitempty"`
	Redactions     []Redaction `json:"redactions,omitempty"`
	EvidenceRefs   []string    `json:"evidence_refs"`
	Tags           []string    `json:"tags"`
	Priority       int         `json:"priority"`
}

// Redaction records what was redacted from a block (§3.3).
type Redaction struct {
	OriginalHash   string   `json:"original_hash"`
	RedactedFields []string `json:"redacted_fields"`
	Reason         string   `json:"reason"`
	PolicyRef      string   `json:"policy_ref"`
}

// ActionPermission is §3.4's.
type ActionPermission struct {
	ActionID             string                `json:"action_id"`
	ActionType           string                `json:"action_type"`
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	Schema               json.RawMessage       `json:"schema"`
	Examples             json.RawMessage       `json:"examples,omitempty"`
	Constraints          []Constraint          `json:"constraints"`
	ParameterConstraints []ParameterConstraint `json:"parameter_constraints,omitempty"`
	RequiresApproval     bool                  `json:"requires_approval"`
	ApprovalType         string                `json:"approval_type,omitempty"`
	RiskTier             string                `json:"risk_tier"`
	RateLimit            *RateLimit            `json:"rate_limit,omitempty"`
	AtlasRef             string                `json:"atlas_ref"`
	EvidenceRefs         []string              `json:"evidence_refs"`
	ValidUntil           string                `json:"valid_until"`
}

// ParameterConstraint is §3.4's.
type ParameterConstraint struct {
	Parameter      string          `json:"parameter"`
	ConstraintType string          `json:"constraint_type"`
	Value          json.RawMessage `json:"value"`
	Message        string          `json:"message"`
}

// RateLimit is §3.4's, with the usage when the resolution was made.
type RateLimit struct {
	Requests      int    `json:"requests"`
	WindowSeconds int    `json:"window_seconds"`
	Scope         string `json:"scope"`
	CurrentUsage  *int   `json:"current_usage,omitempty"`
	ResetsAt      string `json:"resets_at,omitempty"`
}

// ActionDenial is §3.5's.
type ActionDenial struct {
	ActionType  string   `json:"action_type"`
	Reason      string   `json:"reason"`
	PolicyRefs  []string `json:"policy_refs"`
	Permanent   bool     `json:"permanent"`
	Remediation string   `json:"remediation,omitempty"`
	Alternative string   `json:"alternative,omitempty"`
}

// Evidence is §3.6's.
type Evidence struct {
	EvidenceID         string `json:"evidence_id"`
	Type               string `json:"type"`
	Source             string `json:"source"`
	SourceURL          string `json:"source_url,omitempty"`
	AtlasRef           string `json:"atlas_ref,omitempty"`
	ContentHash        string `json:"content_hash"`
	ContentPreview     string `json:"content_preview,omitempty"`
	FullContentRef     string `json:"full_content_ref,omitempty"`
	CreatedAt          string `json:"created_at"`
	Verified           bool   `json:"verified"`
	VerificationMethod string `json:"verification_method,omitempty"`
}

// PolicyApplication is §3.7's.
type PolicyApplication struct {
	PolicyID         string         `json:"policy_id"`
	PolicyName       string         `json:"policy_name"`
	PolicyVersion    string         `json:"policy_version"`
	AtlasRef         string         `json:"atlas_ref"`
	RulesEvaluated   int            `json:"rules_evaluated"`
	RulesMatched     int            `json:"rules_matched"`
	Effects          []PolicyEffect `json:"effects"`
	EvaluationTimeMS float64        `json:"evaluation_time_ms"`
}

// PolicyEffect is §3.7's.
type PolicyEffect struct {
	RuleID string `json:"rule_id"`
	Effect string `json:"effect"` // allow, deny, require_approval, redact, constrain
	Target string `json:"target"`
	Reason string `json:"reason,omitempty"`
}

// TTL bounds a resolution in time.
type TTL struct {
	ContextExpiresAt    string `json:"context_expires_at"`
	ResolutionExpiresAt string `json:"resolution_expires_at"`
	RefreshHintSeconds  int    `json:"refresh_hint_seconds,omitempty"`
}

// TelemetryLink ties a message to its TRACE events.
type TelemetryLink struct {
	TraceID       string `json:"trace_id"`
	SpanID        string `json:"span_id"`
	EventsEmitted int    `json:"events_emitted"`
}

// Warning is a non-fatal issue.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Execution statuses (§4.2).
const (
	StatusSuccess         = "success"
	StatusPartialSuccess  = "partial_success"
	StatusFailed          = "failed"
	StatusTimeout         = "timeout"
	StatusCancelled       = "cancelled"
	StatusPendingApproval = "pending_approval"
)

// ExecutionResult is CARPExecutionResult (§4.2).
type ExecutionResult struct {
	CARPVersion   string           `json:"carp_version"`
	RequestID     string           `json:"request_id"`
	ExecutionID   string           `json:"execution_id"`
	Timestamp     string           `json:"timestamp"`
	Status        string           `json:"status"`
	Result        *ExecutionOutput `json:"result,omitempty"`
	Error         *ExecutionError  `json:"error,omitempty"`
	Metrics       Metrics          `json:"metrics"`
	SideEffects   []SideEffect     `json:"side_effects,omitempty"`
	TelemetryLink TelemetryLink    `json:"telemetry_link"`
	// Approval is the checkpoint that holds (pending_approval) or held the
	// execution (issue 16; an extension).
	Approval *approval.Ref `json:"approval,omitempty"`
}

// ExecutionOutput is an execution's result.
type ExecutionOutput struct {
	Output     json.RawMessage `json:"output"`
	OutputHash string          `json:"output_hash"`
	OutputType string          `json:"output_type"`
}

// ExecutionError is an execution's error.
type ExecutionError struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details,omitempty"`
	Retriable bool           `json:"retriable"`
}

// Metrics of an execution.
type Metrics struct {
	DurationMS float64 `json:"duration_ms"`
	TokensUsed *int    `json:"tokens_used,omitempty"`
	APICalls   *int    `json:"api_calls,omitempty"`
}

// SideEffect is what an execution changed.
type SideEffect struct {
	Type       string         `json:"type"`
	Target     string         `json:"target"`
	Reversible bool           `json:"reversible"`
	Details    map[string]any `json:"details,omitempty"`
}

// ValidationResult is CARPValidationResult: the seed names it and not its
// fields; wacpd's is the execute's checks without the effect.
type ValidationResult struct {
	CARPVersion   string        `json:"carp_version"`
	RequestID     string        `json:"request_id"`
	Timestamp     string        `json:"timestamp"`
	Valid         bool          `json:"valid"`
	Violations    []Violation   `json:"violations"`
	TelemetryLink TelemetryLink `json:"telemetry_link"`
}

// Violation is one failed check of a validate: its CARP error code, what
// failed, and where (a parameter path).
type Violation struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Path    string `json:"path,omitempty"`
}

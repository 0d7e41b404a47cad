package approval

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Pending is checkpoint_pending (seed 003; operator_interface_spec
// §18.7): the nine fields an operator is shown before an approval is
// recorded, all produced here, none empty. Clients render them verbatim.
type Pending struct {
	CheckpointType          string `json:"checkpoint_type"`
	TriggerDescription      string `json:"trigger_description"`
	CanonicalRequestSummary string `json:"canonical_request_summary"`
	ScopeDelta              string `json:"scope_delta"`
	RiskClassification      string `json:"risk_classification"`
	SideEffectClass         string `json:"side_effect_class"`
	PolicyBasis             string `json:"policy_basis"`
	AuthorizationStatement  string `json:"authorization_statement"`
	TrustState              string `json:"trust_state"`
}

// Fields returns p's fields as (name, value) pairs, in the seed's order.
func (p Pending) Fields() [][2]string {
	return [][2]string{
		{"checkpoint_type", p.CheckpointType},
		{"trigger_description", p.TriggerDescription},
		{"canonical_request_summary", p.CanonicalRequestSummary},
		{"scope_delta", p.ScopeDelta},
		{"risk_classification", p.RiskClassification},
		{"side_effect_class", p.SideEffectClass},
		{"policy_basis", p.PolicyBasis},
		{"authorization_statement", p.AuthorizationStatement},
		{"trust_state", p.TrustState},
	}
}

// Proposal is the envelope an approval would grant: the paths (patterns)
// it covers, how many uses, for how long. An operator's modify changes it
// (the gate subject's payload).
type Proposal struct {
	Paths      []string `json:"paths"`
	Uses       int      `json:"uses"`
	TTLSeconds int      `json:"ttl_seconds"`
}

// Checkpoint statuses.
const (
	StatusPending   = "pending"
	StatusApproved  = "approved"
	StatusDenied    = "denied"
	StatusCancelled = "cancelled" // the request came back with other arguments (arguments_mutated)
)

// Checkpoint is a control-plane checkpoint: the request it holds, why it
// fired, what the operator is shown, and how it ended.
type Checkpoint struct {
	ApprovalID      string          `json:"approval_id"` // the highway gate's id
	ExecutionID     string          `json:"execution_id"`
	Session         string          `json:"session"`
	Agent           string          `json:"agent"`
	Tool            string          `json:"tool"`
	Version         string          `json:"canonicalization_version"`
	Digest          string          `json:"digest"`
	Form            json.RawMessage `json:"canonical_request"`
	Paths           []string        `json:"paths"`
	RiskTier        string          `json:"risk_tier"`
	SideEffectClass string          `json:"side_effect_class"`
	ProviderClass   string          `json:"provider_class,omitempty"`
	Atlas           string          `json:"atlas"`
	PolicyVersion   string          `json:"policy_version"`
	Mode            Mode            `json:"mode"`
	Triggers        []Trigger       `json:"triggers"`
	Delta           Delta           `json:"scope_delta"`
	Trust           []BoundaryTrust `json:"trust_snapshot"`
	Pending         Pending         `json:"checkpoint_pending"`
	Proposal        Proposal        `json:"payload"`
	CreatedAt       time.Time       `json:"created_at"`
	Status          string          `json:"status"`
	Outcome         Outcome         `json:"outcome,omitempty"`
	PermitID        string          `json:"permit_id,omitempty"`
	DecidedBy       string          `json:"decided_by,omitempty"`
	DecidedAt       *time.Time      `json:"decided_at,omitempty"`
	Reason          string          `json:"reason,omitempty"`
}

// Irreversible reports whether approving cp cannot be undone: its action's
// side-effect class is irreversible.
func (cp Checkpoint) Irreversible() bool { return cp.SideEffectClass == "irreversible" }

// NewCheckpoint returns the checkpoint for in's request, which d decided
// needs one, held for execution x of agent.
func NewCheckpoint(in Input, d Decision, execution, agent string) Checkpoint {
	c, a, p := in.Request, in.Action, in.Policy
	paths := c.Paths(a.PathParameters)
	cp := Checkpoint{ExecutionID: execution, Session: c.Context.Session, Agent: agent, Tool: c.Tool,
		Version: c.Version, Digest: c.Digest, Form: c.Form, Paths: nonNil(paths), RiskTier: a.Tier(),
		SideEffectClass: a.SideEffect(), ProviderClass: a.ProviderClass, Atlas: p.Atlas, PolicyVersion: p.Version,
		Mode: d.Mode, Triggers: d.Triggers, Delta: d.Delta, Trust: in.Trust.Snapshot(d.Boundaries),
		Proposal:  Proposal{Paths: nonNil(paths), Uses: 1, TTLSeconds: int(p.PermitTTL / time.Second)},
		CreatedAt: in.Now, Status: StatusPending}
	cp.Pending = present(cp, in.Envelope, p)
	return cp
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// present writes the nine fields of cp.
func present(cp Checkpoint, env Envelope, p Policy) Pending {
	var kinds, descs []string
	for _, t := range cp.Triggers {
		kinds = append(kinds, t.Kind)
		d := t.Description
		if !t.Mandatory {
			d += " (policy-defined)"
		}
		descs = append(descs, d)
	}
	approved := p.BaselineTier
	args := string(argumentsOf(cp.Form))
	if utf8.RuneCountInString(args) > 240 {
		args = string([]rune(args)[:240]) + "…"
	}
	reversibility := map[string]string{
		"read_only":    "read_only: running it changes nothing",
		"reversible":   "reversible: what it changes can be undone",
		"irreversible": "irreversible: what it changes cannot be undone; approving needs a second confirmation",
	}[cp.SideEffectClass]
	var trust []string
	for _, b := range cp.Trust {
		s := b.Boundary + " " + b.State
		if b.State == Untrusted {
			s += fmt.Sprintf(" since %s (%s, %d violations)", b.Since, b.Reason, b.Violations)
		}
		trust = append(trust, s)
	}
	scope := "exactly this request (canonical digest " + cp.Digest + "), once"
	if len(cp.Paths) > 0 {
		scope += ", touching " + strings.Join(cp.Paths, ", ")
	}
	return Pending{
		CheckpointType:          cp.Triggers[0].Kind,
		TriggerDescription:      strings.Join(descs, "; "),
		CanonicalRequestSummary: fmt.Sprintf("%s %s by agent %s in session %s; digest %s (%s)", cp.Tool, args, cp.Agent, cp.Session, cp.Digest, cp.Version),
		ScopeDelta:              cp.Delta.String(),
		RiskClassification:      fmt.Sprintf("%s (the policy's baseline tier is %s; triggers: %s)", cp.RiskTier, approved, strings.Join(kinds, ", ")),
		SideEffectClass:         reversibility,
		PolicyBasis:             fmt.Sprintf("atlas %s, policy version %s, checkpoint mode %s", cp.Atlas, cp.PolicyVersion, cp.Mode),
		AuthorizationStatement: fmt.Sprintf("Approving lets agent %s in session %s run %s for %s, within %s, under policy version %s; any other arguments, paths or policy need a new approval.",
			cp.Agent, cp.Session, cp.Tool, scope, time.Duration(cp.Proposal.TTLSeconds)*time.Second, cp.PolicyVersion),
		TrustState: strings.Join(trust, "; "),
	}
}

// argumentsOf returns the arguments member of a canonical form.
func argumentsOf(form json.RawMessage) json.RawMessage {
	var v struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(form, &v) != nil || len(v.Arguments) == 0 {
		return json.RawMessage("{}")
	}
	return v.Arguments
}

// Ref is what an agent is told of a checkpoint that holds its request:
// where it stands, and the nine fields its operator sees.
type Ref struct {
	ApprovalID              string  `json:"approval_id"`
	ExecutionID             string  `json:"execution_id"`
	Status                  string  `json:"status"`
	Outcome                 Outcome `json:"outcome,omitempty"`
	PermitID                string  `json:"permit_id,omitempty"`
	Digest                  string  `json:"digest"`
	CanonicalizationVersion string  `json:"canonicalization_version"`
	CheckpointPending       Pending `json:"checkpoint_pending"`
	DecidedBy               string  `json:"decided_by,omitempty"`
	Reason                  string  `json:"reason,omitempty"`
}

// Ref returns cp as an agent is told of it.
func (cp Checkpoint) Ref() Ref {
	return Ref{ApprovalID: cp.ApprovalID, ExecutionID: cp.ExecutionID, Status: cp.Status, Outcome: cp.Outcome,
		PermitID: cp.PermitID, Digest: cp.Digest, CanonicalizationVersion: cp.Version, CheckpointPending: cp.Pending,
		DecidedBy: cp.DecidedBy, Reason: cp.Reason}
}

// TRACE event types of approvals (issue 16): in the session's TRACE log,
// in the commit of what they record.
const (
	TraceCheckpointOpened = "approval.checkpoint_opened"
	TraceDecided          = "approval.decided"
	TracePermitIssued     = "approval.permit_issued"
	TracePermitUsed       = "approval.permit_used"
	TracePermitRevoked    = "approval.permit_revoked"
	TraceTrust            = "approval.trust"
	TraceModeChanged      = "approval.mode_changed"
)

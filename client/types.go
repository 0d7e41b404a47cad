package client

import (
	"encoding/json"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Request bodies defined by the record packages.
type (
	// CheckpointRequest is the body of a checkpoint call.
	CheckpointRequest = checkpointchain.Request
	// EnvelopeRequest is the body of an envelope call.
	EnvelopeRequest = envelope.Request
	// SignalRequest is the body of a signal call.
	SignalRequest = signal.Request
	// CreateRequest is the body of a workspace.create call.
	CreateRequest = workspace.CreateRequest
)

// Info is the reply of system.info.
type Info struct {
	Version         string       `json:"version"`
	RootWorkspace   string       `json:"root_workspace"`
	Taxonomy        TaxonomyInfo `json:"taxonomy"`
	HashAlgorithm   string       `json:"hash_algorithm"`
	ProtocolVersion string       `json:"protocol_version"`
	// PublicKey verifies the daemon's signed tree heads (note verifier key);
	// Origin is their first line.
	PublicKey string `json:"public_key"`
	Origin    string `json:"origin"`
}

// TaxonomyInfo identifies the daemon's taxonomy.
type TaxonomyInfo struct {
	ID       string `json:"id"`
	Version  string `json:"version"`
	Checksum string `json:"checksum"`
}

// Created is the reply of workspace.create: the new workspace and the
// bearer token of its agent.
type Created struct {
	Workspace *workspace.Workspace `json:"workspace"`
	Token     string               `json:"token"`
}

// IntegrateRequest is the body of an integrate call.
type IntegrateRequest struct {
	Workspace string          `json:"workspace"`
	Decision  string          `json:"decision"`           // accept, revise or reject
	Strategy  string          `json:"strategy,omitempty"` // direct (default), layered or evaluated
	Mode      string          `json:"mode,omitempty"`     // normal (default) or salvage
	Result    json.RawMessage `json:"result,omitempty"`
	// Conflicts are the conflicts the coordinator's merge detected.
	Conflicts []workspace.Conflict `json:"conflicts,omitempty"`
}

// IntegrateResult is the reply of an integrate call.
type IntegrateResult struct {
	Workspace  *workspace.Workspace `json:"workspace"`
	Checkpoint string               `json:"checkpoint"` // the checkpoint integrated
	Outcome    string               `json:"outcome"`    // closed, failed, salvaged or conflicted
}

// ResolveRequest is the body of a conflict.resolve call.
type ResolveRequest struct {
	Workspace          string `json:"workspace"`
	ResolutionStrategy string `json:"resolution_strategy"` // coordinator_resolve or agent_rework
	Resolution         string `json:"resolution,omitempty"`
}

// TrailPage is one page of trail entries; Next, when set, is the After of
// the next page.
type TrailPage struct {
	Entries []trail.Entry `json:"entries"`
	Next    *string       `json:"next"`
}

// TrailQuery selects entries of the global trail (audit.trail.read). Zero
// fields do not filter.
type TrailQuery struct {
	After     string          `json:"after,omitempty"`
	Limit     int             `json:"limit,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
	EventType trail.EventType `json:"event_type,omitempty"`
	Actor     string          `json:"actor,omitempty"`
	Since     string          `json:"since,omitempty"` // RFC 3339, inclusive
	Until     string          `json:"until,omitempty"` // RFC 3339, exclusive
	// Body selects entries whose top-level body fields have these values.
	Body map[string]string `json:"body,omitempty"`
}

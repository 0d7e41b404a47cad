package wire

import "github.com/wacpd/wacpd/approval"

// Operator approvals (issue 16): an agent's view of a checkpoint that
// holds its request, and an operator's of a session's approvals.

// ApprovalStatusRequest is the body of carp.approval: the checkpoint
// (approval_id, from result.approval of a pending_approval execute) and
// how long to wait for its decision (a Go duration up to MaxWait; "" or
// 0 answers at once).
type ApprovalStatusRequest struct {
	ApprovalID string `json:"approval_id"`
	Wait       string `json:"wait,omitempty"`
}

// ApprovalsRequest is the body of highway.approvals: one session (a
// workspace id), or every session when empty.
type ApprovalsRequest struct {
	Workspace string `json:"workspace,omitempty"`
}

// Approvals is the reply of highway.approvals.
type Approvals struct {
	Sessions []ApprovalState `json:"sessions"`
}

// ApprovalState is a session's approvals: its envelope (mode, what its
// approvals cover), the trust of each boundary with an event and the
// trust log, its permits with their state, its checkpoints.
type ApprovalState struct {
	Session     string                   `json:"session"`
	Envelope    approval.Envelope        `json:"envelope"`
	Trust       []approval.BoundaryTrust `json:"trust"`
	TrustLog    []approval.TrustEvent    `json:"trust_log"`
	Permits     []PermitView             `json:"permits"`
	Checkpoints []approval.Checkpoint    `json:"checkpoints"`
}

// PermitView is a permit with its state when it was read (active, used,
// expired, revoked, cancelled).
type PermitView struct {
	approval.Permit
	Status string `json:"status"`
}

// ApprovalModeRequest is the body of highway.approval.mode: session
// Workspace's checkpoint mode (always, policy, never).
type ApprovalModeRequest struct {
	Workspace string `json:"workspace"`
	Mode      string `json:"mode"`
	Reason    string `json:"reason,omitempty"`
}

// PermitRevokeRequest is the body of highway.permit.revoke.
type PermitRevokeRequest struct {
	PermitID string `json:"permit_id"`
	Reason   string `json:"reason,omitempty"`
}

// TrustRestoreRequest is the body of highway.trust.restore: boundary
// (tool:<action>, path:<path>, provider:<class>, workflow:<atlas>) of
// session Workspace is trusted again.
type TrustRestoreRequest struct {
	Workspace string `json:"workspace"`
	Boundary  string `json:"boundary"`
	Reason    string `json:"reason,omitempty"`
}

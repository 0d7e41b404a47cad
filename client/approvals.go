package client

import (
	"context"
	"time"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/wire"
)

// Operator approvals (issue 16).

// CarpApproval returns where checkpoint id, which holds one of the
// agent's executes, stands; with wait > 0 it waits up to wait (at most
// wire.MaxWait) for its decision.
func (c *Client) CarpApproval(ctx context.Context, id string, wait time.Duration) (approval.Ref, error) {
	var out approval.Ref
	req := wire.ApprovalStatusRequest{ApprovalID: id}
	if wait > 0 {
		req.Wait = wait.String()
	}
	err := c.call(ctx, c.agent("carp.approval"), req, &out, wait)
	return out, err
}

// Approvals returns session ws's approvals (every session's for "").
func (c *Client) Approvals(ctx context.Context, ws string) (wire.Approvals, error) {
	var out wire.Approvals
	err := c.call(ctx, wire.Subject("highway.approvals"), wire.ApprovalsRequest{Workspace: ws}, &out, 0)
	return out, err
}

// SetApprovalMode sets session ws's checkpoint mode (always, policy,
// never).
func (c *Client) SetApprovalMode(ctx context.Context, ws, mode, reason string) (approval.Envelope, error) {
	var out approval.Envelope
	err := c.call(ctx, wire.Subject("highway.approval.mode"), wire.ApprovalModeRequest{Workspace: ws, Mode: mode, Reason: reason}, &out, 0)
	return out, err
}

// RevokePermit revokes permit id, effective at once.
func (c *Client) RevokePermit(ctx context.Context, id, reason string) (approval.Permit, error) {
	var out approval.Permit
	err := c.call(ctx, wire.Subject("highway.permit.revoke"), wire.PermitRevokeRequest{PermitID: id, Reason: reason}, &out, 0)
	return out, err
}

// RestoreTrust makes boundary of session ws trusted again.
func (c *Client) RestoreTrust(ctx context.Context, ws, boundary, reason string) (approval.BoundaryTrust, error) {
	var out approval.BoundaryTrust
	err := c.call(ctx, wire.Subject("highway.trust.restore"), wire.TrustRestoreRequest{Workspace: ws, Boundary: boundary, Reason: reason}, &out, 0)
	return out, err
}

// Resolve answers a gate with the whole request: a checkpoint's outcome
// and the second confirmation of an irreversible one (ResolveGate is the
// short form).
func (c *Client) Resolve(ctx context.Context, req highway.ResolveRequest) (highway.Gate, error) {
	var out highway.Gate
	err := c.call(ctx, wire.Subject("highway.resolve"), req, &out, 0)
	return out, err
}

package daemon

import (
	"context"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// Operator approvals (issue 16): the agent's view of a checkpoint that
// holds its execute, and the operators' of a session's approvals.

// carpApproval answers where an agent's checkpoint stands, waiting up to
// wait for its decision (the wait gives its request slot back, as
// inbox.next's does).
func (r *Daemon) carpApproval(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.ApprovalStatusRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.ApprovalID == "" {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "approval_id is required")
	}
	wait, err := parseWait(req.Wait)
	if err != nil {
		return nil, err
	}
	ref, err := r.eng.ApprovalStatus(ctx, c.ws, req.ApprovalID, 0)
	if err != nil || ref.Status != "pending" || wait == 0 {
		return ref, err
	}
	if c.t != nil {
		if err := c.t.park(); err != nil {
			return nil, err
		}
	}
	return r.eng.ApprovalStatus(ctx, c.ws, req.ApprovalID, wait)
}

func (r *Daemon) highwayApprovals(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.ApprovalsRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return wire.Approvals{Sessions: r.eng.Approvals(ctx, req.Workspace)}, nil
}

func (r *Daemon) highwayApprovalMode(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.ApprovalModeRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.SetApprovalMode(ctx, c.p.Name, req)
}

func (r *Daemon) highwayPermitRevoke(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.PermitRevokeRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.RevokePermit(ctx, c.p.Name, req)
}

func (r *Daemon) highwayTrustRestore(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TrustRestoreRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.RestoreTrust(ctx, c.p.Name, req)
}

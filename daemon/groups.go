package daemon

import (
	"context"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// visibilityGrant makes a workspace visible to another for the
// coordinator or a delegate over the grantee (WACP Workspace §8).
func (r *Daemon) visibilityGrant(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.VisibilityGrantRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.ID == "" {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "id is required")
	}
	return r.eng.GrantVisibility(ctx, c.ws, req.ID, req.Target, req.Reason)
}

// workspacePriority changes one workspace's priority (WACP Workspace §4).
func (r *Daemon) workspacePriority(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.PriorityRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.ID == "" {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "id is required")
	}
	return r.eng.SetPriority(ctx, c.ws, req.ID, req.Priority)
}

// groupAbort aborts a group's workspaces for the coordinator (WACP
// Workspace §9).
func (r *Daemon) groupAbort(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.GroupAbortRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.BatchAbort(ctx, c.ws, req.Group, req.Reason)
}

// groupPriority changes a group's priority for the coordinator.
func (r *Daemon) groupPriority(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.GroupPriorityRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.BatchPriority(ctx, c.ws, req.Group, req.Priority)
}

package daemon

import (
	"context"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// decodeBudget decodes a workspace.budget body: an id and a budget.
func decodeBudget(body []byte) (wire.BudgetRequest, error) {
	var req wire.BudgetRequest
	if err := runtime.Decode(body, &req); err != nil {
		return req, err
	}
	if req.ID == "" || req.Budget == nil {
		return req, runtime.Refuse(wire.CodeInvalidStructure, "id and budget are required")
	}
	return req, nil
}

// workspaceBudget raises a workspace's budget for the coordinator or a
// delegate over it (WACP Workspace §6, budget modification).
func (r *Daemon) workspaceBudget(ctx context.Context, c caller, body []byte) (any, error) {
	req, err := decodeBudget(body)
	if err != nil {
		return nil, err
	}
	return r.eng.ModifyBudget(ctx, c.ws, req)
}

// highwayBudget raises a workspace's budget for a person with
// modify_budget (own workspaces) or modify_budget_any.
func (r *Daemon) highwayBudget(ctx context.Context, c caller, body []byte) (any, error) {
	req, err := decodeBudget(body)
	if err != nil {
		return nil, err
	}
	return r.eng.UserModifyBudget(ctx, c.p.Name, req)
}

package client

import (
	"context"

	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// ModifyBudget raises the limits b names of workspace id's budget (the
// coordinator's token, or a delegate's over its subtree): additive only,
// in idle, active or blocked (WACP Workspace §6).
func (c *Client) ModifyBudget(ctx context.Context, id string, b *workspace.Budget) (*workspace.Workspace, error) {
	var out workspace.Workspace
	if err := c.call(ctx, c.agent("workspace.budget"), wire.BudgetRequest{ID: id, Budget: b}, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// PersonModifyBudget raises the limits b names of workspace id's budget as
// a person (modify_budget for the user's own workspaces,
// modify_budget_any).
func (c *Client) PersonModifyBudget(ctx context.Context, id string, b *workspace.Budget) (*workspace.Workspace, error) {
	return c.person(ctx, wire.Subject("highway.workspace.budget"), wire.BudgetRequest{ID: id, Budget: b})
}

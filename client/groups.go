package client

import (
	"context"

	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Batch is the reply of group.abort and group.priority.
type Batch = wire.Batch

// GrantVisibility makes target visible to workspace id (the coordinator's
// token, or a delegate's over id), for reason (WACP Workspace §8).
func (c *Client) GrantVisibility(ctx context.Context, id, target, reason string) (*workspace.Workspace, error) {
	var out workspace.Workspace
	req := wire.VisibilityGrantRequest{ID: id, Target: target, Reason: reason}
	if err := c.call(ctx, c.agent("workspace.visibility.grant"), req, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetPriority changes workspace id's priority (active or blocked only).
func (c *Client) SetPriority(ctx context.Context, id, priority string) (*workspace.Workspace, error) {
	var out workspace.Workspace
	if err := c.call(ctx, c.agent("workspace.priority"), wire.PriorityRequest{ID: id, Priority: priority}, &out, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

// AbortGroup aborts every non-terminal workspace of group (the
// coordinator's token).
func (c *Client) AbortGroup(ctx context.Context, group, reason string) (Batch, error) {
	var out Batch
	err := c.call(ctx, c.agent("group.abort"), wire.GroupAbortRequest{Group: group, Reason: reason}, &out, 0)
	return out, err
}

// SetGroupPriority changes the priority of group's active and blocked
// workspaces (the coordinator's token).
func (c *Client) SetGroupPriority(ctx context.Context, group, priority string) (Batch, error) {
	var out Batch
	err := c.call(ctx, c.agent("group.priority"), wire.GroupPriorityRequest{Group: group, Priority: priority}, &out, 0)
	return out, err
}

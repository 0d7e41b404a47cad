package client

import (
	"context"

	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// A person's own actions, with a user token (wacp.v1.highway.workspace.*,
// highway.user.state): each needs the user's capability for it, and for an
// _own one that the user owns the workspace; a denial is capability_denied.

// PersonCreateWorkspace creates a workspace as a person: owned by the user
// (create_workspace) or by req.Owner (create_workspace_any), its
// originator the user. The reply carries the agent's token, shown once.
func (c *Client) PersonCreateWorkspace(ctx context.Context, req CreateRequest) (Created, error) {
	var out Created
	err := c.call(ctx, wire.Subject("highway.workspace.create"), req, &out, 0)
	return out, err
}

// PersonAbort aborts workspace id as a person (abort_own, abort_any):
// reason aborted_by_human; the cascade stops at other owners' workspaces,
// which move under the root.
func (c *Client) PersonAbort(ctx context.Context, id, reason string) (*workspace.Workspace, error) {
	return c.person(ctx, wire.Subject("highway.workspace.abort"), wire.IDRequest{ID: id, Reason: reason})
}

// PersonSuspend suspends workspace id as a person (suspend_own, suspend_any).
func (c *Client) PersonSuspend(ctx context.Context, id, reason string) (*workspace.Workspace, error) {
	return c.person(ctx, wire.Subject("highway.workspace.suspend"), wire.IDRequest{ID: id, Reason: reason})
}

// PersonResume resumes workspace id as a person (suspend_own, suspend_any).
func (c *Client) PersonResume(ctx context.Context, id string) (*workspace.Workspace, error) {
	return c.person(ctx, wire.Subject("highway.workspace.resume"), wire.IDRequest{ID: id})
}

// PersonTransfer gives workspace id to user owner as a person
// (transfer_ownership).
func (c *Client) PersonTransfer(ctx context.Context, id, owner, reason string) (*workspace.Workspace, error) {
	return c.person(ctx, wire.Subject("highway.workspace.transfer"), wire.TransferRequest{ID: id, Owner: owner, Reason: reason})
}

// PersonSetUserState deactivates (state deactivated) or reactivates (state
// active) a user as a person (deactivate_user).
func (c *Client) PersonSetUserState(ctx context.Context, req wire.UserStateRequest) (user.User, error) {
	var out user.User
	err := c.call(ctx, wire.Subject("highway.user.state"), req, &out, 0)
	return out, err
}

func (c *Client) person(ctx context.Context, subject string, req any) (*workspace.Workspace, error) {
	var w workspace.Workspace
	if err := c.call(ctx, subject, req, &w, 0); err != nil {
		return nil, err
	}
	return &w, nil
}

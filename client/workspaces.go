package client

import (
	"context"

	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// CreateWorkspace creates a workspace (coordinator or delegate). The reply
// holds the new agent's token: hand it to the agent, it is not shown again.
func (c *Client) CreateWorkspace(ctx context.Context, req CreateRequest) (Created, error) {
	var out Created
	err := c.call(ctx, c.agent("workspace.create"), req, &out, 0)
	return out, err
}

// GetWorkspace returns workspace id's record; id "" is the client's own.
func (c *Client) GetWorkspace(ctx context.Context, id string) (*workspace.Workspace, error) {
	var w workspace.Workspace
	if err := c.call(ctx, c.agent("workspace.get"), wire.IDRequest{ID: id}, &w, 0); err != nil {
		return nil, err
	}
	return &w, nil
}

// ListWorkspaces lists workspaces (coordinator), filtered by parent and
// state when they are set.
func (c *Client) ListWorkspaces(ctx context.Context, parent string, state workspace.State) ([]*workspace.Workspace, error) {
	// The daemon pages (by count and by bytes): follow next to the end.
	var out []*workspace.Workspace
	after := ""
	for {
		req := wire.ListRequest{Parent: parent, State: state, After: after}
		var reply wire.WorkspacePage
		if err := c.call(ctx, c.agent("workspace.list"), req, &reply, 0); err != nil {
			return out, err
		}
		out = append(out, reply.Workspaces...)
		if reply.Next == nil || len(reply.Workspaces) == 0 {
			return out, nil
		}
		after = *reply.Next
	}
}

// Abort aborts workspace id and its subtree.
func (c *Client) Abort(ctx context.Context, id, reason string) (*workspace.Workspace, error) {
	return c.workspaceOp(ctx, "workspace.abort", wire.IDRequest{ID: id, Reason: reason})
}

// Suspend suspends workspace id.
func (c *Client) Suspend(ctx context.Context, id, reason string) (*workspace.Workspace, error) {
	return c.workspaceOp(ctx, "workspace.suspend", wire.IDRequest{ID: id, Reason: reason})
}

// Resume resumes suspended workspace id; reason is recorded nowhere by
// this version of the daemon and may be "".
func (c *Client) Resume(ctx context.Context, id, reason string) (*workspace.Workspace, error) {
	return c.workspaceOp(ctx, "workspace.resume", wire.IDRequest{ID: id, Reason: reason})
}

// Migrate starts moving workspace id to a new agent.
func (c *Client) Migrate(ctx context.Context, id, newAgent, reason string) (*workspace.Workspace, error) {
	req := wire.MigrateRequest{ID: id, NewAgent: newAgent, Reason: reason}
	return c.workspaceOp(ctx, "workspace.migrate", req)
}

// CompleteMigration ends the migration of workspace id: successfully to
// newAgent, which binds it (the workspace gets a new token and the old one
// stops working), or failed with errMsg when it is not "".
func (c *Client) CompleteMigration(ctx context.Context, id, newAgent, errMsg string) (Migrated, error) {
	req := wire.MigrateCompleteRequest{ID: id, NewAgent: newAgent, Error: errMsg}
	var m Migrated
	err := c.call(ctx, c.agent("workspace.migrate.complete"), req, &m, 0)
	return m, err
}

// ResolveConflict ends the conflicts of a conflicted workspace.
func (c *Client) ResolveConflict(ctx context.Context, req ResolveRequest) (*workspace.Workspace, error) {
	return c.workspaceOp(ctx, "conflict.resolve", req)
}

// Integrate decides on a workspace's work.
func (c *Client) Integrate(ctx context.Context, req IntegrateRequest) (IntegrateResult, error) {
	var res IntegrateResult
	err := c.call(ctx, c.agent("integrate"), req, &res, 0)
	return res, err
}

// CreateToken creates a token for a human user or an auditor (kind "user"
// or "auditor") named name, and returns it (coordinator); a user is
// granted capabilities (User spec §6.2).
func (c *Client) CreateToken(ctx context.Context, kind, name string, capabilities ...user.Capability) (string, error) {
	req := wire.TokenCreateRequest{Kind: principal.Kind(kind), Name: name, Capabilities: capabilities}
	var reply wire.TokenCreated
	err := c.call(ctx, c.agent("token.create"), req, &reply, 0)
	return reply.Token, err
}

// RevokeToken deletes every token of the user or auditor (kind "user" or
// "auditor") named name and closes the connections made with them
// (coordinator). It returns how many tokens it revoked: 0 when the
// principal had none. reason, if not empty, goes into the trail's
// user_deactivated entry.
func (c *Client) RevokeToken(ctx context.Context, kind, name, reason string) (int, error) {
	req := wire.TokenRevokeRequest{Kind: principal.Kind(kind), Name: name, Reason: reason}
	var reply wire.TokenRevoked
	err := c.call(ctx, c.agent("token.revoke"), req, &reply, 0)
	return reply.Revoked, err
}

func (c *Client) workspaceOp(ctx context.Context, op string, req any) (*workspace.Workspace, error) {
	var w workspace.Workspace
	if err := c.call(ctx, c.agent(op), req, &w, 0); err != nil {
		return nil, err
	}
	return &w, nil
}

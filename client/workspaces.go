package client

import (
	"context"

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
	if err := c.call(ctx, c.agent("workspace.get"), idRequest{ID: id}, &w, 0); err != nil {
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
		req := struct {
			Parent string          `json:"parent,omitempty"`
			State  workspace.State `json:"state,omitempty"`
			After  string          `json:"after,omitempty"`
		}{parent, state, after}
		var reply struct {
			Workspaces []*workspace.Workspace `json:"workspaces"`
			Next       *string                `json:"next"`
		}
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

type idRequest struct {
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Abort aborts workspace id and its subtree.
func (c *Client) Abort(ctx context.Context, id, reason string) (*workspace.Workspace, error) {
	return c.workspaceOp(ctx, "workspace.abort", idRequest{id, reason})
}

// Suspend suspends workspace id.
func (c *Client) Suspend(ctx context.Context, id, reason string) (*workspace.Workspace, error) {
	return c.workspaceOp(ctx, "workspace.suspend", idRequest{id, reason})
}

// Resume resumes suspended workspace id; reason is recorded nowhere by
// this version of the daemon and may be "".
func (c *Client) Resume(ctx context.Context, id, reason string) (*workspace.Workspace, error) {
	return c.workspaceOp(ctx, "workspace.resume", idRequest{id, reason})
}

// Migrate starts moving workspace id to a new agent.
func (c *Client) Migrate(ctx context.Context, id, newAgent, reason string) (*workspace.Workspace, error) {
	req := struct {
		ID       string `json:"id"`
		NewAgent string `json:"new_agent,omitempty"`
		Reason   string `json:"reason,omitempty"`
	}{id, newAgent, reason}
	return c.workspaceOp(ctx, "workspace.migrate", req)
}

// Migrated is the result of CompleteMigration.
type Migrated struct {
	Workspace *workspace.Workspace `json:"workspace"`
	// Token is the workspace's new agent token, for the new agent; the old
	// one no longer authenticates. Empty after a failed migration.
	Token string `json:"token"`
}

// CompleteMigration ends the migration of workspace id: successfully to
// newAgent, which binds it (the workspace gets a new token and the old one
// stops working), or failed with errMsg when it is not "".
func (c *Client) CompleteMigration(ctx context.Context, id, newAgent, errMsg string) (Migrated, error) {
	req := struct {
		ID       string `json:"id"`
		NewAgent string `json:"new_agent,omitempty"`
		Error    string `json:"error,omitempty"`
	}{id, newAgent, errMsg}
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
// or "auditor") named name, and returns it (coordinator).
func (c *Client) CreateToken(ctx context.Context, kind, name string) (string, error) {
	req := struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	}{kind, name}
	var reply struct {
		Token string `json:"token"`
	}
	err := c.call(ctx, c.agent("token.create"), req, &reply, 0)
	return reply.Token, err
}

// RevokeToken deletes every token of the user or auditor (kind "user" or
// "auditor") named name and closes the connections made with them
// (coordinator). It returns how many tokens it revoked: 0 when the
// principal had none. reason, if not empty, goes into the trail's
// user_deactivated entry.
func (c *Client) RevokeToken(ctx context.Context, kind, name, reason string) (int, error) {
	req := struct {
		Kind   string `json:"kind"`
		Name   string `json:"name"`
		Reason string `json:"reason,omitempty"`
	}{kind, name, reason}
	var reply struct {
		Revoked int `json:"revoked"`
	}
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

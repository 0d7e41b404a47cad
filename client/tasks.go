package client

import (
	"context"
	"encoding/json"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Tasks and task graphs (the coordinator and delegates; docs/api.md,
// task.*), and the human highway (user tokens; highway.*).

// CreateTasks adds the tasks of req, in draft, to a new graph or to the
// graph req.Graph names; each opens a task_approval gate.
func (c *Client) CreateTasks(ctx context.Context, req task.CreateRequest) (wire.TasksCreated, error) {
	var out wire.TasksCreated
	err := c.call(ctx, c.agent("task.create"), req, &out, 0)
	return out, err
}

// GetTask returns task id; with transitive, every task it depends on and
// every task depending on it, directly or through others.
func (c *Client) GetTask(ctx context.Context, id string, transitive bool) (wire.TaskInfo, error) {
	var out wire.TaskInfo
	err := c.call(ctx, c.agent("task.get"), wire.TaskGetRequest{ID: id, Transitive: transitive}, &out, 0)
	return out, err
}

// ListTasks returns the tasks matching q (zero fields do not filter).
func (c *Client) ListTasks(ctx context.Context, q wire.TaskListRequest) ([]task.Task, error) {
	var out wire.TaskPage
	err := c.call(ctx, c.agent("task.list"), q, &out, 0)
	return out.Tasks, err
}

// BindTask binds pending, ready task id to the idle workspace ws.
func (c *Client) BindTask(ctx context.Context, id, ws string) (task.Task, error) {
	var out task.Task
	err := c.call(ctx, c.agent("task.bind"), wire.TaskBindRequest{ID: id, Workspace: ws}, &out, 0)
	return out, err
}

// CancelTask cancels task id (aborting its workspace, if bound and live).
func (c *Client) CancelTask(ctx context.Context, id, reason string) (task.Task, error) {
	var out task.Task
	err := c.call(ctx, c.agent("task.cancel"), wire.TaskOpRequest{ID: id, Reason: reason}, &out, 0)
	return out, err
}

// RetryTask returns failed task id to pending.
func (c *Client) RetryTask(ctx context.Context, id string) (task.Task, error) {
	var out task.Task
	err := c.call(ctx, c.agent("task.retry"), wire.TaskOpRequest{ID: id}, &out, 0)
	return out, err
}

// GetGraph returns graph id and its tasks.
func (c *Client) GetGraph(ctx context.Context, id string) (wire.GraphInfo, error) {
	var out wire.GraphInfo
	err := c.call(ctx, c.agent("graph.get"), wire.GraphRequest{ID: id}, &out, 0)
	return out, err
}

// HighwayQueue returns the pending gates in queue order, or with all every
// gate (a user token).
func (c *Client) HighwayQueue(ctx context.Context, all bool) ([]highway.Gate, error) {
	var out wire.HighwayQueue
	err := c.call(ctx, wire.Subject("highway.queue"), wire.HighwayQueueRequest{All: all}, &out, 0)
	return out.Gates, err
}

// Gate returns gate id (a user token).
func (c *Client) Gate(ctx context.Context, id string) (highway.Gate, error) {
	var out highway.Gate
	err := c.call(ctx, wire.Subject("highway.get"), wire.HighwayGetRequest{ID: id}, &out, 0)
	return out, err
}

// Inject sends an envelope as a person (a user token with
// inject_directive): origin human, originator the user, from the root;
// only the permission matrix's sender-role check is skipped.
func (c *Client) Inject(ctx context.Context, req EnvelopeRequest) (envelope.Envelope, error) {
	var out envelope.Envelope
	err := c.call(ctx, wire.Subject("highway.inject"), req, &out, 0)
	return out, err
}

// SetUserState moves a user to state (the coordinator's token): one of
// the spec's ten transitions.
func (c *Client) SetUserState(ctx context.Context, req wire.UserStateRequest) (user.User, error) {
	var out user.User
	err := c.call(ctx, c.agent("user.state"), req, &out, 0)
	return out, err
}

// SetCapabilities grants and revokes a user's capabilities (the
// coordinator's token).
func (c *Client) SetCapabilities(ctx context.Context, req wire.UserCapabilitiesRequest) (user.User, error) {
	var out user.User
	err := c.call(ctx, c.agent("user.capabilities"), req, &out, 0)
	return out, err
}

// TransferOwnership gives a workspace to another user (the coordinator's
// token).
func (c *Client) TransferOwnership(ctx context.Context, id, owner, reason string) (*workspace.Workspace, error) {
	var out workspace.Workspace
	err := c.call(ctx, c.agent("workspace.transfer"), wire.TransferRequest{ID: id, Owner: owner, Reason: reason}, &out, 0)
	return &out, err
}

// Escalations returns the pending escalations, or with all every one (a
// user token).
func (c *Client) Escalations(ctx context.Context, all bool) ([]highway.EscalationRecord, error) {
	var out wire.Escalations
	err := c.call(ctx, wire.Subject("highway.escalations"), wire.EscalationsRequest{All: all}, &out, 0)
	return out.Escalations, err
}

// RespondEscalation answers escalation id as the token's user: an
// envelope (answer set), an abort or a delegation.
func (c *Client) RespondEscalation(ctx context.Context, id string, response highway.Response, answer *wire.EscalationAnswer) (highway.EscalationRecord, error) {
	var out highway.EscalationRecord
	req := wire.EscalationRespondRequest{EscalationID: id, Response: response, Envelope: answer}
	err := c.call(ctx, wire.Subject("highway.escalation.respond"), req, &out, 0)
	return out, err
}

// ResolveGate answers gate id with action (approve, reject or modify,
// with modifications: the fields changed) as the token's user.
func (c *Client) ResolveGate(ctx context.Context, id string, action highway.Action, modifications json.RawMessage) (highway.Gate, error) {
	var out highway.Gate
	req := highway.ResolveRequest{GateID: id, Action: action, Modifications: modifications}
	err := c.call(ctx, wire.Subject("highway.resolve"), req, &out, 0)
	return out, err
}

package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/wire"
)

// CARP/1.0 (issue 15): the workspace's agent resolves what context and
// actions it may use, then executes or validates an action under that
// resolution, and answers the steward checkpoints a resolution shows
// pending (respond, issue 17). A refusal is an *Error whose Code is the
// CARP error code (RATE_LIMITED, RESOLUTION_EXPIRED, CHECKPOINT_REQUIRED,
// ...).

// NewCarpRequest returns a CARP request of op from this client's
// workspace's agent: carp_version, a UUIDv7 request_id, the timestamp and
// the requester (session_id the workspace, agent_id agent: the
// workspace's agent, its id when it has none).
func (c *Client) NewCarpRequest(op, agent string) carp.Request {
	if agent == "" {
		agent = c.ws
	}
	return carp.Request{CARPVersion: carp.Version, RequestID: uuid.Must(uuid.NewV7()).String(),
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Operation: op,
		Requester: carp.Requester{AgentID: agent, SessionID: c.ws}}
}

// CarpResolve resolves req (operation resolve).
func (c *Client) CarpResolve(ctx context.Context, req carp.Request) (carp.Resolution, error) {
	var res carp.Resolution
	err := c.call(ctx, c.agent("carp.resolve"), req, &res, 0)
	return res, err
}

// CarpExecute executes req's action (operation execute); it waits as long
// as the tool may take (wire.MaxToolTimeout at most).
func (c *Client) CarpExecute(ctx context.Context, req carp.Request) (carp.ExecutionResult, error) {
	var res carp.ExecutionResult
	err := c.call(ctx, c.agent("carp.execute"), req, &res, wire.MaxToolTimeout)
	return res, err
}

// CarpValidate checks req's action without executing it.
func (c *Client) CarpValidate(ctx context.Context, req carp.Request) (carp.ValidationResult, error) {
	var res carp.ValidationResult
	err := c.call(ctx, c.agent("carp.validate"), req, &res, 0)
	return res, err
}

// CarpRespond answers a steward checkpoint's questions (operation
// respond; req.CheckpointResponse names the checkpoint and holds the
// answers by question_id). Answers that do not pass are refused: an
// *Error CONSTRAINT_VIOLATED (answer again) or ACTION_DENIED (the
// checkpoint blocks), with the checkpoint and each answer's result in its
// Details.
func (c *Client) CarpRespond(ctx context.Context, req carp.Request) (carp.CheckpointResult, error) {
	var res carp.CheckpointResult
	err := c.call(ctx, c.agent("carp.respond"), req, &res, 0)
	return res, err
}

// AtlasLoad loads (or replaces) an Atlas manifest (coordinator token).
func (c *Client) AtlasLoad(ctx context.Context, manifest json.RawMessage) (wire.AtlasChange, error) {
	var ch wire.AtlasChange
	err := c.call(ctx, c.agent("atlas.load"), wire.AtlasLoadRequest{Manifest: manifest}, &ch, 0)
	return ch, err
}

// AtlasUnload unloads atlas id (coordinator token).
func (c *Client) AtlasUnload(ctx context.Context, id string) (wire.AtlasChange, error) {
	var ch wire.AtlasChange
	err := c.call(ctx, c.agent("atlas.unload"), wire.AtlasUnloadRequest{AtlasID: id}, &ch, 0)
	return ch, err
}

// AtlasList lists the loaded atlases.
func (c *Client) AtlasList(ctx context.Context) (wire.AtlasList, error) {
	var l wire.AtlasList
	err := c.call(ctx, c.agent("atlas.list"), nil, &l, 0)
	return l, err
}

// Trace reads this workspace's CARP session's TRACE events from log index
// from.
func (c *Client) Trace(ctx context.Context, from uint64, limit int) (wire.TracePage, error) {
	var p wire.TracePage
	err := c.call(ctx, c.agent("trace"), wire.TraceRequest{From: from, Limit: limit}, &p, 0)
	return p, err
}

// AuditTrace reads a session's TRACE events, or the whole log, with the
// log's signed head (coordinator, user or auditor token).
func (c *Client) AuditTrace(ctx context.Context, q wire.TraceRequest) (wire.TracePage, error) {
	var p wire.TracePage
	err := c.call(ctx, wire.Subject("audit.trace.read"), q, &p, 0)
	return p, err
}

package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
)

// Info returns the daemon's system.info.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var info Info
	err := c.call(ctx, "wacp.v1.system.info", nil, &info, 0)
	return info, err
}

// CreateCheckpoint creates a checkpoint in the client's workspace. A
// rejection is an *Error whose Code is the protocol's reason
// (workspace_not_active, invalid_type, permission_denied,
// invalid_structure, invalid_parent).
func (c *Client) CreateCheckpoint(ctx context.Context, req CheckpointRequest) (checkpointchain.Checkpoint, error) {
	var cp checkpointchain.Checkpoint
	err := c.call(ctx, c.agent("checkpoint"), req, &cp, 0)
	return cp, err
}

// GetCheckpoint returns the checkpoint id, if the client's workspace sees it.
func (c *Client) GetCheckpoint(ctx context.Context, id string) (checkpointchain.Checkpoint, error) {
	var cp checkpointchain.Checkpoint
	err := c.call(ctx, c.agent("checkpoint.get"), map[string]string{"id": id}, &cp, 0)
	return cp, err
}

// ListCheckpoints returns workspace ws's checkpoints in chain order, after
// checkpoint after ("" from the start), at most limit (0: the daemon's
// default). ws "" is the client's workspace.
func (c *Client) ListCheckpoints(ctx context.Context, ws, after string, limit int) ([]checkpointchain.Checkpoint, error) {
	req := struct {
		Workspace string `json:"workspace,omitempty"`
		After     string `json:"after,omitempty"`
		Limit     int    `json:"limit,omitempty"`
	}{ws, after, limit}
	var reply struct {
		Checkpoints []checkpointchain.Checkpoint `json:"checkpoints"`
	}
	err := c.call(ctx, c.agent("checkpoint.list"), req, &reply, 0)
	return reply.Checkpoints, err
}

// Head returns the head of workspace ws's chain, or with final its most
// recent final checkpoint. ws "" is the client's workspace. An empty chain
// is an *Error with code not_found.
func (c *Client) Head(ctx context.Context, ws string, final bool) (checkpointchain.Checkpoint, error) {
	req := struct {
		Workspace string `json:"workspace,omitempty"`
		Final     bool   `json:"final,omitempty"`
	}{ws, final}
	var cp checkpointchain.Checkpoint
	err := c.call(ctx, c.agent("checkpoint.head"), req, &cp, 0)
	return cp, err
}

// EmitSignal emits a signal from the client's workspace to its parent.
func (c *Client) EmitSignal(ctx context.Context, req SignalRequest) (signal.Signal, error) {
	var s signal.Signal
	err := c.call(ctx, c.agent("signal"), req, &s, 0)
	return s, err
}

// SendEnvelope sends an envelope from the client's workspace.
func (c *Client) SendEnvelope(ctx context.Context, req EnvelopeRequest) (envelope.Envelope, error) {
	var env envelope.Envelope
	err := c.call(ctx, c.agent("envelope"), req, &env, 0)
	return env, err
}

// NextEnvelope takes the next envelope of the client's inbox, waiting up to
// wait for one to arrive. It returns nil, nil when none arrived.
func (c *Client) NextEnvelope(ctx context.Context, wait time.Duration) (*envelope.Envelope, error) {
	req := struct {
		Wait string `json:"wait,omitempty"`
	}{}
	if wait > 0 {
		req.Wait = wait.String()
	}
	var raw json.RawMessage
	if err := c.call(ctx, c.agent("inbox.next"), req, &raw, max(wait, 0)); err != nil {
		return nil, err
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("{}")) {
		return nil, nil
	}
	var env envelope.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("decode envelope: %w", err)
	}
	return &env, nil
}

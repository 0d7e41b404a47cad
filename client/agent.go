package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/wire"
)

// Info returns the daemon's system.info.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var info Info
	err := c.call(ctx, wire.Subject("system.info"), nil, &info, 0)
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
	err := c.call(ctx, c.agent("checkpoint.get"), wire.GetRequest{ID: id}, &cp, 0)
	return cp, err
}

// ListCheckpoints returns workspace ws's checkpoints in chain order, after
// checkpoint after ("" from the start), at most limit (0: the daemon's
// default). ws "" is the client's workspace.
func (c *Client) ListCheckpoints(ctx context.Context, ws, after string, limit int) ([]checkpointchain.Checkpoint, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	// The daemon pages by bytes too (its reply stays under the server's
	// max payload): follow next until limit checkpoints or the end.
	var out []checkpointchain.Checkpoint
	for {
		req := wire.CheckpointListRequest{Workspace: ws, After: after, Limit: limit - len(out)}
		var reply wire.CheckpointPage
		if err := c.call(ctx, c.agent("checkpoint.list"), req, &reply, 0); err != nil {
			return out, err
		}
		out = append(out, reply.Checkpoints...)
		if reply.Next == nil || len(reply.Checkpoints) == 0 || len(out) >= limit {
			return out, nil
		}
		after = *reply.Next
	}
}

// Head returns the head of workspace ws's chain, or with final its most
// recent final checkpoint. ws "" is the client's workspace. An empty chain
// is an *Error with code not_found.
func (c *Client) Head(ctx context.Context, ws string, final bool) (checkpointchain.Checkpoint, error) {
	req := wire.HeadRequest{Workspace: ws, Final: final}
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

// NextEnvelope takes the next envelope of the client's inbox under a
// delivery lease, waiting up to wait for one to arrive. It returns nil, nil
// when none arrived. The envelope stays in the inbox until the caller
// acknowledges it with Ack after handling it; if its lease (env.Delivery)
// ends first, the daemon delivers it again, with the same id. NextEnvelope
// does not acknowledge anything itself (it sends ack_previous false), so a
// retried call after a lost reply loses nothing. Envelopes this Client has
// acknowledged, or tried to, are repeats when they come back: NextEnvelope
// acknowledges them again and skips them (dedup by envelope id).
func (c *Client) NextEnvelope(ctx context.Context, wait time.Duration) (*envelope.Envelope, error) {
	deadline := time.Now().Add(wait)
	for {
		env, err := c.takeEnvelope(ctx, wait)
		if err != nil || env == nil {
			return env, err
		}
		if !c.handled.has(env.ID) {
			return env, nil
		}
		if _, err := c.Ack(ctx, env.ID); err != nil {
			return nil, err
		}
		if wait = time.Until(deadline); wait < 0 {
			wait = 0
		}
	}
}

// takeEnvelope is one inbox.next call.
func (c *Client) takeEnvelope(ctx context.Context, wait time.Duration) (*envelope.Envelope, error) {
	req := wire.InboxNextRequest{AckPrevious: new(false)}
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

// Ack acknowledges envelope id, which the client's workspace received: it
// leaves the inbox for good. It reports whether this call removed it (false
// when it had already left). The id counts as handled from the start of
// the call, so if the acknowledgement is lost and the envelope comes back,
// NextEnvelope drops it.
func (c *Client) Ack(ctx context.Context, id string) (removed bool, err error) {
	c.handled.add(id)
	var reply wire.AckResult
	err = c.call(ctx, c.agent("inbox.ack"), wire.GetRequest{ID: id}, &reply, 0)
	return reply.Removed, err
}

// maxHandled bounds the ids a Client remembers for dedup. An envelope
// comes back at most 3 times, within 10 leases of its first hand-over, so
// only recent ids matter.
const maxHandled = 4096

// handledSet is the envelope ids a Client has acknowledged, oldest first
// out.
type handledSet struct {
	mu    sync.Mutex // guards ids and order
	ids   map[string]struct{}
	order []string
}

func (h *handledSet) add(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids == nil {
		h.ids = map[string]struct{}{}
	}
	if _, ok := h.ids[id]; ok {
		return
	}
	if len(h.order) >= maxHandled {
		delete(h.ids, h.order[0])
		h.order = h.order[1:]
	}
	h.ids[id] = struct{}{}
	h.order = append(h.order, id)
}

func (h *handledSet) has(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.ids[id]
	return ok
}

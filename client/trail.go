package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// Trail returns the trail entries the client's workspace sees, after entry
// after ("" from the start), at most limit (0: the daemon's default),
// only of eventType when it is set.
func (c *Client) Trail(ctx context.Context, after string, limit int, eventType trail.EventType) (TrailPage, error) {
	req := wire.AgentTrailRequest{After: after, Limit: limit, EventType: eventType}
	var page TrailPage
	err := c.call(ctx, c.agent("trail"), req, &page, 0)
	return page, err
}

// ReadTrail reads the global trail in global order (audit.trail.read;
// coordinator, user or auditor token).
func (c *Client) ReadTrail(ctx context.Context, q TrailQuery) (TrailPage, error) {
	var page TrailPage
	err := c.call(ctx, wire.Subject("audit.trail.read"), q, &page, 0)
	return page, err
}

// VerifyWait is how much longer than Options.Timeout VerifyTrail waits for
// its answer: the daemon reads every stored structure, at some 50,000
// entries a second on two cores (docs/performance.md).
const VerifyWait = 5 * time.Minute

// VerifyTrail recomputes the trail's hashes (audit.trail.verify): the
// global chain and every workspace chain, or only workspace ws's chain when
// ws is set. A broken trail is a result with OK false, not an error. It
// waits up to VerifyWait longer than other calls.
func (c *Client) VerifyTrail(ctx context.Context, ws string) (trail.VerifyResult, error) {
	req := wire.VerifyRequest{Workspace: ws}
	var res trail.VerifyResult
	err := c.call(ctx, wire.Subject("audit.trail.verify"), req, &res, VerifyWait)
	return res, err
}

// TailTrail calls fn for each trail entry as the daemon commits it, until
// ctx ends (then it returns nil) or fn returns an error (which it
// returns). It follows the live feed wacp.v1.trail.<ws or _system>.<event
// type> (core NATS: entries committed while nobody listens are not
// replayed; use ReadTrail for those). filter is the part after
// "wacp.v1.trail.", e.g. "<ws>.>" or ">" or "*.checkpoint_created"; ""
// means everything the token may see: ">" for the coordinator, "<ws>.>"
// for a workspace agent, whose token may subscribe only to its own
// workspace's entries.
func (c *Client) TailTrail(ctx context.Context, filter string, fn func(trail.Entry) error) error {
	if filter == "" {
		filter = ">"
		if !c.isCoordinator() {
			filter = c.ws + ".>"
		}
	}
	subject := wire.TrailPrefix + strings.TrimPrefix(filter, wire.TrailPrefix)
	return c.follow(ctx, subject, func(m *nats.Msg) error {
		var e trail.Entry
		if err := json.Unmarshal(m.Data, &e); err != nil {
			return fmt.Errorf("decode trail entry on %s: %w", m.Subject, err)
		}
		return fn(e)
	})
}

// follow core-subscribes to subject and calls fn for each message until ctx
// ends (nil) or fn fails.
func (c *Client) follow(ctx context.Context, subject string, fn func(*nats.Msg) error) error {
	sub, err := c.nc.SubscribeSync(subject)
	if err != nil {
		return transportError(ctx, subject, err)
	}
	defer sub.Unsubscribe()
	// Round-trip to the server so a refused subscription is known now.
	fctx, cancel := context.WithTimeout(ctx, c.timeout)
	err = c.nc.FlushWithContext(fctx)
	cancel()
	if err != nil && ctx.Err() == nil {
		return transportError(ctx, subject, err)
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, nats.ErrPermissionViolation) {
			e, _, _ := permissionError(err)
			return e
		}
		if err != nil {
			return transportError(ctx, subject, err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

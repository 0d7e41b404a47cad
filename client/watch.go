package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/wire"
)

// SignalStream is the JetStream stream holding every delivered signal
// (wire-v1 §5).
const SignalStream = "WACP_SIGNALS"

// WatchOptions says which signals Watch follows and from where.
type WatchOptions struct {
	// Durable, if set, names a durable consumer that remembers what was
	// acknowledged, so a later Watch with the same name resumes after the
	// last signal fn accepted. A workspace agent's token may use exactly
	// one consumer, named after its workspace: for agent tokens Durable
	// must equal the workspace id. The coordinator may use any name.
	Durable string
	// Workspace is the workspace whose delivered signals to follow;
	// default the client's. Only the coordinator may follow another's.
	Workspace string
	// DeliverAll starts from the first signal in the stream instead of
	// from now. For a durable consumer it applies when Watch creates it;
	// an existing one resumes where it stopped.
	DeliverAll bool
	// OnUndecodable, if set, is told of each message on a signal subject
	// that is not a signal record (it does not decode, or has no id or
	// type). Watch skips such a message and goes on: with Durable it is
	// terminated (never delivered again), which no real signal ever is,
	// since every signal decodes.
	OnUndecodable func(subject string, data []byte, err error)
}

// ErrNotASignal is wrapped by the error given to OnUndecodable.
var ErrNotASignal = errors.New("client: message is not a signal")

// decodeSignal reads a signal record strictly enough to tell it from
// anything else on a signal subject.
func decodeSignal(data []byte) (signal.Signal, error) {
	var s signal.Signal
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%w: %v", ErrNotASignal, err)
	}
	if s.ID == "" || s.Type == "" || s.From == "" {
		return s, fmt.Errorf("%w: no id, type or from", ErrNotASignal)
	}
	return s, nil
}

// Watch calls fn for each signal delivered to the workspace (the signals of
// its children), until ctx ends (then it returns nil) or fn returns an
// error (which it returns; with Durable that signal is not acknowledged
// and is delivered again next time). Delivery is at least once: drop
// repeats by Signal.ID.
//
// With Durable it reads a durable pull consumer of stream WACP_SIGNALS
// filtered to wacp.v1.sig.<ws>.>, acknowledging each signal after fn
// returns nil. Without it the coordinator uses an ordered consumer from now
// (or from the start with DeliverAll); a workspace agent, whose token may
// not create other consumers, follows the live subject instead, and
// DeliverAll needs Durable.
func (c *Client) Watch(ctx context.Context, opts WatchOptions, fn func(signal.Signal) error) error {
	ws := first(opts.Workspace, c.ws)
	if !validToken(ws) {
		return fmt.Errorf("client: watch: workspace %q is not a workspace id", ws)
	}
	filter := wire.SignalPrefix + ws + ".>"
	skip := func(subject string, data []byte, err error) {
		if opts.OnUndecodable != nil {
			opts.OnUndecodable(subject, data, err)
		}
	}
	if opts.Durable == "" && !c.isCoordinator() {
		if opts.DeliverAll {
			return fmt.Errorf("client: watch: an agent replays signals only through its durable consumer: set Durable to %q", c.ws)
		}
		return c.follow(ctx, filter, func(m *nats.Msg) error {
			s, err := decodeSignal(m.Data)
			if err != nil {
				skip(m.Subject, m.Data, err)
				return nil
			}
			return fn(s)
		})
	}

	// A JetStream API call the server refuses never gets a reply: end the
	// watch with the permission error instead of waiting for a timeout.
	ctx, release := c.guard(ctx, func(_, s string) bool { return strings.HasPrefix(s, "$JS.") })
	defer release()
	cons, ephemeral, err := c.consumer(ctx, opts, ws)
	if err != nil {
		return err
	}
	if ephemeral {
		defer c.dropConsumer(ctx, cons)
	}
	it, err := cons.Messages()
	if err != nil {
		return transportError(ctx, "consume "+SignalStream, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if cause := context.Cause(ctx); cause != nil {
			if errors.Is(cause, ErrPermission) {
				return cause
			}
			return nil
		}
		switch {
		case errors.Is(err, jetstream.ErrNoHeartbeat):
			continue // the iterator re-issues its pull requests
		case err != nil:
			return transportError(ctx, "consume "+SignalStream, err)
		}
		s, err := decodeSignal(msg.Data())
		if err != nil {
			// Not a signal: report it and never see it again. Every signal
			// decodes, so no signal is lost here.
			skip(msg.Subject(), msg.Data(), err)
			msg.Term()
			continue
		}
		if err := fn(s); err != nil {
			msg.Nak() // redeliver promptly to the next Watch
			return err
		}
		// fn has handled it: acknowledge it, even if ctx ended meanwhile.
		// The acknowledgement is not awaited (a round trip per signal held
		// back every signal behind it: at 64 agents, the coordinator saw
		// signals up to half a second late): delivery is at least once
		// either way, and one lost is delivered again after the consumer's
		// ack wait.
		if err := msg.Ack(); err != nil && ctx.Err() == nil {
			return transportError(ctx, "ack signal "+s.ID, err)
		}
	}
}

// consumer returns the consumer Watch reads, which the daemon makes
// (signals.consumer): the durable one, or with no Durable a new ephemeral
// one, which Watch deletes when it ends.
func (c *Client) consumer(ctx context.Context, opts WatchOptions, ws string) (cons jetstream.Consumer, ephemeral bool, err error) {
	if opts.Durable != "" && !validToken(opts.Durable) {
		return nil, false, fmt.Errorf("client: watch: durable name %q is not a valid consumer name", opts.Durable)
	}
	info, err := c.SignalsConsumer(ctx, ws, opts.Durable, opts.DeliverAll)
	if err != nil {
		return nil, false, err
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, false, fmt.Errorf("jetstream: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cons, err = js.Consumer(cctx, info.Stream, info.Consumer)
	if err != nil {
		return nil, false, transportError(cctx, "consumer "+info.Consumer, err)
	}
	return cons, !info.Durable, nil
}

// dropConsumer deletes an ephemeral consumer when its watch ends; the
// server would remove it after a while anyway.
func (c *Client) dropConsumer(ctx context.Context, cons jetstream.Consumer) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	js.DeleteConsumer(dctx, SignalStream, cons.CachedInfo().Name)
}

// SignalsConsumer asks the daemon for the consumer of the signals delivered
// to workspace ws (default the client's), durable when durable is set; see
// Watch, which uses it. Other NATS clients read the consumer it names with
// the JetStream pull API (nats consumer next WACP_SIGNALS <consumer>).
func (c *Client) SignalsConsumer(ctx context.Context, ws, durable string, deliverAll bool) (ConsumerInfo, error) {
	var info ConsumerInfo
	req := wire.ConsumerRequest{Workspace: first(ws, c.ws), Durable: durable, DeliverAll: deliverAll}
	err := c.call(ctx, c.agent("signals.consumer"), req, &info, 0)
	return info, err
}

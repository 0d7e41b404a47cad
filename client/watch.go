package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/signal"
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
	filter := "wacp.v1.sig." + ws + ".>"
	decode := func(data []byte, subject string) (signal.Signal, error) {
		var s signal.Signal
		if err := json.Unmarshal(data, &s); err != nil {
			return s, fmt.Errorf("decode signal on %s: %w", subject, err)
		}
		return s, nil
	}
	if opts.Durable == "" && !c.isCoordinator() {
		if opts.DeliverAll {
			return fmt.Errorf("client: watch: an agent replays signals only through its durable consumer: set Durable to %q", c.ws)
		}
		return c.follow(ctx, filter, func(m *nats.Msg) error {
			s, err := decode(m.Data, m.Subject)
			if err != nil {
				return err
			}
			return fn(s)
		})
	}

	// A JetStream API call the server refuses never gets a reply: end the
	// watch with the permission error instead of waiting for a timeout.
	ctx, release := c.guard(ctx, func(_, s string) bool { return strings.HasPrefix(s, "$JS.") })
	defer release()
	cons, err := c.consumer(ctx, opts, filter)
	if err != nil {
		return err
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
		s, err := decode(msg.Data(), msg.Subject())
		if err == nil {
			err = fn(s)
		}
		if opts.Durable == "" {
			if err != nil {
				return err
			}
			continue
		}
		if err != nil {
			msg.Nak() // redeliver promptly to the next Watch
			return err
		}
		// fn has handled it: acknowledge it even if ctx ended meanwhile.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		err = msg.DoubleAck(actx)
		cancel()
		if err != nil && ctx.Err() == nil {
			return transportError(ctx, "ack signal "+s.ID, err)
		}
	}
}

// consumer returns the consumer Watch reads: the durable one (created on
// first use) or a new ordered one.
func (c *Client) consumer(ctx context.Context, opts WatchOptions, filter string) (jetstream.Consumer, error) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	policy := jetstream.DeliverNewPolicy
	if opts.DeliverAll {
		policy = jetstream.DeliverAllPolicy
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if opts.Durable == "" {
		cons, err := js.OrderedConsumer(cctx, SignalStream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{filter}, DeliverPolicy: policy,
		})
		if err != nil {
			return nil, transportError(cctx, "create ordered consumer", err)
		}
		return cons, nil
	}
	if !validToken(opts.Durable) {
		return nil, fmt.Errorf("client: watch: durable name %q is not a valid consumer name", opts.Durable)
	}
	cons, err := js.Consumer(cctx, SignalStream, opts.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = js.CreateConsumer(cctx, SignalStream, jetstream.ConsumerConfig{
			Durable: opts.Durable, FilterSubject: filter, DeliverPolicy: policy,
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
			Description: "wacp watch of " + filter,
		})
	}
	if err != nil {
		return nil, transportError(cctx, "consumer "+opts.Durable, err)
	}
	if got := cons.CachedInfo().Config.FilterSubject; got != filter {
		return nil, fmt.Errorf("client: watch: durable consumer %s follows %q, not %q; use another name", opts.Durable, got, filter)
	}
	return cons, nil
}

package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
)

// publisher moves committed signals from the outbox to the WACP_SIGNALS
// stream and committed trail entries to the live feed. The engine only
// notifies it (OnCommit must not block); the publisher reads the outbox
// itself, so a signal is published after its commit and again after a crash
// until the stream confirmed it.
type publisher struct {
	eng *runtime.Engine
	js  jetstream.JetStream
	nc  *nats.Conn
	lg  *slog.Logger
	m   *metrics // nil when metrics are off
	// recover, if set, is called after a failed publish, before the retry:
	// it restores JetStream when the server turned it off (daemon.go).
	recover func(context.Context) error

	wake   chan struct{} // signals: the outbox may have items
	cursor string        // the last signal id confirmed; owned by runSignals

	mu      sync.Mutex // guards feed and feedCh
	feed    []trail.Entry
	feedCh  chan struct{}
	flushed chan chan struct{} // flush requests for the signal loop
}

// newPublisher returns a publisher of eng's commits. It must be created
// before anything commits: the outbox depth it reports to m starts from the
// items a previous run left.
func newPublisher(eng *runtime.Engine, js jetstream.JetStream, nc *nats.Conn, lg *slog.Logger, m *metrics) (*publisher, error) {
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	p := &publisher{eng: eng, js: js, nc: nc, lg: lg, m: m, wake: make(chan struct{}, 1),
		feedCh: make(chan struct{}, 1), flushed: make(chan chan struct{})}
	if m != nil {
		n, err := eng.OutboxLen()
		if err != nil {
			return nil, err
		}
		m.outboxAdd(n)
	}
	eng.OnCommit(p.onCommit)
	p.poke() // republish whatever a previous run left unconfirmed
	return p, nil
}

func (p *publisher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// onCommit runs under the engine's lock: it only queues.
func (p *publisher) onCommit(c runtime.Commit) {
	if len(c.Outbox) > 0 {
		p.m.outboxAdd(len(c.Outbox))
		p.poke()
	}
	if c.Reloaded {
		p.poke() // items of a write reported failed may be in the outbox
	}
	p.mu.Lock()
	p.feed = append(p.feed, c.Entries...)
	p.mu.Unlock()
	select {
	case p.feedCh <- struct{}{}:
	default:
	}
}

// runSignals publishes the outbox until ctx is done.
func (p *publisher) runSignals(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		var done chan struct{}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-retry.C:
		case done = <-p.flushed:
		}
		if err := p.drain(ctx); err != nil {
			p.lg.Warn("publish signals; will retry", "err", err)
			if p.recover != nil {
				if rerr := p.recover(ctx); rerr != nil {
					p.lg.Warn("restore jetstream; will retry", "err", rerr)
				}
			}
			retry.Reset(250 * time.Millisecond)
		}
		if done != nil {
			close(done)
		}
	}
}

// drain publishes every outbox item, oldest first, and removes each batch
// once the stream acknowledged it. A batch's items are published without
// waiting for each acknowledgement (one connection, so the stream receives
// them in this order), then the acknowledgements are awaited in order: the
// confirmed prefix is removed even when a later item fails, and the rest is
// published again on the next try (the stream drops what it already holds,
// by Nats-Msg-Id). Each item after the first of a batch expects the one
// before it to be the stream's last message (Nats-Expected-Last-Msg-Id), so
// when the stream refuses an item it also refuses every item behind it:
// signals are stored in commit order, even after a stream error. The price
// is that a signal the stream keeps refusing holds back those behind it
// (they stay in the outbox, and the refusal is logged at every try).
func (p *publisher) drain(ctx context.Context) error {
	for {
		items, err := p.eng.OutboxAfter(p.cursor, 256)
		if err != nil || len(items) == 0 {
			return err
		}
		futures := make([]jetstream.PubAckFuture, 0, len(items))
		var perr error
		for i, it := range items {
			b, err := json.Marshal(it.Signal)
			if err != nil {
				perr = err
				break
			}
			msg := nats.NewMsg(it.Subject)
			msg.Data = b
			msg.Header.Set(jetstream.MsgIDHeader, it.ID)
			if i > 0 {
				// Everything before items[0] is confirmed, so the first
				// needs no expectation.
				msg.Header.Set(jetstream.ExpectedLastMsgIDHeader, items[i-1].ID)
			}
			f, err := p.js.PublishMsgAsync(msg)
			if err != nil {
				perr = err
				break
			}
			futures = append(futures, f)
		}
		acked := make([]string, 0, len(futures))
		timeout := time.NewTimer(5 * time.Second)
	wait:
		for i, f := range futures {
			select {
			case <-f.Ok():
				acked = append(acked, items[i].ID)
			case err := <-f.Err():
				perr = err
				break wait
			case <-timeout.C:
				perr = fmt.Errorf("publish %s: no acknowledgement from the stream in 5s", items[i].ID)
				break wait
			case <-ctx.Done():
				perr = ctx.Err()
				break wait
			}
		}
		timeout.Stop()
		if len(acked) > 0 {
			if err := p.eng.AckOutbox(acked...); err != nil {
				return err
			}
			p.cursor = acked[len(acked)-1]
			p.m.outboxAdd(-len(acked))
			p.m.signalsPublished(len(acked))
		}
		if perr != nil {
			return perr
		}
	}
}

// flush asks the signal loop to publish everything now and waits up to d.
func (p *publisher) flush(d time.Duration) {
	done := make(chan struct{})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case p.flushed <- done:
	case <-t.C:
		return
	}
	select {
	case <-done:
	case <-t.C:
	}
	p.publishFeed()
}

// runFeed publishes committed trail entries on the live feed, in commit
// order: wacp.v1.trail.<ws or _system>.<event_type> (core NATS, best effort).
func (p *publisher) runFeed(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.feedCh:
			p.publishFeed()
		}
	}
}

func (p *publisher) publishFeed() {
	p.mu.Lock()
	entries := p.feed
	p.feed = nil
	p.mu.Unlock()
	for _, e := range entries {
		// The entry's own encoder: json.Marshal would validate and compact
		// its output again and escape <, > and & in it.
		b, err := e.MarshalJSON()
		if err != nil {
			continue
		}
		scope := e.Workspace
		if scope == "" {
			scope = "_system"
		}
		if err := p.nc.Publish("wacp.v1.trail."+scope+"."+string(e.EventType), b); err != nil {
			p.lg.Warn("publish trail feed", "err", err)
		}
	}
}

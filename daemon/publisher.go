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
// stream and committed trail entries to the live feed. The engine hands it
// each commit's outbox items (OnCommit must not block); it publishes them
// from memory, and reads the outbox itself when memory may lack some, so a
// signal is published after its commit and again after a crash until the
// stream confirmed it.
type publisher struct {
	eng *runtime.Engine
	js  jetstream.JetStream
	nc  *nats.Conn
	lg  *slog.Logger
	m   *metrics // nil when metrics are off
	// recover, if set, is called after a failed publish, before the retry:
	// it restores JetStream when the server turned it off (daemon.go).
	recover func(context.Context) error
	// interest, if set, reports whether anyone subscribes to a live feed
	// subject (the embedded server's own count: daemon.go); the feed skips
	// a subject nobody reads.
	interest func(subject string) bool

	wake   chan struct{} // signals: the outbox may have items
	cursor string        // the last signal id confirmed; owned by runSignals
	high   string        // the highest signal id sent; owned by runSignals

	mu      sync.Mutex // guards feed, feedCh, queue and behind
	feed    []trail.Entry
	feedCh  chan struct{}
	flushed chan chan struct{} // flush requests for the signal loop
	// queue holds the outbox items of commits (each commit's Outbox), to
	// publish from memory; behind says the outbox may hold items queue
	// lacks (at start, after degraded mode, after a failed publish, or
	// when queue grew past maxQueued), so the loop reads the database.
	queue  []runtime.Commit
	queued int
	behind bool
}

// maxQueued bounds the items held in memory for publishing; past it they
// are dropped and read back from the outbox.
const maxQueued = 4096

// maxInFlight bounds the signals published and not yet acknowledged.
const maxInFlight = 1024

// ackTimeout bounds the wait for the stream's acknowledgement of a signal.
const ackTimeout = 5 * time.Second

// newPublisher returns a publisher of eng's commits. It must be created
// before anything commits: the outbox depth it reports to m starts from the
// items a previous run left.
func newPublisher(eng *runtime.Engine, js jetstream.JetStream, nc *nats.Conn, lg *slog.Logger, m *metrics) (*publisher, error) {
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	p := &publisher{eng: eng, js: js, nc: nc, lg: lg, m: m, wake: make(chan struct{}, 1),
		feedCh: make(chan struct{}, 1), flushed: make(chan chan struct{}), behind: true}
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
	}
	p.mu.Lock()
	p.feed = append(p.feed, c.Entries...)
	switch {
	case c.Reloaded:
		// Items of a write reported failed may be in the outbox.
		p.behind, p.queue, p.queued = true, nil, 0
	case len(c.Outbox) == 0 || p.behind:
	case p.queued+len(c.Outbox) > maxQueued:
		p.behind, p.queue, p.queued = true, nil, 0
	default:
		p.queue = append(p.queue, runtime.Commit{Outbox: c.Outbox})
		p.queued += len(c.Outbox)
	}
	p.mu.Unlock()
	if len(c.Outbox) > 0 || c.Reloaded {
		p.poke()
	}
	select {
	case p.feedCh <- struct{}{}:
	default:
	}
}

// runSignals publishes the outbox until ctx is done. Committed items are
// published from memory as they come, without waiting for the
// acknowledgements of those before them (up to maxInFlight; one
// connection, so the stream receives them in this order); the
// acknowledgements are taken in order, and each confirmed prefix is removed
// from the outbox. Whenever the memory may lack items (behind), the loop
// publishes the outbox from the database instead, once every earlier
// publish is confirmed (publishStored). Each item published while another
// is unconfirmed expects that one to be the stream's last message
// (Nats-Expected-Last-Msg-Id), so when the stream refuses an item it also
// refuses every item behind it: signals are stored in commit order, even
// after a stream error. A failed publish leaves the rest in the outbox, to
// be read back after a pause and published again (the stream drops what it
// already holds, by Nats-Msg-Id). The price is that a signal the stream
// keeps refusing holds back those behind it (they stay in the outbox, and
// the refusal is logged at every try).
func (p *publisher) runSignals(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	timeout := time.NewTimer(time.Hour)
	timeout.Stop()
	defer timeout.Stop()
	var (
		inflight []sent
		waiting  []chan struct{} // flush requests
		paused   bool            // after a failure, until retry fires
	)
	fail := func(err error) {
		p.lg.Warn("publish signals; will retry", "err", err)
		inflight = nil // unconfirmed: they stay in the outbox
		p.mu.Lock()
		p.behind, p.queue, p.queued = true, nil, 0
		p.mu.Unlock()
		if p.recover != nil {
			if rerr := p.recover(ctx); rerr != nil {
				p.lg.Warn("restore jetstream; will retry", "err", rerr)
			}
		}
		paused = true
		retry.Reset(250 * time.Millisecond)
		for _, w := range waiting {
			close(w)
		}
		waiting = nil
	}
	for {
		if !paused {
			var err error
			if inflight, err = p.publish(inflight); err != nil {
				fail(err)
			}
		}
		if len(inflight) == 0 && len(waiting) > 0 && p.idle() {
			for _, w := range waiting {
				close(w)
			}
			waiting = nil
		}
		var okC <-chan *jetstream.PubAck
		var errC <-chan error
		if len(inflight) > 0 {
			okC, errC = inflight[0].f.Ok(), inflight[0].f.Err()
			timeout.Reset(time.Until(inflight[0].at.Add(ackTimeout)))
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-retry.C:
			paused = false
		case w := <-p.flushed:
			waiting = append(waiting, w)
		case <-okC:
			inflight = p.confirm(inflight)
		case err := <-errC:
			fail(fmt.Errorf("publish %s: %w", inflight[0].item.ID, err))
		case <-timeout.C:
			fail(fmt.Errorf("publish %s: no acknowledgement from the stream in %s", inflight[0].item.ID, ackTimeout))
		}
		timeout.Stop()
	}
}

// sent is a signal published and not yet confirmed.
type sent struct {
	item runtime.OutboxItem
	f    jetstream.PubAckFuture
	at   time.Time // when it was published
}

// idle reports whether nothing waits to be published.
func (p *publisher) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.behind && p.queued == 0
}

// publish sends what waits: the outbox from the database when behind
// (once every earlier publish is confirmed), else the queued items, up to
// maxInFlight unconfirmed. It returns the unconfirmed ones.
func (p *publisher) publish(inflight []sent) ([]sent, error) {
	p.mu.Lock()
	behind := p.behind
	if behind && len(inflight) == 0 {
		p.behind, p.queue, p.queued = false, nil, 0
	}
	p.mu.Unlock()
	if behind {
		if len(inflight) > 0 {
			return inflight, nil // read the outbox once they are confirmed
		}
		return p.publishStored()
	}
	for len(inflight) < maxInFlight {
		p.mu.Lock()
		if len(p.queue) == 0 {
			p.mu.Unlock()
			return inflight, nil
		}
		c := p.queue[0]
		p.queue = p.queue[1:]
		p.queued -= len(c.Outbox)
		p.mu.Unlock()
		for _, it := range c.Outbox {
			if it.ID <= p.high {
				continue // published from the database
			}
			var err error
			if inflight, err = p.push(inflight, it); err != nil {
				return inflight, err
			}
		}
	}
	return inflight, nil
}

// publishStored publishes the outbox's items after the last confirmed one,
// from the database, up to maxInFlight; when that many came, more may
// follow, and the loop reads again once these are confirmed (behind). Items
// committed meanwhile are queued too; those it published are skipped there
// (Signal ids increase in commit order).
func (p *publisher) publishStored() ([]sent, error) {
	held, err := p.lastHeld()
	if err != nil {
		// The stream's window for repeats still drops those it holds
		// from the last two minutes.
		p.lg.Warn("read the signal stream's last signal; publishing the outbox from the last confirmed one", "err", err)
	}
	for {
		items, err := p.eng.OutboxAfter(p.cursor, maxInFlight)
		if err != nil {
			return nil, err
		}
		full := len(items) == maxInFlight
		n := 0
		for n < len(items) && items[n].ID <= held {
			n++
		}
		if n > 0 {
			// Published before and held by the stream: confirmed now.
			p.confirmed(items[n-1], n)
			items = items[n:]
		}
		if len(items) == 0 && full {
			continue // every item of a full page was held: read the next
		}
		if full {
			p.mu.Lock()
			p.behind, p.queue, p.queued = true, nil, 0
			p.mu.Unlock()
		}
		var inflight []sent
		for _, it := range items {
			if inflight, err = p.push(inflight, it); err != nil {
				return inflight, err
			}
		}
		return inflight, nil
	}
}

// lastHeld returns the id of the last signal the stream holds ("" when it
// holds none). The stream holds signals in emission order (each publish
// behind an unconfirmed one expects that one last, and only the daemon
// publishes there), so it holds every signal up to that one: those the
// outbox still has were published and not seen confirmed, by a run that
// stopped or a publish that failed, and are not published again. The
// stream's own window for repeats (signalsDedupeWindow) is short.
func (p *publisher) lastHeld() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
	defer cancel()
	st, err := p.js.Stream(ctx, signalStream)
	if err != nil {
		return "", err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return "", err
	}
	if info.State.Msgs == 0 {
		return "", nil
	}
	m, err := st.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		return "", err
	}
	return m.Header.Get(jetstream.MsgIDHeader), nil
}

// push publishes one signal behind inflight, expecting the last of them
// (if any) to be the stream's last message, and returns inflight with it.
func (p *publisher) push(inflight []sent, it runtime.OutboxItem) ([]sent, error) {
	expect := ""
	if len(inflight) > 0 {
		expect = inflight[len(inflight)-1].item.ID
	}
	f, err := p.send(it.ID, it.Subject, it.Signal, expect)
	if err != nil {
		return inflight, err
	}
	p.high = max(p.high, it.ID)
	return append(inflight, sent{item: it, f: f, at: time.Now()}), nil
}

// confirm removes the confirmed prefix of inflight from the outbox; the
// first's acknowledgement has been received.
func (p *publisher) confirm(inflight []sent) []sent {
	n := 1
	for n < len(inflight) {
		select {
		case <-inflight[n].f.Ok():
			n++
			continue
		default:
		}
		break
	}
	p.confirmed(inflight[n-1].item, n)
	p.m.signalsPublished(n)
	return inflight[n:]
}

// confirmed records that the stream holds last and the n-1 signals before
// it that the outbox still had.
func (p *publisher) confirmed(last runtime.OutboxItem, n int) {
	if err := p.eng.AckOutbox(last); err != nil {
		// The engine is closing: the items are published again at start.
		p.lg.Warn("confirm signals", "err", err)
	}
	p.cursor = last.ID
	p.m.outboxAdd(-n)
}

// send publishes one signal with its id as Nats-Msg-Id and, unless expect
// is empty, the id of the signal the stream must hold last.
func (p *publisher) send(id, subject string, sig any, expect string) (jetstream.PubAckFuture, error) {
	b, err := json.Marshal(sig)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = b
	msg.Header.Set(jetstream.MsgIDHeader, id)
	if expect != "" {
		msg.Header.Set(jetstream.ExpectedLastMsgIDHeader, expect)
	}
	return p.js.PublishMsgAsync(msg)
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

// publishFeed publishes the entries committed since it last ran. A subject
// no one subscribes to is skipped (core NATS would drop the message): at 64
// agents the feed's three messages per checkpoint, encoded, published and
// dropped by the server, cost a few per cent of the daemon's CPU. The
// entries come from the engine's commits, which encoded their bodies in
// canonical form: they are written as they are (trail.AppendJSON), into
// one buffer, which Publish copies.
func (p *publisher) publishFeed() {
	p.mu.Lock()
	entries := p.feed
	p.feed = nil
	p.mu.Unlock()
	var b []byte
	for _, e := range entries {
		scope := e.Workspace
		if scope == "" {
			scope = "_system"
		}
		subject := "wacp.v1.trail." + scope + "." + string(e.EventType)
		if p.interest != nil && !p.interest(subject) {
			continue
		}
		b = trail.AppendJSON(b[:0], e)
		if err := p.nc.Publish(subject, b); err != nil {
			p.lg.Warn("publish trail feed", "err", err)
		}
	}
}

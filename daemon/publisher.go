package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
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
	// last is the stream's last sequence, when lastKnown: from the
	// stream's state (lastHeld) and from each acknowledgement; a failure
	// makes it unknown. Owned by runSignals.
	last      uint64
	lastKnown bool
	// failedAt is when publishing first failed since the last confirmed
	// signal (zero while it works); owned by runSignals.
	failedAt time.Time

	// perWorkspace, when set, keeps each sending workspace's signals in
	// emission order in the stream, instead of all of them: several
	// daemons may then publish to one stream, each workspace's signals
	// by one daemon only (its partition's holder). Each signal expects
	// the stream sequence of the last one stored from its workspace
	// (Nats-Expected-Last-Subject-Sequence on wacp.v1.sig.*.<from>.*),
	// and a workspace has at most one signal in flight (pushFrom). Off
	// (the default), each signal expects the stream's last sequence
	// (push), which holds only while this daemon is the stream's one
	// publisher. The caller sets it after newPublisher, before
	// runSignals starts; it does not change after.
	perWorkspace bool
	// In perWorkspace mode, owned by runSignals: lastFrom is the last
	// signal the stream holds from each sending workspace, as known from
	// acknowledgements and from reading the stream (lastOf); sending
	// holds the workspaces with a signal in flight; pending is the
	// outbox's next items, taken from queue or from the database and not
	// yet published (the first waits for its workspace's signal in
	// flight); stream is the signal stream, once looked up.
	lastFrom *lastSignals
	sending  map[string]bool
	pending  []runtime.OutboxItem
	stream   jetstream.Stream

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

// maxLastFrom bounds the sending workspaces whose last signal in the
// stream the publisher keeps (perWorkspace mode); past it the least
// recently used is forgotten, and read again from the stream when needed.
const maxLastFrom = 100_000

// maxRefusals bounds the publishes of one signal in a row that the stream
// refuses for a wrong last sequence (perWorkspace mode), each after
// reading the workspace's last signal again; past it the publisher fails
// and retries after a pause as for any failure.
const maxRefusals = 5

// stateTimeout bounds the reading of the stream's state (lastHeld, lastOf). It is
// short: past it the publisher goes on without it (one signal, whose
// acknowledgement tells the stream's last sequence), and a cluster that
// lost its JetStream meta leader answers no such request until it has
// elected another, while the stream's own leader may take signals.
const stateTimeout = time.Second

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
// publish is confirmed (publishStored). Each item expects the stream's last
// sequence to be the one the item before it got or will get
// (Nats-Expected-Last-Sequence: the stream's last as known, plus one for
// each item in flight before it), so when the stream refuses an item it
// also refuses every item behind it: signals are stored in commit order,
// even after a stream error. A failed publish leaves the rest in the outbox, to
// be read back after a pause, or as soon as a lost connection is back, and
// published again (the stream drops what it already holds, by Nats-Msg-Id). The price is that a signal the stream
// keeps refusing holds back those behind it (they stay in the outbox, and
// the refusal is logged at every try).
//
// In perWorkspace mode the order kept is each sending workspace's: a
// signal expects its workspace's last sequence in the stream, one signal
// per workspace is in flight, and a signal refused for a wrong last
// sequence is published again, in its place, after the workspace's last
// signal is read again (retryFrom). Signals of other workspaces go on
// meanwhile; the outbox is still confirmed in prefixes, in order.
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
		back     chan nats.Status
	)
	if p.perWorkspace {
		if p.lastFrom == nil {
			p.lastFrom = newLastSignals(maxLastFrom)
		}
		p.sending = map[string]bool{}
	}
	if p.nc != nil {
		// A connection that reconnects (to another node of a cluster)
		// ends the pause at once: the publishes the loss failed are
		// retried through the new server.
		back = p.nc.StatusChanged(nats.CONNECTED)
		defer p.nc.RemoveStatusListener(back)
	}
	fail := func(err error) {
		p.lg.Warn("publish signals; will retry", "err", err)
		if p.failedAt.IsZero() {
			p.failedAt = time.Now()
		}
		p.forgetInFlight(inflight)
		inflight = nil      // unconfirmed: they stay in the outbox
		p.lastKnown = false // some of them may be stored
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
		case <-back:
			if paused {
				retry.Stop()
				paused = false
			}
		case w := <-p.flushed:
			waiting = append(waiting, w)
		case ack := <-okC:
			inflight = p.confirm(inflight, ack)
		case err := <-errC:
			if p.perWorkspace && wrongLastSeq(err) && inflight[0].refused < maxRefusals {
				err = p.retryFrom(&inflight[0])
			}
			if err != nil {
				fail(fmt.Errorf("publish %s: %w", inflight[0].item.ID, err))
			}
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
	seq  uint64    // the stream sequence it gets if stored; 0: not known
	// In perWorkspace mode: held says the stream held it already (f is
	// a storedAck); refused counts the refusals for a wrong last
	// sequence in a row (retryFrom).
	held    bool
	refused int
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
	if p.perWorkspace {
		return p.publishFrom(inflight)
	}
	p.mu.Lock()
	behind := p.behind
	if behind && len(inflight) == 0 {
		p.behind, p.queue, p.queued = false, nil, 0
	}
	p.mu.Unlock()
	if !behind && !p.lastKnown && len(inflight) == 0 {
		// Nothing to expect the stream's last sequence to be: the outbox
		// goes from the database, after the stream's state is read.
		p.mu.Lock()
		p.behind, p.queue, p.queued = true, nil, 0
		p.mu.Unlock()
		behind = true
	}
	if behind {
		if len(inflight) > 0 {
			return inflight, nil // read the outbox once they are confirmed
		}
		return p.publishStored()
	}
	for len(inflight) < maxInFlight {
		if n := len(inflight); n > 0 && inflight[n-1].seq == 0 {
			return inflight, nil // nothing to expect behind it until it is confirmed
		}
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
// (Signal ids increase in commit order). It reads the stream's state when
// it does not know the stream's last sequence (at start, after a failure);
// when that fails too it publishes one item, whose acknowledgement tells
// it. Knowing it, the stream holds nothing after the last confirmed item:
// each item published after that one expected it.
func (p *publisher) publishStored() ([]sent, error) {
	held := ""
	if !p.lastKnown {
		id, seq, err := p.lastHeld()
		if err != nil {
			// The stream's window for repeats still drops those it
			// holds from the last two minutes.
			p.lg.Warn("read the signal stream's last signal; publishing the outbox from the last confirmed one", "err", err)
		} else {
			held, p.last, p.lastKnown = id, seq, true
		}
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
		if !p.lastKnown && len(items) > 1 {
			items, full = items[:1], true // the rest once it is confirmed
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
// holds none) and the stream's last sequence. The stream holds signals in
// emission order (each publish expects the stream's last sequence, and only
// the daemon publishes there), so it holds every signal up to that one:
// those the outbox still has were published and not seen confirmed, by a
// run that stopped or a publish that failed, and are not published again.
// The stream's own window for repeats (signalsDedupeWindow) is short.
func (p *publisher) lastHeld() (string, uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	st, err := p.js.Stream(ctx, signalStream)
	if err != nil {
		return "", 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return "", 0, err
	}
	if info.State.Msgs == 0 {
		return "", info.State.LastSeq, nil
	}
	m, err := st.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		return "", 0, err
	}
	return m.Header.Get(jetstream.MsgIDHeader), info.State.LastSeq, nil
}

// push publishes one signal behind inflight, expecting the stream's last
// sequence to be the one the last of them gets (or, with none in flight,
// the stream's last as known), and returns inflight with it. With neither
// known it publishes the signal without an expectation; nothing is pushed
// behind it (publish, publishStored).
//
// Why sequences and not the previous signal's id (Nats-Expected-Last-Msg-Id):
// a replicated stream checks an expected id when each replica applies the
// message, and nats-server (2.15.2) takes a mismatch there for a store
// failure: every replica marks the stream failed and it takes nothing more
// until its servers restart. A gap in a pipeline of publishes (one lost
// with a NATS node, or dropped by a server not yet the stream's new leader)
// does exactly that. An expected sequence is checked by the leader before
// it proposes the message, and a mismatch only refuses it.
func (p *publisher) push(inflight []sent, it runtime.OutboxItem) ([]sent, error) {
	expect, known := p.last, p.lastKnown
	if n := len(inflight); n > 0 {
		expect = inflight[n-1].seq
		known = expect != 0
	}
	f, err := p.send(it.ID, it.Subject, it.Signal, expect, known)
	if err != nil {
		return inflight, err
	}
	p.high = max(p.high, it.ID)
	s := sent{item: it, f: f, at: time.Now()}
	if known {
		s.seq = expect + 1
	}
	return append(inflight, s), nil
}

// confirm removes the confirmed prefix of inflight from the outbox; ack
// is the first's acknowledgement.
func (p *publisher) confirm(inflight []sent, ack *jetstream.PubAck) []sent {
	if p.perWorkspace {
		return p.confirmFrom(inflight, ack)
	}
	n := 1
	for n < len(inflight) {
		select {
		case a := <-inflight[n].f.Ok():
			ack = a
			n++
			continue
		default:
		}
		break
	}
	// A repeat's acknowledgement names where the stream stored it first,
	// which says nothing of the stream's last sequence.
	p.last, p.lastKnown = ack.Sequence, !ack.Duplicate
	p.confirmed(inflight[n-1].item, n)
	p.m.signalsPublished(n)
	p.publishing()
	return inflight[n:]
}

// publishing notes that signals are confirmed: the end of an outage, if
// one was going on.
func (p *publisher) publishing() {
	if !p.failedAt.IsZero() {
		// The end of an outage (a lost NATS node, a stream without a
		// leader, a full disk): said at the level its start was.
		p.lg.Warn("publishing signals again", "failing_for", time.Since(p.failedAt).Round(time.Millisecond))
		p.failedAt = time.Time{}
	}
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

// send publishes one signal with its id as Nats-Msg-Id and, when known is
// set, expect as the stream's last sequence it must find.
func (p *publisher) send(id, subject string, sig any, expect uint64, known bool) (jetstream.PubAckFuture, error) {
	msg, err := signalMsg(id, subject, sig)
	if err != nil {
		return nil, err
	}
	if known {
		msg.Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(expect, 10))
	}
	return p.js.PublishMsgAsync(msg)
}

// signalMsg returns the message of one signal, with its id as Nats-Msg-Id.
func signalMsg(id, subject string, sig any) (*nats.Msg, error) {
	b, err := json.Marshal(sig)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = b
	msg.Header.Set(jetstream.MsgIDHeader, id)
	return msg, nil
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

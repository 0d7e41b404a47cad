package daemon

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/runtime"
)

// The publisher's perWorkspace mode (publisher.go, runSignals): several
// daemons publish into one WACP_SIGNALS stream, each keeping its own
// workspaces' emission order with an expected sequence per sending
// workspace, one signal per workspace in flight.

// publishFrom is publish in perWorkspace mode. It publishes the outbox's
// items in order, from pending, which it fills from the database when
// behind (once every earlier publish is confirmed) and else from the
// queued items, up to maxInFlight unconfirmed; it stops at an item whose
// workspace has a signal in flight, until that one is confirmed. It
// returns the unconfirmed ones.
func (p *publisher) publishFrom(inflight []sent) ([]sent, error) {
	for len(inflight) < maxInFlight {
		if len(p.pending) == 0 {
			p.mu.Lock()
			switch {
			case p.behind && len(inflight) > 0:
				p.mu.Unlock()
				return inflight, nil // read the outbox once they are confirmed
			case p.behind:
				p.behind, p.queue, p.queued = false, nil, 0
				p.mu.Unlock()
				items, err := p.eng.OutboxAfter(p.cursor, maxInFlight)
				if err != nil {
					return inflight, err
				}
				if len(items) == maxInFlight {
					// More may follow: read again once these are confirmed.
					p.mu.Lock()
					p.behind, p.queue, p.queued = true, nil, 0
					p.mu.Unlock()
				}
				p.pending = items
			case len(p.queue) == 0:
				p.mu.Unlock()
				return inflight, nil
			default:
				c := p.queue[0]
				p.queue = p.queue[1:]
				p.queued -= len(c.Outbox)
				p.mu.Unlock()
				n := 0
				for n < len(c.Outbox) && c.Outbox[n].ID <= p.high {
					n++ // published from the database
				}
				p.pending = c.Outbox[n:]
			}
			if len(p.pending) == 0 {
				continue
			}
		}
		var ok bool
		var err error
		if inflight, ok, err = p.pushFrom(inflight, p.pending[0]); err != nil || !ok {
			return inflight, err
		}
		p.pending = p.pending[1:]
	}
	return inflight, nil
}

// pushFrom is push in perWorkspace mode: it publishes it behind inflight,
// expecting the stream sequence of the last signal stored from its
// workspace, and returns inflight with it. It publishes nothing and
// returns false when the workspace has a signal in flight. The last
// signal comes from lastFrom, or else from the stream (lastOf). When that
// signal is it or one emitted after it, the stream holds it already (its
// workspace's signals are stored in emission order, and a workspace's
// signal ids increase in that order): it is not published again, and its
// confirmation is ready (storedAck).
func (p *publisher) pushFrom(inflight []sent, it runtime.OutboxItem) ([]sent, bool, error) {
	from := it.Signal.From
	if p.sending[from] {
		return inflight, false, nil
	}
	last, ok := p.lastFrom.get(from)
	if !ok {
		var err error
		if last, err = p.lastOf(from); err != nil {
			return inflight, false, err
		}
		p.lastFrom.put(from, last)
	}
	s := sent{item: it, at: time.Now()}
	if last.id != "" && last.id >= it.ID {
		s.f, s.held = newStoredAck(last.seq), true
	} else {
		f, err := p.sendFrom(it, last.seq)
		if err != nil {
			return inflight, false, err
		}
		s.f = f
	}
	p.high = max(p.high, it.ID)
	p.sending[from] = true
	return append(inflight, s), true, nil
}

// retryFrom answers the stream's refusal of s for a wrong last sequence
// (perWorkspace mode): it reads the last signal stored from s's
// workspace again; when that is s or one emitted after it, s is stored
// (the refused publish was a repeat of one whose acknowledgement was
// lost) and confirmed with it, else s is published again, expecting it.
// s keeps its place in flight: nothing of its workspace is published
// behind it meanwhile.
func (p *publisher) retryFrom(s *sent) error {
	from := s.item.Signal.From
	last, err := p.lastOf(from)
	if err != nil {
		return err
	}
	p.lastFrom.put(from, last)
	s.refused++
	if last.id != "" && last.id >= s.item.ID {
		s.f, s.held = newStoredAck(last.seq), true
		return nil
	}
	f, err := p.sendFrom(s.item, last.seq)
	if err != nil {
		return err
	}
	s.f, s.at = f, time.Now()
	return nil
}

// confirmFrom is confirm in perWorkspace mode: it also learns, from each
// acknowledgement, the last signal stored from each workspace.
func (p *publisher) confirmFrom(inflight []sent, ack *jetstream.PubAck) []sent {
	n, published := 0, 0
	for {
		s := inflight[n]
		from := s.item.Signal.From
		delete(p.sending, from)
		switch {
		case s.held:
			// Confirmed from the stream's last signal of the workspace,
			// which lastFrom has.
		case ack.Duplicate:
			// A repeat's acknowledgement names where the stream stored it
			// first: the workspace's last is read again when needed.
			p.lastFrom.forget(from)
			published++
		default:
			p.lastFrom.put(from, lastSignal{id: s.item.ID, seq: ack.Sequence})
			published++
		}
		if n++; n == len(inflight) {
			break
		}
		var ok bool
		select {
		case ack, ok = <-inflight[n].f.Ok():
		default:
		}
		if !ok {
			break
		}
	}
	p.confirmed(inflight[n-1].item, n)
	p.m.signalsPublished(published)
	p.publishing()
	return inflight[n:]
}

// forgetInFlight, in perWorkspace mode, forgets what a failure leaves
// unknown: the last signal stored from each workspace with one in flight
// (it may be stored or not), and the items pending (the outbox is read
// again).
func (p *publisher) forgetInFlight(inflight []sent) {
	if !p.perWorkspace {
		return
	}
	for _, s := range inflight {
		p.lastFrom.forget(s.item.Signal.From)
	}
	clear(p.sending)
	p.pending = nil
}

// sendFrom publishes it with its id as Nats-Msg-Id, expecting expect as
// the stream sequence of the last signal from its workspace (0: none).
//
// Unlike an expected id (see push), an expected sequence for a subject is
// checked by the stream's leader before it proposes the message, and a
// mismatch only refuses it, on a replicated stream too: nats-server 2.15.2
// answers 10071 (wrong last sequence) and the stream takes the next
// publish (TestExpectedSubjectSequenceOnReplicatedStream).
func (p *publisher) sendFrom(it runtime.OutboxItem, expect uint64) (jetstream.PubAckFuture, error) {
	msg, err := signalMsg(it.ID, it.Subject, it.Signal)
	if err != nil {
		return nil, err
	}
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
	msg.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, fromFilter(it.Signal.From))
	return p.js.PublishMsgAsync(msg)
}

// fromFilter is the subject filter of the signals from workspace ws, to
// any recipient (wacp.v1.sig.<to>.<from>.<type>).
func fromFilter(ws string) string { return "wacp.v1.sig.*." + ws + ".*" }

// lastOf reads the last signal the stream holds from workspace ws (the
// zero lastSignal when it holds none).
func (p *publisher) lastOf(ws string) (lastSignal, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	if p.stream == nil {
		st, err := p.js.Stream(ctx, signalStream)
		if err != nil {
			return lastSignal{}, fmt.Errorf("read the last signal from %s: %w", ws, err)
		}
		p.stream = st
	}
	m, err := p.stream.GetLastMsgForSubject(ctx, fromFilter(ws))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return lastSignal{}, nil
	case err != nil:
		p.stream = nil // looked up again next time
		return lastSignal{}, fmt.Errorf("read the last signal from %s: %w", ws, err)
	}
	return lastSignal{id: m.Header.Get(jetstream.MsgIDHeader), seq: m.Sequence}, nil
}

// wrongLastSeq reports whether err is the stream's refusal of a publish
// for a wrong last sequence: 10071, or 10164 when the leader has a
// message of the same filter not yet stored.
func wrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// storedAck is the confirmation of a signal the stream held already
// (perWorkspace mode): ready at once, a repeat's, at seq.
type storedAck chan *jetstream.PubAck

func newStoredAck(seq uint64) storedAck {
	c := make(storedAck, 1)
	c <- &jetstream.PubAck{Stream: signalStream, Sequence: seq, Duplicate: true}
	return c
}

func (a storedAck) Ok() <-chan *jetstream.PubAck { return a }
func (a storedAck) Err() <-chan error            { return nil }
func (a storedAck) Msg() *nats.Msg               { return nil }

// lastSignal is the last signal the stream holds from a workspace: its id
// and stream sequence (the zero value: none).
type lastSignal struct {
	id  string
	seq uint64
}

// lastSignals is the last signal stored from each of at most max
// workspaces, the least recently used forgotten past that. It is not
// safe for concurrent use.
type lastSignals struct {
	max   int
	order *list.List // of *lastEntry, the most recently used first
	by    map[string]*list.Element
}

type lastEntry struct {
	ws   string
	last lastSignal
}

func newLastSignals(max int) *lastSignals {
	return &lastSignals{max: max, order: list.New(), by: map[string]*list.Element{}}
}

// get returns the last signal from ws, and whether it is known.
func (c *lastSignals) get(ws string) (lastSignal, bool) {
	e, ok := c.by[ws]
	if !ok {
		return lastSignal{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lastEntry).last, true
}

// put records last as the last signal from ws.
func (c *lastSignals) put(ws string, last lastSignal) {
	if e, ok := c.by[ws]; ok {
		e.Value.(*lastEntry).last = last
		c.order.MoveToFront(e)
		return
	}
	c.by[ws] = c.order.PushFront(&lastEntry{ws: ws, last: last})
	if c.order.Len() > c.max {
		e := c.order.Back()
		c.order.Remove(e)
		delete(c.by, e.Value.(*lastEntry).ws)
	}
}

// forget drops what is known of ws.
func (c *lastSignals) forget(ws string) {
	if e, ok := c.by[ws]; ok {
		c.order.Remove(e)
		delete(c.by, ws)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/internal/hwtui"
	"github.com/wacpd/wacpd/trail"
)

// The terminal UI of wacp highway (package hwtui) over the client.

func init() {
	runTUI = func(c *cli, cl *client.Client) error {
		// A token that may not read the queue fails here, as any command
		// does, rather than in a UI that would retry forever.
		if _, err := cl.HighwayQueue(c.ctx, false); err != nil {
			return err
		}
		src := &tuiSource{opts: c.opts, cl: cl}
		defer src.close()
		return hwtui.Run(c.ctx, src, c.stdin, c.stdout)
	}
}

// How the change feed checks that the daemon is there: the live trail is
// core NATS, and while nats.go reconnects a subscription just waits, so a
// daemon that went away is seen by asking it something.
const (
	probeEvery    = time.Second
	probeTimeout  = 2 * time.Second
	probeFailures = 2 // in a row, to end the feed
)

// How much of a workspace's trail Inspect reads, and shows.
const (
	inspectPages  = 50 // of up to trail.MaxLimit entries
	inspectRecent = 10
)

// tuiSource is hwtui.Source over a user's client.
type tuiSource struct {
	opts client.Options // to dial again

	mu sync.Mutex // guards cl
	cl *client.Client
}

var _ hwtui.Source = (*tuiSource)(nil)

func (s *tuiSource) client() *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cl
}

// close closes the connection in use (the cli closes the first one too;
// closing twice does nothing).
func (s *tuiSource) close() { s.client().Close() }

// Queue returns the pending gates. nats.go reconnects on its own after a
// daemon restart, holding calls meanwhile, but gives up after some
// reconnect attempts (about two minutes by default) and closes the
// connection; a call that fails as unreachable before its deadline (a
// closed connection, no responders) therefore dials again, and the new
// connection replaces the old one when it works.
func (s *tuiSource) Queue(ctx context.Context) ([]highway.Gate, error) {
	cl := s.client()
	gates, err := cl.HighwayQueue(ctx, false)
	if err == nil || !errors.Is(err, client.ErrUnreachable) || ctx.Err() != nil {
		return gates, err
	}
	ncl, derr := client.Dial(ctx, s.opts)
	if derr != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.cl == cl {
		s.cl = ncl
		cl.Close()
	} else {
		ncl.Close() // replaced meanwhile
		ncl = s.cl
	}
	s.mu.Unlock()
	return ncl.HighwayQueue(ctx, false)
}

func (s *tuiSource) Resolve(ctx context.Context, req highway.ResolveRequest) (highway.Gate, error) {
	return s.client().Resolve(ctx, req)
}

// Changes follows the gate events of the live trail (gate_triggered,
// gate_resolved, gate_timeout of every workspace; one subscription each,
// so the rest of the trail does not reach the UI) and probes the daemon
// with system.info every probeEvery. It ends with an error when a
// subscription fails or probeFailures probes in a row do. The first
// answer of the probe also calls fn: a gate opened before the
// subscriptions were made, or while the daemon was away, is read then.
func (s *tuiSource) Changes(ctx context.Context, fn func()) error {
	cl := s.client()
	parent := ctx
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	var fnMu sync.Mutex // fn is called from one goroutine at a time
	call := func() {
		fnMu.Lock()
		defer fnMu.Unlock()
		fn()
	}
	var wg sync.WaitGroup
	for _, typ := range []trail.EventType{trail.EventGateTriggered, trail.EventGateResolved, trail.EventGateTimeout} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cl.TailTrail(ctx, "*."+string(typ), func(trail.Entry) error {
				call()
				return nil
			})
			if err != nil {
				cancel(fmt.Errorf("follow %s: %w", typ, err))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := probe(ctx, cl, call); err != nil {
			cancel(err)
		}
	}()
	<-ctx.Done()
	wg.Wait()
	if parent.Err() != nil {
		return nil
	}
	return context.Cause(ctx)
}

// probe asks cl for system.info every probeEvery until ctx ends (nil) or
// probeFailures calls in a row fail (an error). It calls first after the
// first answer.
func probe(ctx context.Context, cl *client.Client, first func()) error {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	failed, answered := 0, false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		_, err := cl.Info(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if failed++; failed >= probeFailures {
				return fmt.Errorf("the daemon does not answer: %w", err)
			}
		default:
			failed = 0
			if !answered {
				answered = true
				first()
			}
		}
	}
}

// Inspect describes g's context from the trail: its workspace (for a task,
// which has none yet, the workspace of its gate_triggered entry: the
// coordinator's), that workspace's state from its latest
// workspace_state_changed entry, its chain head from its latest
// checkpoint_created entry, and its last entries, one line each.
func (s *tuiSource) Inspect(ctx context.Context, g highway.Gate) ([]string, error) {
	cl := s.client()
	ws, note := deref(g.Workspace), ""
	if ws == "" {
		e, err := gateEntry(ctx, cl, g.ID)
		if err != nil {
			return nil, err
		}
		ws, note = e.Workspace, " (the gate's own entries; a task is bound to no workspace yet)"
	}
	var lines []string
	if g.TaskRef != nil {
		lines = append(lines, "task        "+*g.TaskRef)
	}
	if g.GraphRef != nil {
		lines = append(lines, "graph       "+*g.GraphRef)
	}
	if ws == "" {
		return append(lines, "workspace   none"), nil
	}
	lines = append(lines, "workspace   "+ws+note)

	var (
		state, created, head *trail.Entry
		recent               []trail.Entry
		n                    int
		more                 bool
	)
	q := client.TrailQuery{Workspace: ws, Limit: trail.MaxLimit}
	for pages := 0; ; pages++ {
		if pages == inspectPages {
			more = true
			break
		}
		page, err := cl.ReadTrail(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("read the trail of %s: %w", ws, err)
		}
		for _, e := range page.Entries {
			n++
			switch e.EventType {
			case trail.EventWorkspaceCreated:
				created = &e
			case trail.EventWorkspaceStateChanged:
				state = &e
			case trail.EventCheckpointCreated:
				head = &e
			}
			recent = append(recent, e)
			if len(recent) > inspectRecent {
				recent = recent[1:]
			}
		}
		if page.Next == nil {
			break
		}
		q.After = *page.Next
	}

	lines = append(lines, "state       "+stateLine(state, created))
	lines = append(lines, "chain head  "+headLine(ctx, cl, head))
	what := fmt.Sprintf("recent trail: the last %d of its %d entries", len(recent), n)
	if more {
		what = fmt.Sprintf("trail: its first %d entries only were read (it has more); the last of them", n)
	}
	lines = append(lines, "", what+":")
	for _, e := range recent {
		lines = append(lines, "  "+timeline(e)) // as wacp trail tail prints it
	}
	return lines, nil
}

// gateEntry returns the gate_triggered entry of gate id.
func gateEntry(ctx context.Context, cl *client.Client, id string) (trail.Entry, error) {
	q := client.TrailQuery{EventType: trail.EventGateTriggered, Body: map[string]string{"gate_id": id}, Limit: trail.MaxLimit}
	for pages := 0; pages < inspectPages; pages++ {
		page, err := cl.ReadTrail(ctx, q)
		if err != nil {
			return trail.Entry{}, fmt.Errorf("find the entry of gate %s: %w", id, err)
		}
		for _, e := range page.Entries {
			var b struct {
				GateID string `json:"gate_id"`
			}
			if json.Unmarshal(e.Body, &b) == nil && b.GateID == id {
				return e, nil
			}
		}
		if page.Next == nil {
			break
		}
		q.After = *page.Next
	}
	return trail.Entry{}, fmt.Errorf("no gate_triggered entry for gate %s", id)
}

// stateLine is a workspace's state from its latest state change, else its
// creation.
func stateLine(state, created *trail.Entry) string {
	if state != nil {
		var b struct {
			From    string `json:"from_state"`
			To      string `json:"to_state"`
			Trigger string `json:"trigger"`
		}
		if json.Unmarshal(state.Body, &b) == nil && b.To != "" {
			return fmt.Sprintf("%s since %s (from %s, %s)", b.To, state.Timestamp, b.From, b.Trigger)
		}
	}
	if created != nil {
		return "created at " + created.Timestamp + ", no state change since"
	}
	return "unknown (no workspace_created or workspace_state_changed entry read)"
}

// headLine is the checkpoint of the latest checkpoint_created entry e,
// with its intent when the daemon gives the checkpoint (audit.checkpoint.get).
func headLine(ctx context.Context, cl *client.Client, e *trail.Entry) string {
	if e == nil {
		return "none: no checkpoint yet"
	}
	var b struct {
		ID         string `json:"checkpoint_id"`
		Type       string `json:"type"`
		Status     string `json:"status"`
		Confidence string `json:"confidence"`
	}
	if err := json.Unmarshal(e.Body, &b); err != nil || b.ID == "" {
		return "unreadable checkpoint_created entry " + e.ID
	}
	line := fmt.Sprintf("%s  %s, %s, confidence %s, at %s", b.ID, b.Type, b.Status, b.Confidence, e.Timestamp)
	cp, err := cl.AuditCheckpoint(ctx, b.ID)
	if err != nil {
		return line + " (intent unavailable: " + err.Error() + ")"
	}
	return line + ": " + strings.TrimSpace(cp.Intent)
}

package daemon

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/console"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The web console (issue 18) on the -http listener: package console
// renders it; this is its backend. A session's token is looked up again
// at every request and every few seconds of a live stream, so a revoked
// token ends the session. What a principal sees is what the wire gives
// it: the operations run in-process (invokeJSON) with a NATS request's
// checks, and the two views the wire has no operation for read the engine
// behind audit.trail.read's scoping rule (userScope):
//
//   - the workspace tree: every workspace for an auditor; for a user, the
//     workspaces whose entries runtime.UserTrailScope keeps (all with
//     view_trail_any, else its own);
//   - a workspace's chain: for a user, after UserTrailScope authorizes a
//     read of that workspace's trail (as audit.trail.read with a workspace
//     filter does, recording a denial), then Engine.ListCheckpoints.
//
// The live trail is the engine's commits (OnCommit), fanned out to the
// streams, each filtered by its principal's scope.

// consoleOps are the operations the console may run; any other is refused
// before it reaches the daemon.
var consoleOps = map[string]bool{
	"highway.queue": true, "highway.get": true, "highway.resolve": true,
	"audit.trail.read": true, "audit.trail.verify": true, "audit.sth": true, "audit.checkpoint.get": true,
}

// mountConsole serves the web console at / (issue 18). The patterns of
// the listener's other surfaces (/carp/v1/…, /mcp) are more specific and
// keep their requests.
func (r *Daemon) mountConsole(mux *http.ServeMux) (close func()) {
	hub := newTrailHub()
	r.eng.OnCommit(hub.onCommit)
	c, err := console.New(console.Config{Backend: &consoleBackend{r: r, hub: hub}, Logger: r.cfg.Logger})
	if err != nil {
		r.cfg.Logger.Error("web console disabled", "err", err)
		return func() {}
	}
	mux.Handle("/", c)
	return c.Close
}

type consoleBackend struct {
	r   *Daemon
	hub *trailHub
}

var _ console.Backend = (*consoleBackend)(nil)

// principal returns the live user or auditor of token.
func (b *consoleBackend) principal(token string) (principal.Principal, error) {
	p, ok := b.r.tok.lookup(token)
	if !ok || !b.r.live(p) {
		return p, &console.Refusal{Code: wire.CodeUnauthorized, Status: http.StatusUnauthorized, Message: "the token no longer authenticates"}
	}
	if p.Kind != principal.KindUser && p.Kind != principal.KindAuditor {
		return p, &console.Refusal{Code: wire.CodePermissionDenied, Status: http.StatusForbidden, Message: "the console takes user and auditor tokens only"}
	}
	return p, nil
}

func (b *consoleBackend) Identify(token string) (console.Identity, bool) {
	p, ok := b.r.tok.lookup(token)
	if !ok || !b.r.live(p) {
		return console.Identity{}, false
	}
	id := console.Identity{Kind: string(p.Kind), Name: p.Name, Active: true}
	if p.Kind == principal.KindUser {
		u, ok := b.r.eng.User(p.Name)
		id.Capabilities, id.Active = u.Capabilities, ok && u.State == user.Active
	}
	return id, true
}

func (b *consoleBackend) Call(ctx context.Context, token, op string, body []byte) ([]byte, error) {
	if !consoleOps[op] {
		return nil, &console.Refusal{Code: wire.CodePermissionDenied, Status: http.StatusForbidden, Message: "the console does not run " + op}
	}
	p, err := b.principal(token)
	if err != nil {
		return nil, err
	}
	data, err := b.r.invokeJSON(ctx, p, op, body)
	var f *Refusal
	if errors.As(err, &f) {
		return nil, &console.Refusal{Code: f.Code, Status: f.Status, Message: f.Message}
	}
	return data, err
}

// scope is what p may read of the trail (nil: everything), as
// audit.trail.read decides it.
func (b *consoleBackend) scope(ctx context.Context, p principal.Principal, ws string) (func(trail.Entry) bool, error) {
	keep, err := b.r.userScope(ctx, caller{p: p}, ws, false)
	return keep, consoleErr(err)
}

// consoleErr turns an engine refusal into the console's.
func consoleErr(err error) error {
	if err == nil {
		return nil
	}
	var re *runtime.Error
	if errors.As(err, &re) {
		return &console.Refusal{Code: re.Code, Status: wire.LookupCode(re.Code).Status, Message: runtime.Message(err)}
	}
	return err
}

func (b *consoleBackend) Workspaces(ctx context.Context, token string) ([]workspace.Workspace, error) {
	p, err := b.principal(token)
	if err != nil {
		return nil, err
	}
	keep, err := b.scope(ctx, p, "")
	if err != nil {
		return nil, err
	}
	all, err := b.r.eng.ListWorkspaces(ctx, b.r.eng.Root(), "", "")
	if err != nil {
		return nil, consoleErr(err)
	}
	out := make([]workspace.Workspace, 0, len(all))
	for _, w := range all {
		if keep == nil || keep(trail.Entry{Workspace: w.ID}) {
			out = append(out, *w)
		}
	}
	return out, nil
}

func (b *consoleBackend) Checkpoints(ctx context.Context, token, ws, after string, limit int) ([]checkpointchain.Checkpoint, error) {
	p, err := b.principal(token)
	if err != nil {
		return nil, err
	}
	if ws == "" {
		return nil, &console.Refusal{Code: wire.CodeInvalidStructure, Status: http.StatusBadRequest, Message: "a chain is one workspace's"}
	}
	if _, err := b.scope(ctx, p, ws); err != nil {
		return nil, err
	}
	cps, err := b.r.eng.ListCheckpoints(ctx, b.r.eng.Root(), ws, after, limit)
	return cps, consoleErr(err)
}

// rescopeEvery bounds how long a live stream filters with a user's scope
// before reading it again; the entries that change a scope (a workspace
// created or transferred, a user's capabilities or state) read it at once.
const rescopeEvery = 5 * time.Second

// recheckEvery is how often a quiet live stream checks its token.
const recheckEvery = 5 * time.Second

// rescopes are the events after which a user's scope is read again.
var rescopes = map[trail.EventType]bool{
	trail.EventWorkspaceCreated: true, trail.EventWorkspaceOwnershipTransferred: true,
	trail.EventCapabilityGranted: true, trail.EventCapabilityRevoked: true,
	trail.EventUserSuspended: true, trail.EventUserResumed: true, trail.EventUserBlocked: true,
	trail.EventUserUnblocked: true, trail.EventUserDeactivated: true, trail.EventUserReactivated: true,
}

func (b *consoleBackend) Follow(ctx context.Context, token string, fn func(trail.Entry) error) error {
	p, err := b.principal(token)
	if err != nil {
		return console.ErrEnded
	}
	sub := b.hub.subscribe()
	defer b.hub.unsubscribe(sub)
	keep, err := b.scope(ctx, p, "")
	if err != nil {
		return err
	}
	scoped := time.Now()
	tick := time.NewTicker(recheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if _, err := b.principal(token); err != nil {
				return console.ErrEnded
			}
		case <-sub.wake:
			entries, lagged := sub.take()
			if lagged {
				return console.ErrLagged
			}
			if _, err := b.principal(token); err != nil {
				return console.ErrEnded
			}
			for _, e := range entries {
				if p.Kind == principal.KindUser && (rescopes[e.EventType] || time.Since(scoped) > rescopeEvery) {
					if keep, err = b.scope(ctx, p, ""); err != nil {
						return err
					}
					scoped = time.Now()
				}
				if keep != nil && !keep(e) {
					continue
				}
				if err := fn(e); err != nil {
					return err
				}
			}
		}
	}
}

// maxBehind is how many entries a live stream may have waiting before it
// is dropped as lagged.
const maxBehind = 4096

// trailHub fans the engine's committed entries out to the live streams.
// onCommit runs under the engine's lock: it only appends and wakes.
type trailHub struct {
	mu   sync.Mutex // guards subs
	subs map[*trailSub]bool
}

type trailSub struct {
	wake    chan struct{} // has a value when entries wait
	mu      sync.Mutex    // guards entries and lagged
	entries []trail.Entry
	lagged  bool
}

func newTrailHub() *trailHub { return &trailHub{subs: map[*trailSub]bool{}} }

func (h *trailHub) subscribe() *trailSub {
	s := &trailSub{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[s] = true
	h.mu.Unlock()
	return s
}

func (h *trailHub) unsubscribe(s *trailSub) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

func (h *trailHub) onCommit(c runtime.Commit) {
	if len(c.Entries) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.mu.Lock()
		if !s.lagged {
			if len(s.entries)+len(c.Entries) > maxBehind {
				s.lagged, s.entries = true, nil
			} else {
				s.entries = append(s.entries, c.Entries...)
			}
		}
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// take returns the entries waiting, or lagged.
func (s *trailSub) take() ([]trail.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.entries
	s.entries = nil
	return out, s.lagged
}

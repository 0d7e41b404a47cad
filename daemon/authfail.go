package daemon

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"
)

// Refused connections are recorded as authentication_failed (WACP Security
// §9: security events are never silent), but a client that reconnects with a
// bad token as fast as it can must not be able to fill the disk with trail
// entries. The NATS server's authentication callback only counts refusals
// per remote host (it never blocks and drops nothing); the recorder writes,
// once per authFailWindow, one entry per host with the number of refusals
// (body fields count and window, beyond the spec's), and at most
// authFailMaxSources hosts per window: the rest share one entry whose
// source is "other". Every refusal is counted in some entry.

const (
	authFailWindow     = time.Second
	authFailMaxSources = 100
)

// A user's successful authentication is recorded too
// (authentication_succeeded, User spec §3.3), once per user per daemon
// run: the first time the user's token is accepted after a start. Later
// connections write nothing, so that a token holder cannot grow the trail
// by reconnecting; the trail says from when on a user was authenticated,
// not every connection.

// authFailures counts refused connections by remote host, and notes the
// users authenticated for the first time since the start.
type authFailures struct {
	mu     sync.Mutex
	counts map[string]int
	seen   map[string]bool // users authenticated since the start
	fresh  []string        // of them, those not recorded yet
	kick   chan struct{}
}

func newAuthFailures() *authFailures {
	return &authFailures{counts: map[string]int{}, seen: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// succeeded notes that user authenticated; it never blocks.
func (a *authFailures) succeeded(user string) {
	a.mu.Lock()
	first := !a.seen[user]
	if first {
		a.seen[user] = true
		a.fresh = append(a.fresh, user)
	}
	a.mu.Unlock()
	if first {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

// takeUsers returns and forgets the users to record.
func (a *authFailures) takeUsers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.fresh
	a.fresh = nil
	return out
}

// add counts one refusal from remote (host:port); it never blocks.
func (a *authFailures) add(remote string) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a.mu.Lock()
	a.counts[host]++
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// take returns and resets the counts, as entries to write: one per host, in
// host order, and the hosts beyond the first max folded into "other".
func (a *authFailures) take(max int) []authFailCount {
	a.mu.Lock()
	counts := a.counts
	a.counts = map[string]int{}
	a.mu.Unlock()
	out := make([]authFailCount, 0, len(counts))
	for host, n := range counts {
		out = append(out, authFailCount{host, n})
	}
	slices.SortFunc(out, func(x, y authFailCount) int {
		if x.n != y.n {
			return y.n - x.n // the busiest sources keep their own entry
		}
		if x.source < y.source {
			return -1
		}
		return 1
	})
	if len(out) > max {
		other := authFailCount{source: "other"}
		for _, c := range out[max:] {
			other.n += c.n
		}
		out = append(out[:max], other)
	}
	return out
}

type authFailCount struct {
	source string
	n      int
}

// recordAuthFailures writes the counted refusals until ctx is done: at the
// first refusal after a quiet window at once, then at most once per window.
func (r *Daemon) recordAuthFailures(ctx context.Context) {
	a := r.authFailures
	defer func() { r.writeAuthEvents(a) }() // what the last window counted
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		}
		if wait := authFailWindow - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		r.writeAuthEvents(a)
	}
}

func (r *Daemon) writeAuthEvents(a *authFailures) {
	for _, u := range a.takeUsers() {
		if err := r.eng.RecordAuthSuccess(context.Background(), u); err != nil {
			r.cfg.Logger.Error("record authentication_succeeded", "err", err, "user", u)
		}
	}
	for _, c := range a.take(authFailMaxSources) {
		if err := r.eng.RecordAuthFailure(context.Background(), c.source, c.n, authFailWindow); err != nil {
			r.cfg.Logger.Error("record authentication_failed", "err", err, "source", c.source, "count", c.n)
		}
	}
}

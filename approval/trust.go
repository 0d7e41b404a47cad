package approval

import (
	"fmt"
	"slices"
	"strings"
)

// Boundary kinds (seed 003, "Trust-state categories"): trust is kept per
// boundary and never moves from one to another.
const (
	BoundaryTool     = "tool"     // tool:<action_id>
	BoundaryPath     = "path"     // path:<cleaned path>
	BoundaryProvider = "provider" // provider:<provider class>
	BoundaryWorkflow = "workflow" // workflow:<atlas_id>: the steward's domain of work
)

// Boundary returns the boundary of kind named name.
func Boundary(kind, name string) string { return kind + ":" + name }

// ParseBoundary checks that b is kind:name with a known kind.
func ParseBoundary(b string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(b, ":")
	if !ok || name == "" || !slices.Contains([]string{BoundaryTool, BoundaryPath, BoundaryProvider, BoundaryWorkflow}, kind) {
		return "", "", fmt.Errorf("%w: %q is not tool:, path:, provider: or workflow: and a name", ErrBoundary, b)
	}
	return kind, name, nil
}

// Boundaries returns the boundaries a request touches: its tool, each of
// its paths, its provider class and its workflow (the atlas).
func Boundaries(c Canonical, a Action) []string {
	out := []string{Boundary(BoundaryTool, c.Tool)}
	for _, p := range c.Paths(a.PathParameters) {
		out = append(out, Boundary(BoundaryPath, p))
	}
	if a.ProviderClass != "" {
		out = append(out, Boundary(BoundaryProvider, a.ProviderClass))
	}
	if c.Context.Atlas != "" {
		out = append(out, Boundary(BoundaryWorkflow, c.Context.Atlas))
	}
	return out
}

// Trust event kinds.
const (
	TrustViolation = "violation"
	TrustRestored  = "restored"
)

// Trust states of a boundary.
const (
	Trusted   = "trusted"
	Untrusted = "untrusted"
)

// TrustEvent is one event of a session's trust log.
type TrustEvent struct {
	Seq      int    `json:"seq"`
	Boundary string `json:"boundary"`
	Kind     string `json:"kind"`   // violation, restored
	Reason   string `json:"reason"` // arguments_mutated, constraint_violated, ...
	At       string `json:"at"`
	Actor    string `json:"actor"`
}

// BoundaryTrust is a boundary's state, folded from its events.
type BoundaryTrust struct {
	Boundary   string `json:"boundary"`
	State      string `json:"state"`
	Violations int    `json:"violations"`
	Since      string `json:"since,omitempty"`  // when the state began
	Reason     string `json:"reason,omitempty"` // of the event that set it
	SinceSeq   int    `json:"-"`
}

// Trust is the state of the boundaries that have events; any other is
// trusted.
type Trust map[string]BoundaryTrust

// Fold replays events, in order: the first violation on a trusted
// boundary makes it untrusted at once; further ones are counted; a
// restore makes it trusted again.
func Fold(events []TrustEvent) Trust {
	t := Trust{}
	for _, ev := range events {
		b := t.Of(ev.Boundary)
		switch ev.Kind {
		case TrustViolation:
			b.Violations++
			if b.State == Trusted {
				b.State, b.Since, b.Reason, b.SinceSeq = Untrusted, ev.At, ev.Reason, ev.Seq
			}
		case TrustRestored:
			if b.State == Untrusted {
				b.State, b.Since, b.Reason, b.SinceSeq = Trusted, ev.At, ev.Reason, ev.Seq
			}
		}
		t[ev.Boundary] = b
	}
	return t
}

// Of returns boundary b's state.
func (t Trust) Of(b string) BoundaryTrust {
	if s, ok := t[b]; ok {
		return s
	}
	return BoundaryTrust{Boundary: b, State: Trusted}
}

// Snapshot returns the state of each boundary, in order.
func (t Trust) Snapshot(boundaries []string) []BoundaryTrust {
	out := make([]BoundaryTrust, 0, len(boundaries))
	for _, b := range boundaries {
		out = append(out, t.Of(b))
	}
	return out
}

// Untrusted returns the untrusted boundaries among boundaries.
func (t Trust) Untrusted(boundaries []string) []BoundaryTrust {
	var out []BoundaryTrust
	for _, b := range boundaries {
		if s := t.Of(b); s.State == Untrusted {
			out = append(out, s)
		}
	}
	return out
}

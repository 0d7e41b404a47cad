package daemon

import (
	"sync"

	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// Admission (docs/security.md, "Fair admission"). Config.MaxInFlight (N)
// bounds the requests the daemon works on at once. So that no principal can
// take them all:
//
//   - each principal works on at most N/8 requests at once (at least 1),
//     except the coordinator, which may use every slot;
//   - agents together hold at most 3N/4 slots, users and auditors with them
//     at most 7N/8, so N/8 are always left for the auditors and users and
//     N/8 for the coordinator;
//   - a long poll (inbox.next or carp.approval with a wait) holds no slot while it waits: it
//     parks, and parked requests are bounded per principal (N/8) and in all
//     (16N).
//
// A request over a bound is answered unavailable at once and changes
// nothing. The figures for N=256: 32 per principal, agents 192, agents and
// auditors 224, 32 parked per principal, 4096 parked in all.

// class is a principal's admission class.
type class int

const (
	classAgent  class = iota
	classReader       // users and auditors
	classCoordinator
)

func classOf(p principal.Principal) class {
	switch p.Kind {
	case principal.KindCoordinator, kindDaemon:
		return classCoordinator
	case principal.KindUser, principal.KindAuditor:
		return classReader
	}
	return classAgent
}

// admission counts the slots in use. Its methods are safe for concurrent use.
type admission struct {
	n, perPrincipal, parkedMax int
	classMax                   [3]int // total slots a class (and those below it) may hold

	mu       sync.Mutex // guards the counts below
	busy     int
	byClass  [3]int
	byKey    map[string]int // slots held per principal
	parked   int
	parkedBy map[string]int
}

func newAdmission(n int) *admission {
	eighth := max(1, n/8)
	return &admission{
		n: n, perPrincipal: eighth, parkedMax: 16 * n,
		classMax: [3]int{max(1, n-2*eighth), max(1, n-eighth), n},
		byKey:    map[string]int{}, parkedBy: map[string]int{},
	}
}

// ticket is one admitted request's hold on a slot.
type ticket struct {
	a      *admission
	key    string
	cl     class
	parked bool
	done   bool
}

// admit takes a slot for a request of p, or reports why not.
func (a *admission) admit(p principal.Principal) (*ticket, error) {
	key, cl := p.String(), classOf(p)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.fitsLocked(key, cl); err != nil {
		return nil, err
	}
	a.takeLocked(key, cl, 1)
	return &ticket{a: a, key: key, cl: cl}, nil
}

func (a *admission) fitsLocked(key string, cl class) error {
	switch {
	case a.busy >= a.n:
		return runtime.Refuse(wire.CodeUnavailable, "the daemon is at its limit of %d requests in flight; retry", a.n)
	case cl != classCoordinator && a.byKey[key] >= a.perPrincipal:
		return runtime.Refuse(wire.CodeUnavailable, "this principal has %d requests in flight, its share; retry when one ends", a.perPrincipal)
	}
	held := 0 // slots held by this class and the classes below it
	for c := classAgent; c <= cl; c++ {
		held += a.byClass[c]
	}
	if held >= a.classMax[cl] {
		return runtime.Refuse(wire.CodeUnavailable, "the daemon's slots for %s requests are in use; retry", [...]string{"agent", "user and auditor", "coordinator"}[cl])
	}
	return nil
}

func (a *admission) takeLocked(key string, cl class, d int) {
	a.busy += d
	a.byClass[cl] += d
	if a.byKey[key] += d; a.byKey[key] == 0 {
		delete(a.byKey, key)
	}
}

// park gives the ticket's slot back for a wait that does no work; it fails
// (keeping the slot) when the principal or the daemon has as many parked
// requests as allowed.
func (t *ticket) park() error {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.parked || t.done {
		return nil
	}
	if a.parkedBy[t.key] >= a.perPrincipal {
		return runtime.Refuse(wire.CodeUnavailable, "this principal has %d waits open, its share; retry when one ends", a.perPrincipal)
	}
	if a.parked >= a.parkedMax {
		return runtime.Refuse(wire.CodeUnavailable, "the daemon has %d waits open, its limit; retry", a.parkedMax)
	}
	a.takeLocked(t.key, t.cl, -1)
	a.parked++
	a.parkedBy[t.key]++
	t.parked = true
	return nil
}

func (a *admission) unparkLocked(t *ticket) {
	a.parked--
	if a.parkedBy[t.key]--; a.parkedBy[t.key] == 0 {
		delete(a.parkedBy, t.key)
	}
	t.parked = false
}

// release ends the ticket's hold, parked or not. It is idempotent.
func (t *ticket) release() {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.done {
		return
	}
	if t.parked {
		a.unparkLocked(t)
	} else {
		a.takeLocked(t.key, t.cl, -1)
	}
	t.done = true
}

package clock

import (
	"crypto/rand"
	"io"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// IDs hands out strictly increasing ULIDs. It owns its entropy source behind a
// mutex, because ulid.Monotonic is not safe for concurrent use.
type IDs struct {
	mu      sync.Mutex // guards entropy and last
	entropy io.Reader
	last    ulid.ULID
}

// NewIDs returns a generator drawing randomness from entropy, or crypto/rand
// when entropy is nil.
func NewIDs(entropy io.Reader) *IDs {
	if entropy == nil {
		entropy = rand.Reader
	}
	return &IDs{entropy: ulid.Monotonic(entropy, 0)}
}

// New returns an ID for an event at t, greater than every ID returned before
// and every ID passed to Observe.
func (g *IDs) New(t time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), g.entropy)
	if err != nil || id.Compare(g.last) <= 0 {
		id = successor(g.last, t)
	}
	g.last = id
	return id.String()
}

// Observe raises the floor: later IDs are greater than id. Strings that are
// not ULIDs are ignored.
func (g *IDs) Observe(id string) {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if u.Compare(g.last) > 0 {
		g.last = u
	}
}

// successor returns the ULID right after last, keeping last's time when it is
// ahead of t (a wall clock that went back, or entropy overflow within one ms)
// or when t has no ULID time (before 1970 or after 10889).
func successor(last ulid.ULID, t time.Time) ulid.ULID {
	if ms := ulid.Timestamp(t); ms > last.Time() && ms <= ulid.MaxTime() {
		var u ulid.ULID
		_ = u.SetTime(ms)
		return u
	}
	next := last
	for i := len(next) - 1; i >= 6; i-- {
		next[i]++
		if next[i] != 0 {
			return next
		}
	}
	// The 80 random bits overflowed: move to the next millisecond.
	var u ulid.ULID
	_ = u.SetTime(last.Time() + 1)
	return u
}

// ValidID reports whether id is a ULID in its canonical form, as New returns
// them: 26 upper-case Crockford base32 characters. An id from elsewhere (a
// deployment's shared root) must pass it before it is used as one of ours.
func ValidID(id string) bool {
	u, err := ulid.ParseStrict(id)
	return err == nil && u.String() == id
}

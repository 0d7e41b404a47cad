// Package clocktest is a settable wall clock for tests: pass Fake.Now as a
// Config.Now, and move time with Advance instead of sleeping.
package clocktest

import (
	"sync"
	"time"
)

// Fake is a wall clock that moves only when told. It is safe for
// concurrent use.
type Fake struct {
	mu  sync.Mutex // guards now
	now time.Time
}

// New returns a Fake at 2026-03-01 12:00 UTC.
func New() *Fake {
	return &Fake{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

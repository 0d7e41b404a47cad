package clock

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Layout is the timestamp format of every record: RFC 3339, UTC, nanoseconds.
const Layout = "2006-01-02T15:04:05.000000000Z"

// ErrBadTimestamp is returned by Parse for a string not in Layout.
var ErrBadTimestamp = errors.New("clock: timestamp is not RFC 3339 UTC with nanoseconds")

// Format returns t in Layout.
func Format(t time.Time) string { return t.UTC().Format(Layout) }

// Parse parses a timestamp written by Format.
func Parse(s string) (time.Time, error) {
	if len(s) != len(Layout) {
		return time.Time{}, fmt.Errorf("%w: %q", ErrBadTimestamp, s)
	}
	t, err := time.Parse(Layout, s)
	// time.Parse also takes a comma before the fraction (ISO 8601 allows it);
	// only the form Format writes is a timestamp.
	if err != nil || Format(t) != s {
		return time.Time{}, fmt.Errorf("%w: %q", ErrBadTimestamp, s)
	}
	return t, nil
}

// Clock hands out strictly increasing timestamps. It is safe for concurrent use.
type Clock struct {
	now func() time.Time

	mu   sync.Mutex // guards last
	last time.Time
}

// New returns a clock reading now, or time.Now when now is nil.
func New(now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{now: now}
}

// Next returns a timestamp strictly after every one returned before and every
// one passed to Observe.
func (c *Clock) Next() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now().UTC().Round(0)
	if !t.After(c.last) {
		t = c.last.Add(time.Nanosecond)
	}
	c.last = t
	return t
}

// Now returns the current time without advancing the clock. Use it for
// durations, never for records.
func (c *Clock) Now() time.Time { return c.now() }

// Observe raises the clock's floor to t: later calls to Next return times after t.
func (c *Clock) Observe(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.last) {
		c.last = t.UTC()
	}
}

// Last returns the last timestamp handed out or observed.
func (c *Clock) Last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

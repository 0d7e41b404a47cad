package runtime

import (
	"testing"
	"time"

	"github.com/wacpd/wacpd/internal/dbupkeep"
)

// TestValueLogGCRunsOnSchedule: with a GC interval the engine runs value
// log GC passes in the background while it works, each without error, and
// Close stops them (TestMain's leak check would see a goroutine left).
func TestValueLogGCRunsOnSchedule(t *testing.T) {
	e := openTest(t, func(c *Config) { c.GCInterval = 2 * time.Millisecond })
	w := newWorker(t, e)
	var parent *string
	for range 20 {
		cp := checkpoint(t, e, w.ID, parent, "provisional")
		parent = &cp.ID
	}
	waitFor(t, "GC passes", func() bool { return e.gcPasses.Load() >= 3 })
	if _, err := dbupkeep.GCPass(e.db, nil); err != nil {
		t.Fatalf("GCPass: %v", err)
	}
	verify(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestValueLogGCInterval: a negative interval starts no GC loop, zero
// starts one every 10 minutes, an in-memory engine has none (no value
// log). Open records the loop it starts; the old test waited 20 ms for a
// pass that, with the 10-minute default, would not have come either.
func TestValueLogGCInterval(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*Config)
		want time.Duration
	}{
		{"off", func(c *Config) { c.GCInterval = -1 }, 0},
		{"default", func(c *Config) {}, defaultGCInterval},
		{"set", func(c *Config) { c.GCInterval = time.Hour }, time.Hour},
		{"in memory", func(c *Config) { c.InMemory, c.DataDir = true, "" }, 0},
	} {
		e := openTest(t, tt.mod)
		if e.gcInterval != tt.want {
			t.Errorf("%s: GC loop every %s, want %s (0: none)", tt.name, e.gcInterval, tt.want)
		}
	}
}

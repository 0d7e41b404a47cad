package runtime

import (
	"testing"
	"time"
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
	if _, err := e.gcPass(); err != nil {
		t.Fatalf("gcPass: %v", err)
	}
	verify(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestValueLogGCOff: a negative interval runs no GC.
func TestValueLogGCOff(t *testing.T) {
	e := openTest(t, func(c *Config) { c.GCInterval = -1 })
	newWorker(t, e)
	time.Sleep(20 * time.Millisecond)
	if n := e.gcPasses.Load(); n != 0 {
		t.Fatalf("%d GC passes with GC off", n)
	}
}

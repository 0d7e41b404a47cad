package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/wacpd/wacpd/trail/traillog"
)

// TestRunningCheckMovesTheMark: the running check reads back and checks
// what the engine wrote and moves the mark, so that the check at the next
// start reads only what came after it; with the running check off the
// mark stays where the start left it.
func TestRunningCheckMovesTheMark(t *testing.T) {
	for _, on := range []bool{true, false} {
		iv := -1 * time.Millisecond
		if on {
			iv = 20 * time.Millisecond
		}
		e := openTest(t, func(c *Config) { c.MarkInterval = iv })
		n := writeChain(t, e, 5)
		from := func() uint64 {
			res, err := traillog.Check(context.Background(), e.db, traillog.CheckOptions{Seg: e.seg})
			if err != nil || !res.OK() {
				t.Fatalf("Check = %+v, %v", res, err)
			}
			return res.From
		}
		if on {
			waitFor(t, "the running check to mark the entries written", func() bool { return from() >= n })
		} else if got := from(); got >= n || e.marks.Load() != 0 {
			t.Fatalf("with the running check off: the mark is at %d (%d marks), want it before the %d entries written", got, e.marks.Load(), n)
		}
	}
}

// TestFullVerifyMovesTheMark: a full verify that passes read every entry,
// so it moves the mark, and the running check has nothing left to read.
func TestFullVerifyMovesTheMark(t *testing.T) {
	e := openTest(t, func(c *Config) { c.MarkInterval = -1 })
	n := writeChain(t, e, 5)
	res, err := traillog.Check(context.Background(), e.db, traillog.CheckOptions{Seg: e.seg})
	if err != nil || !res.OK() || res.From >= n {
		t.Fatalf("before the verify: Check = %+v, %v; want it to start before entry %d", res, err, n)
	}
	v, err := e.VerifyTrail(context.Background(), "")
	if err != nil || !v.OK {
		t.Fatalf("VerifyTrail = %+v, %v", v, err)
	}
	res, err = traillog.Check(context.Background(), e.db, traillog.CheckOptions{Seg: e.seg})
	if err != nil || !res.OK() || res.From < n {
		t.Fatalf("after the verify: Check = %+v, %v; want it to start at entry %d or later", res, err, n)
	}
}

// writeChain has a new worker create a chain of count checkpoints and
// returns the trail's length then.
func writeChain(t *testing.T, e *Engine, count int) uint64 {
	t.Helper()
	ws := newWorker(t, e).ID
	var parent *string
	for range count {
		cp := checkpoint(t, e, ws, parent, "provisional")
		parent = &cp.ID
	}
	return e.log.Len()
}

package diskspace

import (
	"errors"
	"testing"
	"time"
)

// TestGuard: below the reserve is a LowError; a reading is reused for
// CheckEvery unless a fresh one is asked for; an unreadable figure passes;
// a nil guard passes.
func TestGuard(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	free, reads := uint64(1<<30), 0
	var readErr error
	g := New(100<<20, func() (uint64, error) { reads++; return free, readErr }, func() time.Time { return now })
	if err := g.Check(false); err != nil || reads != 1 {
		t.Fatalf("1 GiB free: %v (%d reads)", err, reads)
	}
	free = 10 << 20
	if err := g.Check(false); err != nil || reads != 1 {
		t.Fatalf("within CheckEvery the last verdict stands: %v (%d reads)", err, reads)
	}
	var low *LowError
	if err := g.Check(true); !errors.As(err, &low) || low.Free != 10<<20 || low.Reserve != 100<<20 || reads != 2 {
		t.Fatalf("fresh check with 10 MiB free: %v (%d reads)", err, reads)
	}
	free = 1 << 30
	if err := g.Check(false); err == nil {
		t.Fatal("within CheckEvery a low verdict stands")
	}
	now = now.Add(CheckEvery)
	if err := g.Check(false); err != nil || reads != 3 {
		t.Fatalf("after CheckEvery with space back: %v (%d reads)", err, reads)
	}
	free, readErr = 0, errors.New("statfs failed")
	if err := g.Check(true); err != nil {
		t.Fatalf("an unreadable figure stopped the engine: %v", err)
	}
	var none *Guard
	if err := none.Check(true); err != nil {
		t.Fatalf("nil guard: %v", err)
	}
	if _, err := Free(t.TempDir()); err != nil {
		t.Fatalf("Free of a temp dir: %v", err)
	}
}

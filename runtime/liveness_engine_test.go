package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Tests of liveness monitoring (liveness.go, WACP Workspace §6, Recovery
// §3.4). The fake clock drives CheckLiveness; TestLiveness_RunTimers runs
// the timer loop itself.

// livenessWarnings returns the liveness_warning bodies of ws's trail.
func livenessWarnings(t testing.TB, e *Engine, ws string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, en := range localEntries(t, e, ws, trail.EventLivenessWarning) {
		if en.Actor != trail.ActorProtocol {
			t.Errorf("liveness_warning by %q, want protocol", en.Actor)
		}
		out = append(out, entryBody(t, en))
	}
	return out
}

// lastLocal returns the timestamp of ws's last trail entry.
func lastLocal(t testing.TB, e *Engine, ws string) string {
	t.Helper()
	entries, err := e.Trail().ReadLocal(ctx, ws, "", trail.MaxLimit)
	if err != nil || len(entries) == 0 {
		t.Fatalf("ReadLocal(%s) = %d entries, %v", ws, len(entries), err)
	}
	return entries[len(entries)-1].Timestamp
}

// advanceTo moves clk to ws's last trail entry's timestamp plus d (the
// fake clock stands still while entries are written, each a nanosecond
// after the one before).
func advanceTo(t testing.TB, clk *fakeClock, e *Engine, ws string, d time.Duration) {
	t.Helper()
	at, err := clock.Parse(lastLocal(t, e, ws))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(at.Add(d).Sub(clk.Now()))
}

func checkLiveness(t testing.TB, e *Engine, now time.Time, want int) {
	t.Helper()
	n, err := e.CheckLiveness(ctx, now)
	if err != nil || n != want {
		t.Fatalf("CheckLiveness(%s) = %d, %v, want %d warnings", now.Format(time.RFC3339), n, err, want)
	}
}

// TestLiveness_WarnsOncePerIntervalOfSilence: an active workspace with
// liveness_interval 1m whose trail stays silent gets a liveness_warning at
// 1m, again at 2m (naming the same last activity), never before; an entry
// of its own (a checkpoint) starts the interval again; the warnings fail
// nothing. A workspace without the interval is never warned.
func TestLiveness_WarnsOncePerIntervalOfSilence(t *testing.T) {
	clk := newFakeClock()
	e := openVerified(t, withFakeClock(clk))
	w := newWorker(t, e, map[string]any{"liveness_interval": "1m"})
	quiet := newWorker(t, e)
	last := lastLocal(t, e, w.ID)

	advanceTo(t, clk, e, w.ID, 59*time.Second)
	checkLiveness(t, e, clk.Now(), 0)
	advanceTo(t, clk, e, w.ID, time.Minute)
	checkLiveness(t, e, clk.Now(), 1)
	checkLiveness(t, e, clk.Now(), 0) // once per interval
	advanceTo(t, clk, e, w.ID, 30*time.Second)
	checkLiveness(t, e, clk.Now(), 0)
	advanceTo(t, clk, e, w.ID, time.Minute)
	checkLiveness(t, e, clk.Now(), 1)
	got := livenessWarnings(t, e, w.ID)
	if len(got) != 2 {
		t.Fatalf("%d liveness_warning, want 2", len(got))
	}
	for _, b := range got {
		if b["workspace_id"] != w.ID || b["interval"] != "1m" || b["last_activity_timestamp"] != last {
			t.Errorf("liveness_warning = %v, want workspace_id %s, interval 1m, last_activity_timestamp %s", b, w.ID, last)
		}
	}

	cp := checkpoint(t, e, w.ID, nil, "provisional")
	active := lastLocal(t, e, w.ID)
	advanceTo(t, clk, e, w.ID, 59*time.Second)
	checkLiveness(t, e, clk.Now(), 0)
	advanceTo(t, clk, e, w.ID, time.Minute)
	checkLiveness(t, e, clk.Now(), 1)
	got = livenessWarnings(t, e, w.ID)
	if b := got[len(got)-1]; b["last_activity_timestamp"] != active {
		t.Errorf("after checkpoint %s liveness_warning names %v, want %s", cp.ID, b["last_activity_timestamp"], active)
	}
	if st := wsState(t, e, w.ID); st != workspace.Active {
		t.Errorf("state after warnings = %s, want active (liveness is advisory)", st)
	}
	if n := len(livenessWarnings(t, e, quiet.ID)); n != 0 {
		t.Errorf("%d liveness_warning for a workspace without liveness_interval", n)
	}
}

// TestLiveness_OnlyActiveAndBlocked: a suspended workspace is not warned,
// a blocked one is.
func TestLiveness_OnlyActiveAndBlocked(t *testing.T) {
	clk := newFakeClock()
	e := openVerified(t, withFakeClock(clk))
	s := newWorker(t, e, map[string]any{"liveness_interval": "1m"})
	b := newWorker(t, e, map[string]any{"liveness_interval": "1m"})
	if _, err := e.Suspend(ctx, e.Root(), s.ID, ""); err != nil {
		t.Fatal(err)
	}
	emitOK(t, e, b.ID, `{"type":"blocked","reason":"waiting"}`)
	clk.Advance(time.Hour)
	checkLiveness(t, e, clk.Now(), 1)
	if n := len(livenessWarnings(t, e, b.ID)); n != 1 {
		t.Errorf("blocked workspace: %d liveness_warning, want 1", n)
	}
	if n := len(livenessWarnings(t, e, s.ID)); n != 0 {
		t.Errorf("suspended workspace: %d liveness_warning, want 0", n)
	}
}

// TestLiveness_RebuiltAfterRestart (Recovery §3.4): liveness counts from
// the workspace's last trail entry across a restart, the outage included:
// a workspace whose interval ran out while the daemon was down is warned
// during recovery (counted in timers_reconstructed), one whose interval
// has not is warned when the rest of it has passed, not an interval after
// the restart.
func TestLiveness_RebuiltAfterRestart(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := openEngineAt(t, dir, withFakeClock(clk))
	short := newWorker(t, e, map[string]any{"liveness_interval": "1m"})
	long := newWorker(t, e, map[string]any{"liveness_interval": "10m"})
	crash(t, e)
	clk.Advance(2 * time.Minute)

	e = openEngineAt(t, dir, withFakeClock(clk))
	if n := len(livenessWarnings(t, e, short.ID)); n != 1 {
		t.Fatalf("after 2m down: %d liveness_warning for a 1m interval, want 1", n)
	}
	if n := len(livenessWarnings(t, e, long.ID)); n != 0 {
		t.Fatalf("after 2m down: %d liveness_warning for a 10m interval, want 0", n)
	}
	recs := recoveries(t, e)
	if len(recs) != 1 || recs[0]["timers_reconstructed"] != float64(2) {
		t.Fatalf("recovery_completed = %v, want timers_reconstructed 2", recs)
	}
	advanceTo(t, clk, e, long.ID, 10*time.Minute-time.Second)
	checkLiveness(t, e, clk.Now(), 1) // short again; long has 1s left
	if n := len(livenessWarnings(t, e, long.ID)); n != 0 {
		t.Fatalf("%d liveness_warning for long before its 10m", n)
	}
	advanceTo(t, clk, e, long.ID, 10*time.Minute)
	checkLiveness(t, e, clk.Now(), 1)
	if n := len(livenessWarnings(t, e, long.ID)); n != 1 {
		t.Fatalf("%d liveness_warning for long at its 10m, want 1", n)
	}
	verify(t, e)
}

// TestLiveness_RunTimers: the timer loop looks at liveness on its tick,
// with the engine's clock.
func TestLiveness_RunTimers(t *testing.T) {
	clk := newFakeClock()
	e := openVerified(t, withFakeClock(clk))
	w := newWorker(t, e, map[string]any{"liveness_interval": "1m"})
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.RunTimers(tctx, time.Millisecond) }()
	defer func() { cancel(); <-done }()
	advanceTo(t, clk, e, w.ID, time.Minute)
	waitFor(t, "a liveness_warning from the timer loop", func() bool {
		en, err := e.Trail().ReadLocal(ctx, w.ID, "", trail.MaxLimit)
		return err == nil && len(en) > 0 && en[len(en)-1].EventType == trail.EventLivenessWarning
	})
}

// TestLiveness_IntervalChecked: a create request's liveness_interval must
// be a positive duration; a bad one creates nothing.
func TestLiveness_IntervalChecked(t *testing.T) {
	e := openVerified(t)
	before := e.Trail().Len()
	for _, iv := range []string{"0s", "-1m", "soon", "1"} {
		_, err := e.CreateWorkspace(ctx, e.Root(), mustJSON(map[string]any{"role": "worker", "liveness_interval": iv}))
		wantCode(t, "create with liveness_interval "+iv, err, "invalid_structure")
	}
	if n := e.Trail().Len(); n != before {
		t.Errorf("refused creates wrote %d entries", n-before)
	}
}

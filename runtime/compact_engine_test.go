package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/coldstore"
	"github.com/wacpd/wacpd/workspace"
)

// coldVerify checks e's cold tier against its log (what the offline
// auditor runs after the trail check).
func coldVerify(t testing.TB, e *Engine) {
	t.Helper()
	settled(t, e)
	f, err := coldstore.Verify(ctx, e.db, e.log, e.coldDir())
	if err != nil || f != nil {
		t.Fatalf("coldstore.Verify = %+v, %v; want nothing found", f, err)
	}
}

// TestCompaction_HotNeverArchivedAndTiersSurviveRestart: compaction takes
// the terminal workspace only; a restart keeps every tier (Trail §7: hot
// and warm are durable, tiers never move backward).
func TestCompaction_HotNeverArchivedAndTiersSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	closed := workerIn(t, e, workspace.Closed)
	active := workerIn(t, e, workspace.Active)
	before, err := e.TrailTiers(ctx, closed)
	if err != nil || before[trail.TierWarm] == 0 || len(before) != 1 {
		t.Fatalf("closed worker's tiers before compaction %v, %v: want warm only", before, err)
	}
	if n, err := e.Compact(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("Compact = %d, %v; want 1", n, err)
	}
	tiers := map[string]map[trail.Tier]int{}
	for _, ws := range []string{closed, active} {
		if tiers[ws], err = e.TrailTiers(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	if c := tiers[closed]; c[trail.TierCold] == 0 || c[trail.TierWarm] == 0 || c[trail.TierHot] != 0 || c[trail.TierCold]+c[trail.TierWarm] != before[trail.TierWarm] {
		t.Fatalf("closed worker's tiers %v: want its %d entries cold and warm", c, before[trail.TierWarm])
	}
	if a := tiers[active]; a[trail.TierHot] == 0 || len(a) != 1 {
		t.Fatalf("active worker's tiers %v: want hot only", a)
	}
	if cold, err := e.ReadCold(ctx, active); err != nil || cold != nil {
		t.Fatalf("ReadCold(active) = %v, %v; want nothing archived", cold, err)
	}
	coldVerify(t, e)
	e.Close()
	e = openEngineAt(t, dir)
	verify(t, e)
	coldVerify(t, e)
	for ws, want := range tiers {
		got, err := e.TrailTiers(ctx, ws)
		if err != nil || len(got) != len(want) || got[trail.TierHot] != want[trail.TierHot] || got[trail.TierWarm] != want[trail.TierWarm] || got[trail.TierCold] != want[trail.TierCold] {
			t.Fatalf("tiers of %s after a restart %v, %v; want %v", ws, got, err, want)
		}
	}
	if n, err := e.Compact(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("Compact after a restart = %d, %v; want 0 (nothing moves again)", n, err)
	}
}

// TestCompaction_WarmRetention: a terminal workspace stays warm until the
// warm retention has passed since it became terminal; then the timer's
// compaction archives it.
func TestCompaction_WarmRetention(t *testing.T) {
	clk := newFakeClock()
	e := openEngineAt(t, t.TempDir(), withFakeClock(clk), func(c *Config) { c.TrailWarmRetention = time.Hour })
	closed := workerIn(t, e, workspace.Closed)
	if n, err := e.Compact(ctx, clk.Now()); err != nil || n != 0 {
		t.Fatalf("Compact within the warm retention = %d, %v; want 0", n, err)
	}
	clk.Advance(59 * time.Minute)
	if n, err := e.Compact(ctx, clk.Now()); err != nil || n != 0 {
		t.Fatalf("Compact 59 minutes on = %d, %v; want 0", n, err)
	}
	clk.Advance(2 * time.Minute)
	if n, err := e.Compact(ctx, clk.Now()); err != nil || n != 1 {
		t.Fatalf("Compact past the warm retention = %d, %v; want 1", n, err)
	}
	if got := trailWhere(t, e, trail.EventTrailCompacted, map[string]string{"workspace": closed}); len(got) != 1 {
		t.Fatalf("trail_compacted for %s: %d entries, want 1", closed, len(got))
	}
	coldVerify(t, e)
	if _, err := Open(Config{DataDir: t.TempDir(), TrailWarmRetention: -time.Second}); err == nil {
		t.Fatal("Open with a negative TrailWarmRetention succeeded")
	}
	m, err := Open(Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Compact(ctx, time.Now()); !errors.Is(err, ErrCompactInMemory) {
		t.Fatalf("Compact in memory = %v, want ErrCompactInMemory", err)
	}
}

// TestCompaction_CrashAtEachStep: a compaction that fails at any step (before
// the archive, after it, at the trail_compacted entry, at the record)
// leaves a data dir that opens and verifies, with nothing compacted; the
// next compaction completes it once.
func TestCompaction_CrashAtEachStep(t *testing.T) {
	for _, step := range []string{"cold_archive", "cold_archive_written", string(trail.EventTrailCompacted), "cold_record"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			e := openEngineAt(t, dir)
			closed := workerIn(t, e, workspace.Closed)
			hit := false
			// The commits before are all in Badger, so no commit's goroutine
			// reads the seam while it is set.
			settled(t, e)
			e.cfg.failAt = func(s string) error {
				if s == step {
					hit = true
					return errors.New("crash")
				}
				return nil
			}
			if _, err := e.Compact(ctx, time.Now()); err == nil || !hit {
				t.Fatalf("Compact failing at %s = %v (step reached: %v); want an error", step, err, hit)
			}
			e.cfg.failAt = nil
			e.Close()
			e = openEngineAt(t, dir)
			verify(t, e)
			coldVerify(t, e)
			if got := trailWhere(t, e, trail.EventTrailCompacted, nil); len(got) != 0 {
				t.Fatalf("trail_compacted after a compaction failed at %s: %d", step, len(got))
			}
			if tiers, err := e.TrailTiers(ctx, closed); err != nil || tiers[trail.TierCold] != 0 {
				t.Fatalf("tiers after a failed compaction %v, %v: want none cold", tiers, err)
			}
			if n, err := e.Compact(ctx, time.Now()); err != nil || n != 1 {
				t.Fatalf("Compact after the failure = %d, %v; want 1", n, err)
			}
			coldVerify(t, e)
			verify(t, e)
			if m, _ := filepath.Glob(filepath.Join(dir, coldstore.Dir, "*.zst")); len(m) != 1 {
				t.Fatalf("archives %v: want one", m)
			}
		})
	}
}

// TestCompaction_OpenRemovesTemporaryArchives: an archive's temporary
// file that a kill during compaction left is removed at the next start;
// the archives stay and verify.
func TestCompaction_OpenRemovesTemporaryArchives(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	workerIn(t, e, workspace.Closed)
	if n, err := e.Compact(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("Compact = %d, %v; want 1", n, err)
	}
	e.Close()
	left := filepath.Join(dir, coldstore.Dir, ".0123.zst.42")
	if err := os.WriteFile(left, []byte("cut"), 0o644); err != nil {
		t.Fatal(err)
	}
	e = openEngineAt(t, dir)
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary archive after a start: %v; want it removed", err)
	}
	coldVerify(t, e)
}

package runtime

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/diskspace"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// TestDegradedMode (WACP Recovery §2.4, conformance row "Degraded mode",
// scenario 6): while writes fail, every operation that would change
// anything gets unavailable and changes nothing, reads go on; when writes
// succeed again the engine records system_degraded (scope trail_storage,
// naming the affected workspace) and admits work again.
// failingAt opens an engine whose writes fail at step (failAt) with
// reason while failing is set; attempts counts the failures injected.
func failingAt(t *testing.T, step, reason string) (e *Engine, failing *atomic.Bool, attempts *atomic.Int64) {
	t.Helper()
	failing, attempts = new(atomic.Bool), new(atomic.Int64)
	e = openTest(t, func(c *Config) {
		c.failAt = func(s string) error {
			if s == step && failing.Load() {
				attempts.Add(1)
				return errors.New(reason)
			}
			return nil
		}
	})
	return e, failing, attempts
}

func TestDegradedMode(t *testing.T) {
	e, failing, attempts := failingAt(t, "commit", "injected: no space left on device")
	w := newWorker(t, e)
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	before := e.Trail().Len()

	failing.Store(true)
	if _, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "provisional")); Code(err) != wire.CodeUnavailable {
		t.Fatalf("checkpoint while writes fail: %v, want unavailable", err)
	}
	if d, _ := e.Degraded(); !d {
		t.Fatal("not in degraded mode after a failed write")
	}
	// New work is refused at once, whatever it is; reads go on.
	if _, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "provisional")); Code(err) != wire.CodeUnavailable ||
		!strings.Contains(err.Error(), "degraded mode") {
		t.Fatalf("checkpoint in degraded mode: %v, want unavailable naming degraded mode", err)
	}
	if _, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"progress"}`)); Code(err) != wire.CodeUnavailable {
		t.Fatalf("signal in degraded mode: %v, want unavailable", err)
	}
	if _, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`)); Code(err) != wire.CodeUnavailable {
		t.Fatalf("workspace in degraded mode: %v, want unavailable", err)
	}
	if list := listCheckpoints(t, e, w.ID); len(list) != 1 {
		t.Fatalf("reads in degraded mode: %d checkpoints, want 1", len(list))
	}
	// The probe keeps trying, and failing.
	waitFor(t, "probes while writes fail", func() bool { return attempts.Load() >= 3 })
	if got := e.Trail().Len(); got != before {
		t.Fatalf("trail grew from %d to %d while writes failed", before, got)
	}

	failing.Store(false)
	waitAdmitting(t, e)
	entries := globalTrail(t, e)
	if uint64(len(entries)) != before+1 {
		t.Fatalf("trail has %d entries after recovery, want %d + system_degraded", len(entries), before)
	}
	body := entryBody(t, entries[len(entries)-1])
	if entries[len(entries)-1].EventType != "system_degraded" || body["scope"] != "trail_storage" ||
		body["coordinator_action"] != "wait" || !strings.Contains(body["reason"].(string), "no space left on device") {
		t.Fatalf("last entry %s %v, want system_degraded for trail_storage", entries[len(entries)-1].EventType, body)
	}
	if aff, _ := body["affected_workspaces"].([]any); !containsAny(aff, w.ID) {
		t.Fatalf("affected_workspaces = %v, want it to name %s", body["affected_workspaces"], w.ID)
	}
	if _, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "final")); err != nil {
		t.Fatalf("checkpoint after recovery: %v", err)
	}
	verify(t, e)
}

// TestDegradedModeReloadsAWriteThatLanded: Badger's commit reported failed
// after the batch's block was durable and its caller answered. The engine
// enters degraded mode and reloads its state before it admits work again,
// so the checkpoint is the chain's head, nothing is duplicated, and the
// trail verifies.
func TestDegradedModeReloadsAWriteThatLanded(t *testing.T) {
	var once atomic.Bool
	e := openTest(t, func(c *Config) {
		c.written = func() error {
			if once.Load() && once.CompareAndSwap(true, false) {
				return errors.New("injected: fsync reported EIO")
			}
			return nil
		}
	})
	w, c1, list := answeredThenDegraded(t, e, &once)
	head, err := e.Head(ctx, e.Root(), w.ID, false)
	if err != nil || head.ID != list[1].ID {
		t.Fatalf("head = %v, %v; want %s", head.ID, err, list[1].ID)
	}
	// A retry with the old parent is refused; one on the head goes on.
	if _, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "provisional")); Code(err) != wire.CodeInvalidParent {
		t.Fatalf("retry on the old head: %v, want invalid_parent", err)
	}
	if _, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&head.ID, "final")); err != nil {
		t.Fatal(err)
	}
	verify(t, e)
}

// TestDegradedModeRedoesAWrittenBlock: a batch whose segment block was
// written and synced, and whose Badger commit then failed, is durable all
// the same (a start would redo the block): its caller was answered, and
// degraded mode redoes the block before it reloads, so the operation took
// effect, in the running engine as after a restart.
func TestDegradedModeRedoesAWrittenBlock(t *testing.T) {
	var once atomic.Bool
	dir := t.TempDir()
	e := openEngineAt(t, dir, func(c *Config) {
		c.failAt = func(step string) error {
			if step == "badger" && once.CompareAndSwap(true, false) {
				return errors.New("injected: badger's commit failed")
			}
			return nil
		}
	})
	w, c1, list := answeredThenDegraded(t, e, &once)
	c3, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&list[1].ID, "final"))
	if err != nil {
		t.Fatal(err)
	}
	verify(t, e)
	trailLen := e.Trail().Len()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngineAt(t, dir)
	if got := checkpointIDs(listCheckpoints(t, e, w.ID)); !slices.Equal(got, []string{c1.ID, list[1].ID, c3.ID}) || e.Trail().Len() != trailLen {
		t.Fatalf("after a restart: %v and %d entries; want %v and %d", got, e.Trail().Len(), []string{c1.ID, list[1].ID, c3.ID}, trailLen)
	}
	verify(t, e)
}

// answeredThenDegraded makes a worker and its first checkpoint c1, then
// arms once (the seam that fails the next Badger commit, after its block is
// durable) and creates c2 on c1. c2's caller is answered; the engine goes
// through degraded mode and leaves it; the chain then holds c1 and c2, as
// list returns it.
func answeredThenDegraded(t *testing.T, e *Engine, once *atomic.Bool) (w *workspace.Workspace, c1 checkpointchain.Checkpoint, list []checkpointchain.Checkpoint) {
	t.Helper()
	w = newWorker(t, e)
	c1 = checkpoint(t, e, w.ID, nil, "provisional")
	settled(t, e) // no batch in flight: the next one fails
	once.Store(true)
	c2, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "provisional"))
	if err != nil {
		t.Fatalf("checkpoint whose block was durable: %v", err)
	}
	waitDegradedRecorded(t, e)
	list = listCheckpoints(t, e, w.ID)
	if len(list) != 2 || list[1].ID != c2.ID || list[1].ParentID() != c1.ID {
		t.Fatalf("after degraded mode: %d checkpoints, want %s after %s", len(list), c2.ID, c1.ID)
	}
	return w, c1, list
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestDegradedModeOnLowDiskSpace: below the free-space reserve the engine
// admits no work (a full disk would end Badger's mapped log in SIGBUS, not
// an error), reads go on, and when space is back it records
// system_degraded naming the shortage and admits work again.
func TestDegradedModeOnLowDiskSpace(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 30)
	clk := newFakeClock()
	e := openTest(t, withFakeClock(clk), func(c *Config) {
		c.MinFreeBytes = 100 << 20
		c.freeSpace = func() (uint64, error) { return free.Load(), nil }
	})
	w := newWorker(t, e)
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	before := e.Trail().Len()

	free.Store(10 << 20)
	clk.Advance(diskspace.CheckEvery) // the guard reads the space at most this often (Config.Now)
	_, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "provisional"))
	if Code(err) != wire.CodeUnavailable || !strings.Contains(err.Error(), "below the reserve") {
		t.Fatalf("checkpoint with 10 MiB free: %v, want unavailable naming the reserve", err)
	}
	if d, _ := e.Degraded(); !d {
		t.Fatal("not in degraded mode with the disk below the reserve")
	}
	if list := listCheckpoints(t, e, w.ID); len(list) != 1 || e.Trail().Len() != before {
		t.Fatalf("something was written below the reserve: %d checkpoints, trail %d -> %d", len(list), before, e.Trail().Len())
	}

	free.Store(1 << 30)
	waitAdmitting(t, e)
	entries := globalTrail(t, e)
	last := entries[len(entries)-1]
	if body := entryBody(t, last); last.EventType != "system_degraded" || !strings.Contains(body["reason"].(string), "below the reserve") {
		t.Fatalf("last entry %s %v, want system_degraded naming the disk space", last.EventType, body)
	}
	if _, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "final")); err != nil {
		t.Fatalf("after space is back: %v", err)
	}
	verify(t, e)
}

// TestSegmentWriteFailureDegrades: when a batch's block of the segment
// files cannot be written, the batch fails as any failed write does
// (unavailable, degraded mode, probes), nothing of it is committed, and
// once writes succeed the next blocks go on from the last durable one: a
// restart reads and verifies everything.
func TestSegmentWriteFailureDegrades(t *testing.T) {
	e, failing, _ := failingAt(t, "segment", "injected: input/output error")
	w := newWorker(t, e)
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	before := e.Trail().Len()
	failing.Store(true)
	if _, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "provisional")); Code(err) != wire.CodeUnavailable {
		t.Fatalf("checkpoint while the segment write fails: %v, want unavailable", err)
	}
	if d, _ := e.Degraded(); !d {
		t.Fatal("not in degraded mode after a failed segment write")
	}
	if got := e.Trail().Len(); got != before {
		t.Fatalf("trail %d -> %d entries after a failed write", before, got)
	}
	failing.Store(false)
	waitAdmitting(t, e)
	c2, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "final"))
	if err != nil {
		t.Fatalf("checkpoint after recovery: %v", err)
	}
	verify(t, e)
	e = reopen(t, e)
	if list := listCheckpoints(t, e, w.ID); len(list) != 2 || list[1].ID != c2.ID {
		t.Fatalf("after a restart: %d checkpoints, want c1 and %s", len(list), c2.ID)
	}
	verify(t, e)
}

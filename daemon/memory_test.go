package daemon_test

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/taxonomy"
)

// TestMemoryLimit: with a memory budget the daemon runs with the Go
// runtime's soft limit at 9/16 of it and Badger sized for it (its memtable
// logs, twice a memtable, are 16 MiB for 256 MiB instead of 64), still
// stores a checkpoint of nearly the largest size, and gives the previous
// limit back when it stops.
func TestMemoryLimit(t *testing.T) {
	ctx := clientCtx(t)
	before := debug.SetMemoryLimit(-1)
	dir := t.TempDir()
	d := daemontest.Start(t, daemon.Config{DataDir: dir, Config: runtime.Config{MemoryLimit: 256 << 20}})
	if got := debug.SetMemoryLimit(-1); got != 144<<20 {
		t.Errorf("Go memory limit while running = %d MiB, want 144", got>>20)
	}
	mems, _ := filepath.Glob(filepath.Join(dir, "db", "*.mem"))
	if len(mems) == 0 {
		t.Fatal("no memtable log in the data dir")
	}
	for _, m := range mems {
		if fi, err := os.Stat(m); err != nil || fi.Size() != 16<<20 {
			t.Errorf("memtable log %s: %v bytes (%v), want 16 MiB", filepath.Base(m), fi.Size(), err)
		}
	}
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	w := directedWorker(t, ctx, coord)
	wc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: w.Token, Workspace: w.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wc.CreateCheckpoint(ctx, client.CheckpointRequest{
		Type: taxonomy.CheckpointArtifact, Intent: "large", Status: checkpointchain.StatusProvisional,
		Confidence: checkpointchain.ConfidenceHigh, Payload: checkpointchain.Payload{Content: strings.Repeat("x", 1000_000)},
	})
	if err != nil {
		t.Fatalf("a 1 MB checkpoint within a 256 MiB budget: %v", err)
	}
	d.Stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("Go memory limit after the daemon stopped = %d, want %d as before", got, before)
	}
}

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail/traillog"
)

// TestTrailQuarantine: wacp trail quarantine --dir lists what the recovery
// procedure moved out of a stopped daemon's trail: nothing on a sound data
// dir; after the last entry (written after the last signed tree head) is
// damaged and the engine restarted, that entry, with its reason.
func TestTrailQuarantine(t *testing.T) {
	dir, url, stop := stoppable(t)
	busy(t, dir, url)
	stop()
	if code, out, errs := wacp(t, "trail", "quarantine", "--dir", dir); code != 0 || out != "no quarantined entries\n" {
		t.Fatalf("wacp trail quarantine on a sound dir = %d, %q, %q", code, out, errs)
	}

	// Entries the daemon never signed: the engine alone writes a workspace.
	db := filepath.Join(dir, "db")
	e, err := runtime.Open(runtime.Config{DataDir: db})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateWorkspace(context.Background(), e.Root(), []byte(`{"role":"worker"}`)); err != nil {
		t.Fatal(err)
	}
	last := e.Trail().Len()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	daemontest.DamageTrailEntry(t, dir, last)
	// The restart quarantines it.
	e, err = runtime.Open(runtime.Config{DataDir: db})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	code, out, errs := wacp(t, "trail", "quarantine", "--dir", dir)
	if code != 0 || !strings.HasPrefix(out, "SEQ") || !strings.Contains(out, "hash_mismatch") {
		t.Fatalf("wacp trail quarantine = %d, %q, %q; want the damaged entry with its reason", code, out, errs)
	}
	code, out, errs = wacp(t, "-o", "json", "trail", "quarantine", "--dir", dir)
	var qs []traillog.Quarantined
	if code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs) != 1 || qs[0].Seq != last || len(qs[0].Value) == 0 {
		t.Fatalf("wacp -o json trail quarantine = %d, %q, %q; want entry #%d with its stored bytes", code, out, errs, last)
	}
	if code, _, errs := wacp(t, "trail", "quarantine"); code != 1 || !strings.Contains(errs, "needs --dir") {
		t.Errorf("wacp trail quarantine without --dir = %d, %q; want 1", code, errs)
	}
}

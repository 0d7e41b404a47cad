package auditor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/coldstore"
)

// compactedDataDir is a stopped daemon's data dir in which a failed worker
// (a directive, two checkpoints, an abort) was compacted beside an active
// one, with a tree head signed over the whole trail. It returns the dir,
// the failed worker and its trail_compacted summary.
func compactedDataDir(t *testing.T) (dir, failed string, sum coldstore.Summary) {
	t.Helper()
	dir = t.TempDir()
	e, err := runtime.Open(runtime.Config{DataDir: filepath.Join(dir, datadir.DatabaseDir)})
	if err != nil {
		t.Fatal(err)
	}
	failed = worker(t, e, e.Root(), true)
	c1 := checkpoint(t, e, failed, nil, "provisional")
	checkpoint(t, e, failed, &c1.ID, "provisional")
	active := worker(t, e, e.Root(), true)
	if _, err := e.Abort(ctx, e.Root(), failed, "enough"); err != nil {
		t.Fatal(err)
	}
	local, _, err := e.Trail().Read(ctx, trail.Query{Workspace: failed, Limit: trail.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	// What §8 archives, worked out here from the tables, not by the package.
	var want []trail.Entry
	for _, en := range local {
		var b map[string]any
		if err := json.Unmarshal(en.Body, &b); err != nil {
			t.Fatal(err)
		}
		switch en.EventType {
		case trail.EventWorkspaceStateChanged:
			if b["to_state"] != "failed" && b["to_state"] != "closed" {
				want = append(want, en)
			}
		case trail.EventEnvelopeDelivered, trail.EventSignalDelivered, trail.EventBudgetWarning,
			trail.EventLivenessWarning, trail.EventPriorityChanged, trail.EventVisibilityGranted:
			want = append(want, en)
		}
	}
	if len(want) == 0 || len(want) == len(local) {
		t.Fatalf("the failed worker's %d entries have %d archivable: want some of each", len(local), len(want))
	}
	if n, err := e.Compact(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("Compact = %d, %v; want 1 (the failed worker only)", n, err)
	}
	if n, err := e.Compact(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("Compact again = %d, %v; want 0", n, err)
	}
	// The summary: counts, range and the hash of the archived entries.
	all := readAll(t, e.Trail())
	var sums []trail.Entry
	for _, en := range all {
		if en.EventType == trail.EventTrailCompacted {
			sums = append(sums, en)
		}
	}
	if len(sums) != 1 || sums[0].Workspace != "" {
		t.Fatalf("trail_compacted entries %+v: want one, in the global trail only", sums)
	}
	if sum, err = coldstore.ParseSummary(sums[0].Body); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, en := range want {
		raw = append(trail.AppendJSON(raw, en), '\n')
	}
	wantSum := coldstore.Summary{Workspace: failed, Archived: len(want), Preserved: len(local) - len(want),
		From: want[0].Timestamp, To: want[len(want)-1].Timestamp, Hash: casstore.RefOf(raw).String()}
	if sum != wantSum {
		t.Fatalf("trail_compacted %+v, want %+v", sum, wantSum)
	}
	// The cold tier holds exactly the archivable entries; the standard
	// query still returns every entry, archived ones included.
	cold, err := e.ReadCold(ctx, failed)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(cold, want, func(a, b trail.Entry) bool { return a.ID == b.ID && a.Integrity.EntryHash == b.Integrity.EntryHash }) {
		t.Fatalf("ReadCold: %d entries, want the %d archivable ones", len(cold), len(want))
	}
	after, _, err := e.ReadTrail(ctx, e.Root(), trail.Query{Workspace: failed, Limit: trail.MaxLimit})
	if err != nil || len(after) != len(local) {
		t.Fatalf("audit.trail.read of the compacted workspace: %d entries, %v; want %d", len(after), err, len(local))
	}
	if tiers, err := e.TrailTiers(ctx, active); err != nil || tiers[trail.TierHot] == 0 || len(tiers) != 1 {
		t.Fatalf("active worker's tiers %v, %v: want hot only", tiers, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	k := newKey(t, "wacpd-test")
	sth := signHead(t, k, "wacpd/"+e.Root(), all, nil)
	update(t, dir, func(txn *badger.Txn) error {
		b, err := json.Marshal(sth)
		if err != nil {
			return err
		}
		return txn.Set([]byte("m/sth"), b)
	})
	if err := os.WriteFile(filepath.Join(dir, datadir.PublicKeyFile), []byte(k.vkey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, failed, sum
}

// TestCold_CompactedDataDirVerifies: after compaction the data dir
// verifies offline, the archive included (Trail §8: compaction relocates,
// the summary and the archive prove the archived entries).
func TestCold_CompactedDataDirVerifies(t *testing.T) {
	dir, _, _ := compactedDataDir(t)
	rep, err := datadir.Verify(dir)
	if err != nil || !rep.OK {
		t.Fatalf("datadir.Verify = %+v, %v; want OK", rep, err)
	}
}

// TestCold_TamperedArchive: an archive changed, missing, or a compaction
// record removed is reported by the offline verification.
func TestCold_TamperedArchive(t *testing.T) {
	file := func(dir string, sum coldstore.Summary) string {
		return filepath.Join(dir, datadir.DatabaseDir, filepath.FromSlash(coldstore.Name(sum.Hash)))
	}
	t.Run("byte flipped", func(t *testing.T) {
		dir, _, sum := compactedDataDir(t)
		b, err := os.ReadFile(file(dir, sum))
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x40
		if err := os.WriteFile(file(dir, sum), b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := datadir.Verify(dir)
		if err != nil || rep.OK || rep.FirstBad != coldstore.Name(sum.Hash) || rep.Violation != auditor.ViolationHashMismatch {
			t.Fatalf("datadir.Verify = %+v, %v; want hash_mismatch at %s", rep, err, coldstore.Name(sum.Hash))
		}
	})
	t.Run("archive of other entries", func(t *testing.T) {
		dir, _, sum := compactedDataDir(t)
		// A well-formed archive under the right name whose entries are
		// not the log's: it does not hash to its name.
		other := []byte(`{"x":1}` + "\n")
		if err := coldstore.Write(filepath.Join(dir, datadir.DatabaseDir, coldstore.Dir), casstore.RefOf(other).String(), other); err != nil {
			t.Fatal(err)
		}
		src := filepath.Join(dir, datadir.DatabaseDir, filepath.FromSlash(coldstore.Name(casstore.RefOf(other).String())))
		if err := os.Rename(src, file(dir, sum)); err != nil {
			t.Fatal(err)
		}
		rep, err := datadir.Verify(dir)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationHashMismatch {
			t.Fatalf("datadir.Verify = %+v, %v; want hash_mismatch", rep, err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		dir, _, sum := compactedDataDir(t)
		if err := os.Remove(file(dir, sum)); err != nil {
			t.Fatal(err)
		}
		rep, err := datadir.Verify(dir)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationMissingObject {
			t.Fatalf("datadir.Verify = %+v, %v; want missing_object", rep, err)
		}
	})
	t.Run("record removed", func(t *testing.T) {
		dir, failed, _ := compactedDataDir(t)
		update(t, dir, func(txn *badger.Txn) error { return txn.Delete(coldstore.Key(failed)) })
		rep, err := datadir.Verify(dir)
		if err != nil || rep.OK {
			t.Fatalf("datadir.Verify = %+v, %v; want a finding", rep, err)
		}
	})
}

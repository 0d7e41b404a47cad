package runtime

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/internal/trailtest"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
	"github.com/wacpd/wacpd/workspace"
)

// Tests of the recovery procedure at start (recovery.go, WACP Recovery §3).

// crash stops e the way a killed process does, as far as the data dir can
// tell: the committer stops and Badger closes, but the open marker stays.
func crash(t testing.TB, e *Engine) {
	t.Helper()
	e.stopLoop()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, ch := range e.inboxSig {
		close(ch)
	}
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// syncBuf is a log destination tests read while the engine writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func withLog(buf *syncBuf) func(*Config) {
	return func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
}

func withFullCheck(c *Config) { c.FullCheck = true }

func testSigner(t testing.TB) note.Signer {
	t.Helper()
	skey, _, err := note.GenerateKey(rand.Reader, "test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rawDB opens a stopped engine's database directly, as a damaged disk or an
// intruder would change it.
func rawDB(t testing.TB, dir string, fn func(txn *badger.Txn) error) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func deleteEntry(seq uint64) func(*badger.Txn) error {
	return func(txn *badger.Txn) error { return trailtest.DeleteEntry(txn, seq) }
}

// recoveries returns the recovery_completed bodies in the trail.
func recoveries(t testing.TB, e *Engine) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, en := range trailWhere(t, e, trail.EventRecoveryCompleted, nil) {
		if en.Workspace != "" || en.Actor != trail.ActorProtocol {
			t.Errorf("recovery_completed in %q by %q, want system-level by protocol", en.Workspace, en.Actor)
		}
		out = append(out, entryBody(t, en))
	}
	return out
}

// chainOfCheckpoints writes n checkpoints on w's chain after parent.
func chainOfCheckpoints(t testing.TB, e *Engine, ws string, parent *string, n int) *string {
	t.Helper()
	for range n {
		cp := checkpoint(t, e, ws, parent, "provisional")
		parent = &cp.ID
	}
	return parent
}

// TestRecovery_IntegrityCheck_QuarantinesBadTailAfterSignedHead: damage to
// entries written after the latest signed tree head (what a crash can leave)
// is quarantined: the daemon starts on the valid prefix, logs each
// quarantined entry, keeps it under t/q/ and reports the count in
// recovery_completed.
func TestRecovery_IntegrityCheck_QuarantinesBadTailAfterSignedHead(t *testing.T) {
	tests := []struct {
		name     string
		damage   func(dir string, last uint64) func(*badger.Txn) error
		missing  bool
		readable bool // the quarantined entry still decodes: its time and id are known
	}{
		{"flipped byte in the last entry", func(dir string, last uint64) func(*badger.Txn) error { return trailtest.FlipBody(dir, last) }, false, true},
		{"undecodable last entry", func(_ string, last uint64) func(*badger.Txn) error {
			return func(txn *badger.Txn) error { return trailtest.SetEntry(txn, last, []byte("\x00garbage")) }
		}, false, false},
		{"last entry deleted", func(_ string, last uint64) func(*badger.Txn) error { return deleteEntry(last) }, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := newFakeClock()
			e, err := Open(Config{DataDir: dir, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			w := newWorker(t, e)
			head := chainOfCheckpoints(t, e, w.ID, nil, 3)
			if _, err := e.SignTreeHead(testSigner(t)); err != nil {
				t.Fatal(err)
			}
			signed := e.Trail().Len()
			chainOfCheckpoints(t, e, w.ID, head, 2)
			last := e.Trail().Len()
			lastEntry, err := e.Trail().At(last)
			if err != nil {
				t.Fatal(err)
			}
			crash(t, e)
			rawDB(t, dir, tt.damage(dir, last))

			var logs syncBuf
			clk.Advance(-time.Hour) // the wall clock is behind the quarantined entry
			e = openEngineAt(t, dir, withLog(&logs), withFakeClock(clk))
			verify(t, e)
			if got := e.Trail().Len(); got != last { // last-1 entries and recovery_completed
				t.Fatalf("trail length after recovery = %d, want %d", got, last)
			}
			if rc, _ := e.Trail().At(last); tt.readable && (rc.ID <= lastEntry.ID || rc.Timestamp <= lastEntry.Timestamp) {
				t.Errorf("recovery_completed %s at %s is not after the quarantined %s at %s",
					rc.ID, rc.Timestamp, lastEntry.ID, lastEntry.Timestamp)
			}
			recs := recoveries(t, e)
			if len(recs) != 1 || recs[0]["quarantined_entries"] != float64(1) {
				t.Fatalf("recovery_completed = %v, want one with quarantined_entries 1", recs)
			}
			if ex := recs[0]["trail_entries_examined"].(float64); ex < float64(last-signed-1) {
				t.Errorf("trail_entries_examined = %v, want at least the %d entries after the signed head", ex, last-signed-1)
			}
			q, err := traillog.ReadQuarantine(e.db)
			if err != nil || len(q) != 1 || q[0].Seq != last || q[0].Missing != tt.missing || q[0].ID != lastEntry.ID {
				t.Fatalf("quarantine = %+v, %v; want entry #%d (%s), missing %v", q, err, last, lastEntry.ID, tt.missing)
			}
			for _, want := range []string{"quarantined trail entry", lastEntry.ID, "quarantined the trail after its valid prefix"} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, logs.String())
				}
			}
			// The trail goes on from the valid prefix; a clean restart
			// finds nothing more.
			cps := listCheckpoints(t, e, w.ID)
			checkpoint(t, e, w.ID, &cps[len(cps)-1].ID, "final")
			verify(t, e)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = openEngineAt(t, dir, withFullCheck)
			verify(t, e)
			if n := len(recoveries(t, e)); n != 1 {
				t.Fatalf("%d recovery_completed after a clean restart, want still 1", n)
			}
		})
	}
}

// TestRecovery_IntegrityCheck_RefusesBreakInsideSignedHead: the daemon
// signed entries #1 … #size; if one of them is damaged, dropping it would
// contradict the signature, so Open refuses with ErrTrailCorrupt naming the
// entry, and leaves the trail as it was.
func TestRecovery_IntegrityCheck_RefusesBreakInsideSignedHead(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, e)
	chainOfCheckpoints(t, e, w.ID, nil, 3)
	if _, err := e.SignTreeHead(testSigner(t)); err != nil {
		t.Fatal(err)
	}
	size := e.Trail().Len()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawDB(t, dir, trailtest.FlipBody(dir, size-2))

	for range 2 { // and again: a refused start changes nothing
		_, err = Open(Config{DataDir: dir})
		if !errors.Is(err, ErrTrailCorrupt) {
			t.Fatalf("Open with entry #%d of %d signed damaged = %v, want ErrTrailCorrupt", size-2, size, err)
		}
		for _, want := range []string{"inside the signed tree head", "#" + strconv.FormatUint(size-2, 10), string(trail.ViolationHashMismatch), "backup"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	}
	rawDB(t, dir, func(txn *badger.Txn) error {
		for seq := uint64(1); seq <= size; seq++ {
			if ok, err := trailtest.HasEntry(txn, seq); !ok || err != nil {
				t.Errorf("entry #%d after the refusal: stored %v, %v", seq, ok, err)
			}
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("t/q/")})
		defer it.Close()
		if it.Rewind(); it.Valid() {
			t.Errorf("a refused start quarantined %q", it.Item().Key())
		}
		return nil
	})
}

// TestRecovery_IntegrityCheck_RefusesWithNoValidPrefix: when entry #1 (the
// root's workspace_created) fails, nothing can be kept.
func TestRecovery_IntegrityCheck_RefusesWithNoValidPrefix(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	newWorker(t, e)
	crash(t, e) // no signed head at all
	rawDB(t, dir, trailtest.FlipBody(dir, 1))
	_, err = Open(Config{DataDir: dir})
	if !errors.Is(err, ErrTrailCorrupt) || !strings.Contains(err.Error(), "no valid prefix") {
		t.Fatalf("Open with entry #1 damaged = %v, want ErrTrailCorrupt: no valid prefix", err)
	}
}

// TestRecovery_IntegrityCheck_UnreadableSignedHeadRefuses: the signed tree
// head is what the check holds the trail to; if it cannot be read, Open
// refuses.
func TestRecovery_IntegrityCheck_UnreadableSignedHeadRefuses(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawDB(t, dir, func(txn *badger.Txn) error { return txn.Set(keySTH, []byte(`{"size":`)) })
	if _, err := Open(Config{DataDir: dir}); !errors.Is(err, ErrTrailCorrupt) {
		t.Fatalf("Open with an unreadable m/sth = %v, want ErrTrailCorrupt", err)
	}
}

// TestRecovery_IntegrityCheck_FullCheckFindsOldDamage: by default a start
// reads only the entries written since the previous start's check; damage
// to older entries (at rest, not from a crash) is found with FullCheck.
func TestRecovery_IntegrityCheck_FullCheckFindsOldDamage(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	newWorker(t, e)
	if _, err := e.SignTreeHead(testSigner(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngineAt(t, dir) // leaves the mark after every entry
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawDB(t, dir, trailtest.FlipBody(dir, 3))
	e, err = Open(Config{DataDir: dir})
	if err != nil {
		t.Fatalf("Open after the mark with old damage = %v; the default check starts after the mark", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{DataDir: dir, FullCheck: true}); !errors.Is(err, ErrTrailCorrupt) {
		t.Fatalf("Open with FullCheck and entry #3 damaged = %v, want ErrTrailCorrupt", err)
	}
	// The refusal removed the mark: a default start now reads everything too.
	if _, err := Open(Config{DataDir: dir}); !errors.Is(err, ErrTrailCorrupt) {
		t.Fatalf("default Open after a refusal = %v, want ErrTrailCorrupt", err)
	}
}

// TestRecovery_IntegrityCheck_RebuildsDerivedRecords: a damaged Merkle node
// or index, with every entry intact, is rebuilt from the entries: nothing is
// quarantined and the signed root still holds.
func TestRecovery_IntegrityCheck_RebuildsDerivedRecords(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, e)
	chainOfCheckpoints(t, e, w.ID, nil, 4)
	th, err := e.SignTreeHead(testSigner(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawDB(t, dir, func(txn *badger.Txn) error {
		node := binary.BigEndian.AppendUint64([]byte("t/m/\x01"), 2) // level 1, index 2
		if err := txn.Set(node, make([]byte, 32)); err != nil {
			return err
		}
		return txn.Delete([]byte("t/h/w/" + w.ID))
	})
	var logs syncBuf
	e = openEngineAt(t, dir, withFullCheck, withLog(&logs))
	verify(t, e)
	root, err := e.Trail().Root(th.Size)
	if err != nil || trail.FormatHash(root) != th.Root {
		t.Fatalf("root of the signed size after the rebuild = %x, %v; want %s", root, err, th.Root)
	}
	if q, _ := traillog.ReadQuarantine(e.db); len(q) != 0 {
		t.Fatalf("quarantined %d entries, want none", len(q))
	}
	if !strings.Contains(logs.String(), "rebuilt the trail's heads") {
		t.Errorf("log does not report the rebuild:\n%s", logs.String())
	}
	if len(recoveries(t, e)) != 0 {
		t.Errorf("recovery_completed after a clean stop with nothing quarantined")
	}
	checkpoint(t, e, w.ID, &listCheckpoints(t, e, w.ID)[3].ID, "final") // the local chain goes on
	verify(t, e)
}

// TestRecovery_Completed_OnlyAfterUncleanStop: recovery_completed, with
// exactly its eight body fields, is written after a start that finds the
// previous run did not stop cleanly, and not after a clean stop.
func TestRecovery_Completed_OnlyAfterUncleanStop(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, e)
	chainOfCheckpoints(t, e, w.ID, nil, 2)
	newWorker(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngineAt(t, dir)
	if n := len(recoveries(t, e)); n != 0 {
		t.Fatalf("%d recovery_completed after a clean stop, want 0", n)
	}
	outbox, err := e.OutboxAfter("", 0)
	if err != nil || len(outbox) == 0 {
		t.Fatalf("outbox = %d items, %v; the test needs unpublished signals", len(outbox), err)
	}
	entries := e.Trail().Len()
	crash(t, e)

	e = openEngineAt(t, dir, withFullCheck)
	recs := recoveries(t, e)
	if len(recs) != 1 {
		t.Fatalf("%d recovery_completed after an unclean stop, want 1", len(recs))
	}
	got := recs[0]
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"downtime", "envelopes_redelivered", "quarantined_entries", "signals_requeued",
		"timers_reconstructed", "trail_entries_examined", "workspaces_failed", "workspaces_recovered"}
	if !slices.Equal(keys, want) {
		t.Fatalf("recovery_completed fields = %v, want exactly %v", keys, want)
	}
	if d, err := time.ParseDuration(got["downtime"].(string)); err != nil || d < 0 {
		t.Errorf("downtime = %v (%v), want a Go duration >= 0", got["downtime"], err)
	}
	wantNums := map[string]float64{
		"workspaces_recovered": 3, "workspaces_failed": 0, "envelopes_redelivered": 0,
		"signals_requeued": float64(len(outbox)), "timers_reconstructed": 0,
		"trail_entries_examined": float64(entries), "quarantined_entries": 0,
	}
	for k, v := range wantNums {
		if got[k] != v {
			t.Errorf("recovery_completed %s = %v, want %v", k, got[k], v)
		}
	}
	verify(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngineAt(t, dir)
	if n := len(recoveries(t, e)); n != 1 {
		t.Fatalf("%d recovery_completed after a clean stop following a recovery, want still 1", n)
	}
}

// TestRecovery_Timers_ExpireWhatRanOutDuringDowntime (Recovery §3.4): a
// timeout counts from workspace_created and the outage counts, so a
// workspace whose timeout ran out while the daemon was down fails during
// recovery (workspaces_failed); the others keep their timers
// (timers_reconstructed).
func TestRecovery_Timers_ExpireWhatRanOutDuringDowntime(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := openEngineAt(t, dir, withFakeClock(clk))
	short := newWorker(t, e, map[string]any{"timeout": "1m"})
	long := newWorker(t, e, map[string]any{"timeout": "1h"})
	crash(t, e)
	clk.Advance(2 * time.Minute)

	e = openEngineAt(t, dir, withFakeClock(clk))
	if got := wsState(t, e, short.ID); got != workspace.Failed {
		t.Fatalf("workspace with a 1m timeout after 2m down is %s, want failed", got)
	}
	if got := wsState(t, e, long.ID); got != workspace.Active {
		t.Fatalf("workspace with a 1h timeout after 2m down is %s, want active", got)
	}
	recs := recoveries(t, e)
	if len(recs) != 1 || recs[0]["workspaces_failed"] != float64(1) || recs[0]["timers_reconstructed"] != float64(1) ||
		recs[0]["workspaces_recovered"] != float64(2) {
		t.Fatalf("recovery_completed = %v, want workspaces_failed 1, timers_reconstructed 1, workspaces_recovered 2", recs)
	}
	// The fake clock stands still while entries are written, so each gets
	// the next nanosecond: the last one is a few ns past the start.
	if d, _ := time.ParseDuration(recs[0]["downtime"].(string)); d < 2*time.Minute-time.Millisecond || d > 2*time.Minute {
		t.Errorf("downtime = %v, want the 2m the clock moved", recs[0]["downtime"])
	}
	if n := len(trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": short.ID, "to_state": "failed"})); n != 1 {
		t.Errorf("%d transitions of %s to failed, want 1", n, short.ID)
	}
	verify(t, e)
}

// TestRecovery_Clock_ResumesAboveLastTimestamp (Recovery §3.5): after a
// restart with the wall clock behind, the next timestamps are above the last
// entry and the last signed tree head.
func TestRecovery_Clock_ResumesAboveLastTimestamp(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := openEngineAt(t, dir, withFakeClock(clk))
	newWorker(t, e)
	clk.Advance(time.Hour)
	th, err := e.SignTreeHead(testSigner(t)) // its timestamp is after every entry
	if err != nil {
		t.Fatal(err)
	}
	crash(t, e)
	clk.Advance(-3 * time.Hour)

	e = openEngineAt(t, dir, withFakeClock(clk))
	recs := trailWhere(t, e, trail.EventRecoveryCompleted, nil)
	if len(recs) != 1 {
		t.Fatalf("%d recovery_completed, want 1", len(recs))
	}
	got, err := clock.Parse(recs[0].Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := clock.Parse(th.Timestamp)
	if !got.After(head) {
		t.Fatalf("recovery_completed at %s, not after the signed tree head at %s", recs[0].Timestamp, th.Timestamp)
	}
	verify(t, e)
	var b struct{ Downtime string }
	if err := json.Unmarshal(recs[0].Body, &b); err != nil || b.Downtime != "1ns" {
		t.Errorf("downtime with the clock behind = %q, want the clock's minimal step 1ns", b.Downtime)
	}
}

// TestRecovery_Completed_NotAfterRefusedOpen: an open refused after the
// integrity check (here: another taxonomy) never served, so the data dir
// stays clean and the next start records no recovery.
func TestRecovery_Completed_NotAfterRefusedOpen(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{DataDir: dir, Taxonomy: confTaxonomy(t)}); !errors.Is(err, ErrTaxonomyChanged) {
		t.Fatalf("Open with another taxonomy = %v, want ErrTaxonomyChanged", err)
	}
	e = openEngineAt(t, dir)
	if n := len(recoveries(t, e)); n != 0 {
		t.Fatalf("%d recovery_completed after a refused open, want 0", n)
	}
}

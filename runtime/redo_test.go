package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/workspace"
)

// TestRedoAfterBadgerLosesItsWrites: Badger writes without syncing (each
// batch's segment block, synced before its answer, records every write of
// the batch), so a crash may leave Badger with an earlier state than the
// blocks. Here Badger's files are put back as they were before a run of
// every kind of write the engine makes (workspaces and their tokens,
// transitions, checkpoints, signals and the outbox, envelopes small and
// large, leases, acknowledgements, users, an abort), with the run's blocks
// kept: the next open redoes them, and the database then holds exactly what
// it held after the run, key for key, and the trail verifies. A write the
// committer made without recording it would be missing.
func TestRedoAfterBadgerLosesItsWrites(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	w1 := newWorker(t, e)
	last := chainOfCheckpoints(t, e, w1.ID, nil, 3)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	before := t.TempDir()
	copyBadgerFiles(t, dir, before)

	e = openEngineAt(t, dir)
	w2, err := e.CreateWorkspaceGranting(ctx, e.Root(), []byte(`{"role":"worker"}`), func(g Grants, w *workspace.Workspace) error {
		return g.Put([32]byte{2}, principal.Principal{Kind: principal.KindAgent, Workspace: w.ID})
	})
	if err != nil {
		t.Fatal(err)
	}
	directive(t, e, e.Root(), w2.ID)
	chainOfCheckpoints(t, e, w1.ID, last, 4)
	chainOfCheckpoints(t, e, w2.ID, nil, 2)
	emitOK(t, e, w2.ID, `{"type":"escalation","reason":"a question"}`)
	large := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB: kept in the segment block
	sendOK(t, e, e.Root(), mustJSON(map[string]any{"to": w2.ID, "type": "directive", "payload": map[string]any{"content": large}}))
	sendOK(t, e, e.Root(), envBody(w2.ID, "directive", "urgent"))
	sawLarge := false
	for {
		env, err := e.NextEnvelope(ctx, w2.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if env == nil {
			break
		}
		sawLarge = sawLarge || env.Payload.Content == large
		if _, err := e.AckEnvelope(ctx, w2.ID, env.ID); err != nil {
			t.Fatal(err)
		}
	}
	if !sawLarge {
		t.Fatal("the large envelope did not read back as sent")
	}
	out, err := e.OutboxAfter("", 2)
	if err != nil || len(out) == 0 {
		t.Fatalf("outbox: %v, %v", out, err)
	}
	if err := e.AckOutbox(out[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateUser(ctx, e.Root(), principal.Principal{Kind: principal.KindUser, Name: "ada"}, nil, func(g Grants) error {
		return g.Put([32]byte{3}, principal.Principal{Kind: principal.KindUser, Name: "ada"})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Suspend(ctx, e.Root(), w1.ID, "a pause"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Abort(ctx, e.Root(), w2.ID, "enough"); err != nil {
		t.Fatal(err)
	}
	trailLen := e.Trail().Len()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	want := dumpDB(t, dir)

	// The crash: Badger as it was before the run; the blocks as written.
	copyBadgerFiles(t, before, dir)
	if got := dumpDB(t, dir); len(got) >= len(want) {
		t.Fatalf("restored database holds %d keys, the run's %d: nothing to redo", len(got), len(want))
	}
	e = openEngineAt(t, dir)
	if e.Trail().Len() != trailLen {
		t.Errorf("trail of %d entries after the redo, %d before the crash", e.Trail().Len(), trailLen)
	}
	verify(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	got := dumpDB(t, dir)
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("key %q after the redo: %q (present %v); before the crash %q", k, trunc(g), ok, trunc(v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("key %q after the redo, not before the crash", k)
		}
	}
}

// copyBadgerFiles replaces Badger's files in to (not its segment files)
// with those in from.
func copyBadgerFiles(t *testing.T, from, to string) {
	t.Helper()
	old, err := os.ReadDir(to)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range old {
		if f.Name() != seglog.Dir {
			if err := os.RemoveAll(filepath.Join(to, f.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name() == seglog.Dir || f.IsDir() {
			continue
		}
		src, err := os.Open(filepath.Join(from, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		// Modes kept, as a restore must (cp -a): envelope.key is 0600.
		mode := os.FileMode(0o644)
		if info, ierr := f.Info(); ierr == nil {
			mode = info.Mode().Perm()
		}
		dst, err := os.OpenFile(filepath.Join(to, f.Name()), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err == nil {
			_, err = io.Copy(dst, src)
			err = errors.Join(err, dst.Close())
		}
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// dumpDB returns every key of the database in dir with its user meta and
// value, except the trail's check mark (t/c: the start's check moves it).
func dumpDB(t *testing.T, dir string) map[string]string {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			if bytes.Equal(item.Key(), []byte("t/c")) {
				continue
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			out[string(item.KeyCopy(nil))] = fmt.Sprintf("%d:%x", item.UserMeta(), v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

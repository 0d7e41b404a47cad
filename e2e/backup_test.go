package e2e

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/trail"
)

// copyDir copies the tree at src to dst keeping file modes, as cp -a or
// tar -p do (the daemon refuses an admin.token or trail.key readable by
// others).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm())
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// TestBackupAndRestore is the procedure of docs/operations.md: stop the
// daemon, copy the data dir, start again. The copy verifies offline, and a
// daemon started on it has the state of the moment of the copy (later
// checkpoints are not in it), accepts the same tokens, and goes on from
// there with a verifying trail.
func TestBackupAndRestore(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	d := startDaemon(t, dir)
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	ws, tok := created.Workspace.ID, created.Token
	newWorkerActive := func(url string) *client.Client {
		return dial(t, ctx, client.Options{URL: url, Token: tok, Workspace: ws})
	}
	_, err = coord.SendEnvelope(ctx, client.EnvelopeRequest{To: ws, Type: "directive",
		Payload: envelope.Payload{Content: "write"}})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkerActive(d.url)
	first, err := w.CreateCheckpoint(ctx, artifact(nil, "provisional", "before the backup"))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	coord.Close()
	d.stop()

	backup := filepath.Join(t.TempDir(), "backup")
	copyDir(t, dir, backup)
	rep, err := datadir.Verify(backup)
	if err != nil || !rep.OK {
		t.Fatalf("datadir.Verify(backup) = %+v, %v", rep, err)
	}

	// The original goes on after the backup.
	d = startDaemon(t, dir)
	w = newWorkerActive(d.url)
	if _, err := w.CreateCheckpoint(ctx, artifact(&first.ID, "provisional", "after the backup")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	d.stop()

	// Restore: a daemon on the copy.
	d = startDaemon(t, backup)
	coord = dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	list, err := coord.ListCheckpoints(ctx, ws, "", 10)
	if err != nil || len(list) != 1 || list[0].ID != first.ID || list[0].Digest != first.Digest {
		t.Fatalf("checkpoints after the restore = %v, %v; want only %s", list, err, first.ID)
	}
	w = newWorkerActive(d.url)
	if _, err := w.CreateCheckpoint(ctx, artifact(&first.ID, "provisional", "after the restore")); err != nil {
		t.Fatalf("checkpoint after the restore with the same token: %v", err)
	}
	if v, err := coord.VerifyTrail(ctx, ""); err != nil || !v.OK {
		t.Fatalf("VerifyTrail after the restore = %+v, %v", v, err)
	}
	for e, err := range coord.Entries(ctx, client.TrailQuery{EventType: trail.EventRecoveryCompleted}) {
		t.Fatalf("restoring a cleanly stopped copy: %s %s, %v; want no recovery", e.EventType, e.Body, err)
	}
	w.Close()
	coord.Close()
	d.stop()
	if rep, err := datadir.Verify(backup); err != nil || !rep.OK {
		t.Fatalf("datadir.Verify(restored) = %+v, %v", rep, err)
	}
}

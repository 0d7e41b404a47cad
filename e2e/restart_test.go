package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
)

// TestRestartKeepsChainsMonotonic stops the daemon (SIGTERM) and kills it
// (SIGKILL) in the middle of a worker's chain: after each restart the chain
// continues from the same head, nothing is lost, and ids and timestamps keep
// increasing.
func TestRestartKeepsChainsMonotonic(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	d := startDaemon(t, dir)
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	_, tok := newWorkerToken(t, ctx, coord, d.url, true, "")
	var ws string
	var head *string
	var made []checkpointchain.Checkpoint
	write := func(url string, n int) {
		w := dial(t, ctx, client.Options{URL: url, Token: tok, Workspace: ws})
		for i := 0; i < n; i++ {
			cp, err := w.CreateCheckpoint(ctx, artifact(head, "provisional", "step"))
			if err != nil {
				t.Fatal(err)
			}
			head = &cp.ID
			made = append(made, cp)
		}
		w.Close()
	}
	list, err := coord.ListWorkspaces(ctx, coord.Workspace(), "")
	if err != nil || len(list) != 1 {
		t.Fatalf("ListWorkspaces = %v, %v", list, err)
	}
	ws = list[0].ID
	write(d.url, 3)
	coord.Close()
	d.stop()

	d = startDaemon(t, dir)
	write(d.url, 3)
	d.kill()

	d = startDaemon(t, dir)
	write(d.url, 2)
	coord = dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	got, err := coord.ListCheckpoints(ctx, ws, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(made) {
		t.Fatalf("chain has %d checkpoints after two restarts, want %d", len(got), len(made))
	}
	for i, cp := range got {
		if cp.ID != made[i].ID || cp.Digest != made[i].Digest {
			t.Fatalf("checkpoint %d = %s (%s), want %s (%s)", i, cp.ID, cp.Digest, made[i].ID, made[i].Digest)
		}
		if i > 0 && (cp.ID <= got[i-1].ID || cp.Timestamp <= got[i-1].Timestamp || cp.ParentID() != got[i-1].ID) {
			t.Fatalf("checkpoint %d (%s at %s) does not follow %s at %s", i, cp.ID, cp.Timestamp, got[i-1].ID, got[i-1].Timestamp)
		}
	}
	v, err := coord.VerifyTrail(ctx, "")
	if err != nil || !v.OK {
		t.Fatalf("VerifyTrail after restarts = %+v, %v", v, err)
	}
}

// TestKillBetweenCommitAndPublish makes the publish of a committed signal
// fail (the signal stream is gone), kills the daemon with the signal still
// unpublished, and restarts it: the signal arrives, and there is exactly one
// checkpoint. No principal of the embedded server can touch the stream, so
// the daemon runs on an external server, whose own token may.
func TestKillBetweenCommitAndPublish(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	const srvToken = "kill-between-commit-and-publish"
	url := startNATSServer(t, srvToken)
	args := []string{"-nats-url", url, "-nats-token", srvToken}
	d := startDaemon(t, dir, args...)
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin, NATSToken: srvToken})
	worker := newWorker(t, ctx, coord, d.url, true, srvToken)

	// Delete the stream so the daemon's publish after the next commit
	// cannot succeed.
	nc, err := nats.Connect(d.url, nats.Token(srvToken))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, "WACP_SIGNALS"); err != nil {
		t.Fatalf("delete stream: %v", err)
	}
	cp, err := worker.CreateCheckpoint(ctx, artifact(nil, "final", "only once"))
	if err != nil {
		t.Fatalf("CreateCheckpoint with the stream gone: %v (the commit does not depend on the publish)", err)
	}
	// No stream can confirm the publish, so the signal stays in the outbox.
	if _, err := js.Stream(ctx, "WACP_SIGNALS"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream lookup = %v, want ErrStreamNotFound", err)
	}
	nc.Close()
	worker.Close()
	coord.Close()
	d.kill()

	d = startDaemon(t, dir, args...)
	coord = dial(t, ctx, client.Options{URL: d.url, Token: d.admin, NATSToken: srvToken})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	signals := watch(t, wctx, coord, "after-restart")
	waitSignals(t, signals, cp.ID)
	list, err := coord.ListCheckpoints(ctx, cp.Workspace, "", 10)
	if err != nil || len(list) != 1 || list[0].ID != cp.ID {
		t.Fatalf("checkpoints after restart = %v, %v; want exactly %s", list, err, cp.ID)
	}
}

package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
)

// TestPermissionBoundary checks that a worker's token cannot act for
// another workspace: the NATS server refuses the publish, nothing reaches
// the daemon, and the other chain is unchanged.
func TestPermissionBoundary(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if err != nil {
		t.Fatalf("CreateWorkspace = %v", err)
	}
	directive(t, ctx, coord, created.Workspace.ID, "go")
	w2 := newWorker(t, ctx, coord, url, true)

	// Worker 1's token, pretending to be worker 2.
	impostor := dial(t, ctx, client.Options{URL: url, Token: created.Token, Workspace: w2.Workspace()})
	_, err = impostor.CreateCheckpoint(ctx, artifact(nil, checkpointchain.StatusFinal))
	if err == nil {
		t.Fatal("CreateCheckpoint on another workspace's subject succeeded")
	}
	t.Logf("impostor: %v", err)
	if !errors.Is(err, client.ErrPermission) && !errors.Is(err, client.ErrUnreachable) {
		t.Errorf("CreateCheckpoint on another workspace = %v, want ErrPermission or ErrUnreachable", err)
	}
	if got := client.ExitCode(err); got != 2 && got != 5 {
		t.Errorf("ExitCode(%v) = %d, want 2 (or 5)", err, got)
	}
	if list, err := coord.ListCheckpoints(ctx, w2.Workspace(), "", 0); err != nil || len(list) != 0 {
		t.Errorf("worker 2's chain = %d checkpoints, %v; want unchanged (0)", len(list), err)
	}

	// The same token acting as itself works.
	self := dial(t, ctx, client.Options{URL: url, Token: created.Token, Workspace: created.Workspace.ID})
	if _, err := self.CreateCheckpoint(ctx, artifact(nil, checkpointchain.StatusFinal)); err != nil {
		t.Errorf("CreateCheckpoint on its own workspace = %v", err)
	}

	// Nor may it follow another workspace's trail, or use another consumer.
	err = self.TailTrail(ctx, w2.Workspace()+".>", func(trail.Entry) error { return nil })
	if !errors.Is(err, client.ErrPermission) {
		t.Errorf("TailTrail(another workspace) = %v, want ErrPermission", err)
	}
	// The daemon makes consumers; an agent's is named after its workspace.
	err = self.Watch(ctx, client.WatchOptions{Durable: "other"}, func(signal.Signal) error { return nil })
	if ce := (*client.Error)(nil); !errors.As(err, &ce) || ce.Code != "permission_denied" {
		t.Errorf("Watch(durable other) = %v, want permission_denied", err)
	}
	if _, err := self.ReadTrail(ctx, client.TrailQuery{}); !errors.Is(err, client.ErrPermission) {
		t.Errorf("ReadTrail with an agent token = %v, want ErrPermission", err)
	}
}

// TestAgentWatch checks that an agent follows its own signals through the
// one durable consumer its token may use, named after its workspace.
func TestAgentWatch(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	worker := newWorker(t, ctx, coord, url, true)

	got := make(chan signal.Signal, 4)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- worker.Watch(wctx, client.WatchOptions{Durable: worker.Workspace(), DeliverAll: true},
			func(s signal.Signal) error { got <- s; return nil })
	}()
	// The root acknowledges the worker's query with a signal to the worker.
	q, err := worker.SendEnvelope(ctx, client.EnvelopeRequest{
		To: coord.Workspace(), Type: taxonomy.EnvelopeQuery, Payload: envelope.Payload{Content: "which file?"},
	})
	if err != nil {
		t.Fatalf("SendEnvelope(query) = %v", err)
	}
	select {
	case s := <-got:
		if s.Type != taxonomy.SignalAcknowledged || s.Ref == nil || *s.Ref != q.ID {
			t.Errorf("signal = %+v, want acknowledged of %s", s, q.ID)
		}
	case err := <-done:
		t.Fatalf("Watch = %v", err)
	case <-ctx.Done():
		t.Fatal("no signal")
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Watch after cancel = %v, want nil", err)
	}
}

// TestTailTrail checks the live trail feed.
func TestTailTrail(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	worker := newWorker(t, ctx, coord, url, true)

	entries := make(chan trail.Entry, 64)
	tctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- worker.TailTrail(tctx, "", func(e trail.Entry) error { entries <- e; return nil })
	}()
	// The feed has no replay, so keep making entries until one arrives.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for seen := false; !seen; {
		if _, err := worker.EmitSignal(ctx, client.SignalRequest{Type: string(taxonomy.SignalReady)}); err != nil {
			t.Fatalf("EmitSignal(ready) = %v", err)
		}
		select {
		case e := <-entries:
			if e.Workspace != worker.Workspace() {
				t.Errorf("tail entry of %q, want %s", e.Workspace, worker.Workspace())
			}
			seen = true
		case <-tick.C:
		case err := <-done:
			t.Fatalf("TailTrail = %v", err)
		case <-ctx.Done():
			t.Fatal("no entry on the live feed")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("TailTrail after cancel = %v, want nil", err)
	}
}

func TestDialErrors(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)

	_, err := client.Dial(ctx, client.Options{URL: url, Token: "wacp_unknown"})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "unauthorized" || client.ExitCode(err) != 2 {
		t.Errorf("Dial(unknown token) = %v, want *Error unauthorized (exit 2)", err)
	}
	if err != nil && strings.Contains(err.Error(), "wacp_unknown") {
		t.Errorf("Dial error %q shows the token", err)
	}

	empty := t.TempDir()
	if _, err := client.Dial(ctx, client.Options{DataDir: empty}); !errors.Is(err, client.ErrUnreachable) || client.ExitCode(err) != 5 {
		t.Errorf("Dial(empty data dir) = %v, want ErrUnreachable (exit 5)", err)
	}

	tok, err := os.ReadFile(filepath.Join(dir, client.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Dial(ctx, client.Options{URL: "nats://127.0.0.1:1", Token: strings.TrimSpace(string(tok)), Timeout: time.Second})
	if !errors.Is(err, client.ErrUnreachable) {
		t.Errorf("Dial(no server) = %v, want ErrUnreachable", err)
	}

	// Environment discovery: WACP_URL and WACP_TOKEN.
	t.Setenv(client.EnvURL, url)
	t.Setenv(client.EnvToken, strings.TrimSpace(string(tok)))
	c, err := client.Dial(ctx, client.Options{DataDir: empty})
	if err != nil {
		t.Fatalf("Dial(from environment) = %v", err)
	}
	c.Close()
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&client.Error{Code: "invalid_parent"}, 2},
		{&client.Error{Code: "unauthorized"}, 2},
		{&client.Error{Code: "unavailable"}, 1},
		{&client.Error{Code: "internal"}, 1},
		{&client.Error{Code: "permission_denied", Err: client.ErrPermission}, 2},
		{client.ErrUnreachable, 5},
		{errors.New("other"), 1},
	}
	for _, tt := range tests {
		if got := client.ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestInboxWait checks that a long poll may outlast the client's request
// timeout: the request waits for wait plus the timeout.
func TestInboxWait(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if err != nil {
		t.Fatalf("CreateWorkspace = %v", err)
	}
	worker := dial(t, ctx, client.Options{URL: url, Token: created.Token, Workspace: created.Workspace.ID, Timeout: 500 * time.Millisecond})
	start := time.Now()
	env, err := worker.NextEnvelope(ctx, time.Second)
	if env != nil || err != nil {
		t.Fatalf("NextEnvelope(empty inbox, 1s) = %v, %v; want nil, nil", env, err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("NextEnvelope(1s) returned after %v, want at least 1s", d)
	}
}

// TestWatchOrdered checks the coordinator's watch without a durable
// consumer, replaying from the start.
func TestWatchOrdered(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	worker := newWorker(t, ctx, coord, url, true) // its acknowledged signal is stored

	got := make(chan signal.Signal, 4)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- coord.Watch(wctx, client.WatchOptions{DeliverAll: true},
			func(s signal.Signal) error { got <- s; return nil })
	}()
	select {
	case s := <-got:
		if s.From != worker.Workspace() || s.Type != taxonomy.SignalAcknowledged {
			t.Errorf("first signal = %+v, want the worker's acknowledged", s)
		}
	case err := <-done:
		t.Fatalf("Watch = %v", err)
	case <-ctx.Done():
		t.Fatal("no signal")
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Watch after cancel = %v, want nil", err)
	}

	// An agent replays only through its durable consumer.
	err := worker.Watch(ctx, client.WatchOptions{DeliverAll: true}, func(signal.Signal) error { return nil })
	if err == nil || errors.Is(err, client.ErrPermission) {
		t.Errorf("agent Watch(DeliverAll, no durable) = %v, want an error asking for Durable", err)
	}
}

package e2e

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/workspace"
)

func dial(t *testing.T, ctx context.Context, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.Dial(ctx, opts)
	if err != nil {
		t.Fatalf("Dial(%s): %v", opts.Workspace, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func artifact(parent *string, status, content string) client.CheckpointRequest {
	return client.CheckpointRequest{
		Type: "artifact", Intent: "part of the walkthrough", Parent: parent, Status: status, Confidence: "high",
		Payload: checkpointchain.Payload{FilesChanged: []string{"parser.go"}, Content: content},
	}
}

// newWorker creates a worker through the coordinator and returns a client
// acting as it, activated with a directive when active is set.
func newWorker(t *testing.T, ctx context.Context, coord *client.Client, url string, active bool, nats string) *client.Client {
	c, _ := newWorkerToken(t, ctx, coord, url, active, nats)
	return c
}

// newWorkerToken is newWorker that also returns the worker's token.
func newWorkerToken(t *testing.T, ctx context.Context, coord *client.Client, url string, active bool, nats string) (*client.Client, string) {
	t.Helper()
	created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: "worker"})
	if err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	if active {
		_, err := coord.SendEnvelope(ctx, client.EnvelopeRequest{To: created.Workspace.ID, Type: "directive",
			Payload: envelope.Payload{Content: "write the parser"}})
		if err != nil {
			t.Fatalf("directive: %v", err)
		}
	}
	return dial(t, ctx, client.Options{URL: url, Token: created.Token, Workspace: created.Workspace.ID, NATSToken: nats}), created.Token
}

// watch follows the coordinator's signals with a durable consumer and sends
// them on the returned channel.
func watch(t *testing.T, ctx context.Context, coord *client.Client, durable string) <-chan signal.Signal {
	t.Helper()
	ch := make(chan signal.Signal, 64)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- coord.Watch(wctx, client.WatchOptions{Durable: durable, DeliverAll: true}, func(s signal.Signal) error {
			ch <- s
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Watch: %v", err)
		}
	})
	return ch
}

// waitSignals collects signals until it has seen a checkpoint signal for
// each ref (repeats are dropped by id, as at-least-once delivery asks).
func waitSignals(t *testing.T, ch <-chan signal.Signal, refs ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, r := range refs {
		want[r] = true
	}
	timeout := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case s := <-ch:
			if s.Type == "checkpoint" && s.Ref != nil {
				delete(want, *s.Ref)
			}
		case <-timeout:
			t.Fatalf("no checkpoint signal for %v within 30s", want)
		}
	}
}

// TestWalkthrough is the README walkthrough against the real binary: a
// coordinator creates a worker, sends a directive, the worker writes two
// checkpoints, the coordinator sees both signals, integrates, and an
// auditor verifies the trail. The daemon then stops cleanly on SIGTERM.
func TestWalkthrough(t *testing.T) {
	ctx := ctxT(t)
	d := startDaemon(t, t.TempDir())
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	signals := watch(t, ctx, coord, "coordinator")

	worker := newWorker(t, ctx, coord, d.url, true, "")
	env, err := worker.NextEnvelope(ctx, 10*time.Second)
	if err != nil || env == nil || env.Type != "directive" {
		t.Fatalf("worker NextEnvelope = %+v, %v; want the directive", env, err)
	}
	c1, err := worker.CreateCheckpoint(ctx, artifact(nil, "provisional", "draft"))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := worker.CreateCheckpoint(ctx, artifact(&c1.ID, "final", "done"))
	if err != nil {
		t.Fatal(err)
	}
	waitSignals(t, signals, c1.ID, c2.ID)

	if _, err := worker.EmitSignal(ctx, client.SignalRequest{Type: "complete"}); err != nil {
		t.Fatal(err)
	}
	res, err := coord.Integrate(ctx, client.IntegrateRequest{Workspace: worker.Workspace(), Decision: "accept"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Checkpoint != c2.ID || res.Workspace.State != workspace.Closed {
		t.Fatalf("Integrate = %+v, want checkpoint %s and closed", res, c2.ID)
	}
	tok, err := coord.CreateToken(ctx, "auditor", "alice")
	if err != nil {
		t.Fatal(err)
	}
	aud := dial(t, ctx, client.Options{URL: d.url, Token: tok})
	v, err := aud.VerifyTrail(ctx, "")
	if err != nil || !v.OK || v.Entries < 10 {
		t.Fatalf("auditor VerifyTrail = %+v, %v; want ok", v, err)
	}
	// A signed tree head soon covers the whole trail (the daemon signs
	// within 250ms of growth).
	deadline := time.Now().Add(10 * time.Second)
	for {
		th, err := aud.TreeHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if th.Size >= v.Entries {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tree head size %d, trail has %d entries, 10s after the last commit", th.Size, v.Entries)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The auditor exports a bundle and checks it offline, without trusting
	// the daemon.
	var bundle bytes.Buffer
	th, err := aud.Export(ctx, &bundle)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := auditor.Verify(&bundle)
	if err != nil || !rep.OK || rep.Size != th.Size || rep.Objects != 2 {
		t.Fatalf("offline Verify(bundle) = %+v, %v; want ok, size %d, 2 objects", rep, err, th.Size)
	}
	d.stop()
	// After a clean stop the data dir verifies on its own, every entry signed.
	rep, err = datadir.Verify(d.dir)
	if err != nil || !rep.OK || rep.Size != uint64(rep.Entries) {
		t.Fatalf("datadir.Verify after a clean stop = %+v, %v; want ok with every entry under the signed head", rep, err)
	}
}

// TestRejectionReasonsOverTheWire checks each checkpoint rejection reason
// arrives as the contract's error, with exit code 2.
func TestRejectionReasonsOverTheWire(t *testing.T) {
	ctx := ctxT(t)
	d := startDaemon(t, t.TempDir())
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	active := newWorker(t, ctx, coord, d.url, true, "")
	idle := newWorker(t, ctx, coord, d.url, false, "")
	first, err := active.CreateCheckpoint(ctx, artifact(nil, "provisional", "x"))
	if err != nil {
		t.Fatal(err)
	}
	bogus := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	tests := []struct {
		name string
		c    *client.Client
		req  client.CheckpointRequest
		want string
	}{
		{"permission_denied", active, func() client.CheckpointRequest {
			r := artifact(&first.ID, "final", "x")
			r.Type = "observation"
			return r
		}(), "permission_denied"},
		{"invalid_type", active, func() client.CheckpointRequest {
			r := artifact(&first.ID, "final", "x")
			r.Type = "poem"
			return r
		}(), "invalid_type"},
		{"invalid_structure", active, func() client.CheckpointRequest {
			r := artifact(&first.ID, "final", "x")
			r.Intent = ""
			return r
		}(), "invalid_structure"},
		{"invalid_parent", active, artifact(&bogus, "final", "x"), "invalid_parent"},
		{"workspace_not_active", idle, artifact(nil, "final", "x"), "workspace_not_active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.c.CreateCheckpoint(ctx, tt.req)
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Code != tt.want {
				t.Fatalf("CreateCheckpoint = %v, want error code %s", err, tt.want)
			}
			if got := client.ExitCode(err); got != 2 {
				t.Fatalf("ExitCode(%v) = %d, want 2", err, got)
			}
		})
	}
	// Each rejection is in the trail.
	page, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: "checkpoint_rejected"})
	if err != nil || len(page.Entries) != len(tests) {
		t.Fatalf("checkpoint_rejected entries = %d, %v; want %d", len(page.Entries), err, len(tests))
	}
}

// TestTokenRefusedOnOtherWorkspace: a worker's token cannot act on another
// workspace's subjects; the NATS server refuses it and nothing changes.
func TestTokenRefusedOnOtherWorkspace(t *testing.T) {
	ctx := ctxT(t)
	d := startDaemon(t, t.TempDir())
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	_, tok1 := newWorkerToken(t, ctx, coord, d.url, true, "")
	w2 := newWorker(t, ctx, coord, d.url, true, "")

	// w1's token, pretending to be w2.
	forged, err := client.Dial(ctx, client.Options{URL: d.url, Token: tok1, Workspace: w2.Workspace(), Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer forged.Close()
	_, err = forged.CreateCheckpoint(ctx, artifact(nil, "final", "not mine"))
	if err == nil {
		t.Fatal("a checkpoint on another workspace's subject succeeded")
	}
	if !errors.Is(err, client.ErrPermission) {
		t.Fatalf("err = %v, want ErrPermission", err)
	}
	if _, err := coord.Head(ctx, w2.Workspace(), false); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("w2's chain after the forged call: Head = %v, want not_found (empty chain)", err)
	}

	// An unknown token is refused at connect and the refusal is recorded.
	_, err = client.Dial(ctx, client.Options{URL: d.url, Token: "wacp_guess", Timeout: 3 * time.Second})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "unauthorized" {
		t.Fatalf("Dial(unknown token) = %v, want unauthorized", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: "authentication_failed"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entries) > 0 {
			if strings.Contains(string(page.Entries[0].Body), "wacp_guess") {
				t.Fatalf("authentication_failed records the token: %s", page.Entries[0].Body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no authentication_failed entry within 10s of a refused connection")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// startDaemon runs the real daemon in-process on a free port and stops it
// when the test ends, checking that Run returns nil. It returns the data dir
// and the NATS URL.
func startDaemon(t *testing.T) (dir, url string) {
	t.Helper()
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace} {
		t.Setenv(v, "")
	}
	d := daemontest.Start(t, daemon.Config{})
	return d.Dir, d.URL
}

// testCtx is a context that ends with the test (or after a minute).
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func dial(t *testing.T, ctx context.Context, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.Dial(ctx, opts)
	if err != nil {
		t.Fatalf("Dial(%+v) = %v", opts, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newWorker creates a worker under the root and dials it with its token.
// With active it also sends it a directive, which makes it active.
func newWorker(t *testing.T, ctx context.Context, coord *client.Client, url string, active bool) *client.Client {
	t.Helper()
	created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if err != nil {
		t.Fatalf("CreateWorkspace = %v", err)
	}
	if created.Token == "" || created.Workspace == nil || created.Workspace.State != workspace.Idle {
		t.Fatalf("CreateWorkspace = %+v, want an idle workspace and a token", created)
	}
	if active {
		directive(t, ctx, coord, created.Workspace.ID, "start")
	}
	return dial(t, ctx, client.Options{URL: url, Token: created.Token, Workspace: created.Workspace.ID})
}

func directive(t *testing.T, ctx context.Context, coord *client.Client, to, content string) envelope.Envelope {
	t.Helper()
	env, err := coord.SendEnvelope(ctx, client.EnvelopeRequest{
		To: to, Type: taxonomy.EnvelopeDirective, Payload: envelope.Payload{Content: content},
	})
	if err != nil {
		t.Fatalf("SendEnvelope(directive to %s) = %v", to, err)
	}
	return env
}

func artifact(parent *string, status string) client.CheckpointRequest {
	return client.CheckpointRequest{
		Type: taxonomy.CheckpointArtifact, Intent: "record progress", Parent: parent,
		Status: status, Confidence: checkpointchain.ConfidenceHigh,
		Payload: checkpointchain.Payload{Content: "work", FilesChanged: []string{"a.go"}},
	}
}

// TestWalkthrough runs the protocol's basic round through the client: the
// coordinator creates a worker and directs it, the worker reads the
// directive and writes two checkpoints, the coordinator's durable watch
// sees both checkpoint signals, the worker completes, the coordinator
// integrates, and the trail verifies.
func TestWalkthrough(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})

	info, err := coord.Info(ctx)
	if err != nil {
		t.Fatalf("Info = %v", err)
	}
	if info.RootWorkspace == "" || coord.Workspace() != info.RootWorkspace {
		t.Fatalf("Info().RootWorkspace = %q, Workspace() = %q, want equal and set", info.RootWorkspace, coord.Workspace())
	}
	if info.HashAlgorithm != "blake3-256" {
		t.Errorf("Info().HashAlgorithm = %q, want blake3-256", info.HashAlgorithm)
	}

	// The coordinator follows its children's signals from the start.
	signals := make(chan signal.Signal, 16)
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- coord.Watch(wctx, client.WatchOptions{Durable: "coord", DeliverAll: true},
			func(s signal.Signal) error { signals <- s; return nil })
	}()
	next := func(typ taxonomy.SignalType) signal.Signal {
		t.Helper()
		for {
			select {
			case s := <-signals:
				if s.Type == typ {
					return s
				}
			case err := <-watchDone:
				t.Fatalf("Watch returned %v while waiting for a %s signal", err, typ)
			case <-ctx.Done():
				t.Fatalf("no %s signal: %v", typ, ctx.Err())
			}
		}
	}

	worker := newWorker(t, ctx, coord, url, false)
	ws := worker.Workspace()
	sent := directive(t, ctx, coord, ws, "write the parser")

	env, err := worker.NextEnvelope(ctx, 5*time.Second)
	if err != nil || env == nil {
		t.Fatalf("NextEnvelope = %v, %v; want the directive", env, err)
	}
	if env.ID != sent.ID || env.Payload.Content != "write the parser" || env.Type != taxonomy.EnvelopeDirective {
		t.Errorf("NextEnvelope = %+v, want directive %s", env, sent.ID)
	}
	if env, err := worker.NextEnvelope(ctx, 0); env != nil || err != nil {
		t.Errorf("NextEnvelope(empty inbox) = %v, %v; want nil, nil", env, err)
	}

	cp1, err := worker.CreateCheckpoint(ctx, artifact(nil, checkpointchain.StatusProvisional))
	if err != nil {
		t.Fatalf("CreateCheckpoint #1 = %v", err)
	}
	cp2, err := worker.CreateCheckpoint(ctx, artifact(&cp1.ID, checkpointchain.StatusFinal))
	if err != nil {
		t.Fatalf("CreateCheckpoint #2 = %v", err)
	}
	if cp1.Workspace != ws || cp2.ParentID() != cp1.ID || cp2.Digest.IsZero() {
		t.Errorf("checkpoints = %+v, %+v; want a chain of two in %s with digests", cp1, cp2, ws)
	}
	for _, want := range []string{cp1.ID, cp2.ID} {
		s := next(taxonomy.SignalCheckpoint)
		if s.Ref == nil || *s.Ref != want || s.From != ws {
			t.Errorf("checkpoint signal = %+v, want from %s with ref %s", s, ws, want)
		}
	}

	head, err := coord.Head(ctx, ws, true)
	if err != nil || head.ID != cp2.ID {
		t.Errorf("Head(%s, final) = %s, %v; want %s", ws, head.ID, err, cp2.ID)
	}
	list, err := coord.ListCheckpoints(ctx, ws, "", 0)
	if err != nil || len(list) != 2 || list[0].ID != cp1.ID || list[1].ID != cp2.ID {
		t.Errorf("ListCheckpoints(%s) = %d checkpoints, %v; want [%s %s]", ws, len(list), err, cp1.ID, cp2.ID)
	}
	if got, err := worker.GetCheckpoint(ctx, cp1.ID); err != nil || got.Digest != cp1.Digest {
		t.Errorf("GetCheckpoint(%s) = %v, %v; want digest %v", cp1.ID, got.Digest, err, cp1.Digest)
	}

	if _, err := worker.EmitSignal(ctx, client.SignalRequest{Type: string(taxonomy.SignalComplete)}); err != nil {
		t.Fatalf("EmitSignal(complete) = %v", err)
	}
	if s := next(taxonomy.SignalComplete); s.From != ws {
		t.Errorf("complete signal from %s, want %s", s.From, ws)
	}
	stopWatch()
	if err := <-watchDone; err != nil {
		t.Errorf("Watch after cancel = %v, want nil", err)
	}

	mine, err := worker.Trail(ctx, "", 0, "")
	if err != nil || len(mine.Entries) == 0 {
		t.Errorf("worker Trail = %d entries, %v; want some", len(mine.Entries), err)
	}
	res, err := coord.Integrate(ctx, client.IntegrateRequest{Workspace: ws, Decision: "accept"})
	if err != nil {
		t.Fatalf("Integrate = %v", err)
	}
	if res.Outcome != "closed" || res.Checkpoint != cp2.ID || res.Workspace.State != workspace.Closed {
		t.Errorf("Integrate = %+v, want closed with %s", res, cp2.ID)
	}

	// The durable consumer resumes after what it acknowledged: the next
	// signal it sees is a new one.
	worker2 := newWorker(t, ctx, coord, url, true)
	wctx, stopWatch = context.WithCancel(ctx)
	go func() {
		watchDone <- coord.Watch(wctx, client.WatchOptions{Durable: "coord"},
			func(s signal.Signal) error { signals <- s; return nil })
	}()
	select {
	case s := <-signals:
		if s.From != worker2.Workspace() || s.Type != taxonomy.SignalAcknowledged {
			t.Errorf("first signal after resume = %+v, want worker 2's acknowledged", s)
		}
	case err := <-watchDone:
		t.Fatalf("Watch = %v", err)
	case <-ctx.Done():
		t.Fatal("no signal after resume")
	}
	stopWatch()
	if err := <-watchDone; err != nil {
		t.Errorf("Watch after cancel = %v, want nil", err)
	}

	vr, err := coord.VerifyTrail(ctx, "")
	if err != nil || !vr.OK || vr.Entries == 0 {
		t.Errorf("VerifyTrail = %+v, %v; want ok", vr, err)
	}
	if vr, err := coord.VerifyTrail(ctx, ws); err != nil || !vr.OK {
		t.Errorf("VerifyTrail(%s) = %+v, %v; want ok", ws, vr, err)
	}
	page, err := coord.ReadTrail(ctx, client.TrailQuery{Workspace: ws, EventType: trail.EventCheckpointCreated})
	if err != nil || len(page.Entries) != 2 {
		t.Errorf("ReadTrail(checkpoint_created of %s) = %d entries, %v; want 2", ws, len(page.Entries), err)
	}
	// The worker's token ended with its workspace when it closed
	// (runtime.TestAgentTokenEndsWithItsWorkspace), so it read its trail
	// before the integration.
}

// TestCheckpointRejections checks that each rejection reason comes back as
// an *Error with its code, matching ErrRefused, exit code 2.
func TestCheckpointRejections(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	idle := newWorker(t, ctx, coord, url, false)
	active := newWorker(t, ctx, coord, url, true)
	bogus := "01JBOGUSBOGUSBOGUSBOGUSBOGU"

	tests := []struct {
		name string
		c    *client.Client
		req  func(r *client.CheckpointRequest)
		want string
	}{
		{"idle workspace", idle, func(r *client.CheckpointRequest) {}, "workspace_not_active"},
		{"unknown type", active, func(r *client.CheckpointRequest) { r.Type = "no_such_type" }, "invalid_type"},
		{"type of another role", active, func(r *client.CheckpointRequest) { r.Type = taxonomy.CheckpointObservation }, "permission_denied"},
		{"no intent", active, func(r *client.CheckpointRequest) { r.Intent = "" }, "invalid_structure"},
		{"bad status", active, func(r *client.CheckpointRequest) { r.Status = "done" }, "invalid_structure"},
		{"parent not head", active, func(r *client.CheckpointRequest) { r.Parent = &bogus }, "invalid_parent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := artifact(nil, checkpointchain.StatusProvisional)
			tt.req(&req)
			_, err := tt.c.CreateCheckpoint(ctx, req)
			var e *client.Error
			if !errors.As(err, &e) || e.Code != tt.want {
				t.Fatalf("CreateCheckpoint = %v, want *client.Error %s", err, tt.want)
			}
			if e.Status != wire.LookupCode(tt.want).Status || e.Message == "" {
				t.Errorf("error = %+v, want status %d and a message", e, wire.LookupCode(tt.want).Status)
			}
			if !errors.Is(err, client.ErrRefused) {
				t.Errorf("errors.Is(%v, ErrRefused) = false, want true", err)
			}
			if got := client.ExitCode(err); got != 2 {
				t.Errorf("ExitCode(%v) = %d, want 2", err, got)
			}
			if got := err.Error(); !strings.HasPrefix(got, tt.want+": ") {
				t.Errorf("Error() = %q, want prefix %q", got, tt.want+": ")
			}
		})
	}
	if list, err := active.ListCheckpoints(ctx, "", "", 0); err != nil || len(list) != 0 {
		t.Errorf("ListCheckpoints after rejections = %d, %v; want 0, nil", len(list), err)
	}
}

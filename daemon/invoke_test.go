package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/wire"
)

// runInternal runs a daemon in the test process and returns it ready.
func runInternal(t *testing.T) *Daemon {
	t.Helper()
	r, err := New(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	select {
	case <-r.Ready():
	case err := <-done:
		t.Fatalf("Run = %v before ready", err)
	}
	return r
}

// TestInvoke: an in-process request passes the checks a NATS request
// does — the endpoint's audience, the op's existence, the body's
// checks — and answers as NATS would: a refusal with the wire error body
// or, for carp.*, the CARP error envelope.
func TestInvoke(t *testing.T) {
	r := runInternal(t)
	ctx := context.Background()
	coord := principal.Principal{Kind: principal.KindCoordinator, Workspace: r.eng.Root()}
	user := principal.Principal{Kind: principal.KindUser, Name: "ann"}
	auditor := principal.Principal{Kind: principal.KindAuditor, Name: "aud"}

	// The coordinator reads its workspace, the root.
	data, err := r.invokeJSON(ctx, coord, "workspace.get", nil)
	if err != nil {
		t.Fatalf("workspace.get: %v", err)
	}
	var ws struct{ ID, State string }
	if err := json.Unmarshal(data, &ws); err != nil || ws.ID != r.eng.Root() || ws.State == "" {
		t.Fatalf("workspace.get reply %s: %v", data, err)
	}

	refused := func(p principal.Principal, op, body, code string) *Refusal {
		t.Helper()
		_, err := r.invokeJSON(ctx, p, op, []byte(body))
		var f *Refusal
		if !errors.As(err, &f) || f.Code != code {
			t.Fatalf("%s by %s: %v, want %s", op, p.Kind, err, code)
		}
		return f
	}
	// Audiences: a user is no agent, an auditor no user, an agent no auditor.
	f := refused(user, "checkpoint.head", `{}`, wire.CodePermissionDenied)
	var b wire.ErrorBody
	if err := json.Unmarshal(f.Body, &b); err != nil || b.Error.Code != wire.CodePermissionDenied || b.Error.Message != f.Message || f.Status != 403 {
		t.Fatalf("refusal body %s (%d): %v", f.Body, f.Status, err)
	}
	refused(auditor, "highway.queue", `{}`, wire.CodePermissionDenied)
	refused(principal.Principal{Kind: principal.KindAgent, Workspace: r.eng.Root()}, "audit.sth", `{}`, wire.CodePermissionDenied)
	refused(coord, "no.such.op", `{}`, wire.CodeNotFound)
	// handle's checks of the body apply.
	refused(coord, "checkpoint.list", "{\"after\":\"\xff\"}", wire.CodeInvalidStructure)
	// An auditor reads the tree head.
	if _, err := r.invokeJSON(ctx, auditor, "audit.sth", nil); err != nil {
		t.Fatalf("audit.sth: %v", err)
	}
	// A CARP refusal is the CARP envelope.
	f = refused(coord, "carp.resolve", `{}`, "MISSING_FIELD")
	var env struct {
		Version string `json:"carp_version"`
		Error   struct{ Code string }
	}
	if err := json.Unmarshal(f.Body, &env); err != nil || env.Version != "1.0" || env.Error.Code != "MISSING_FIELD" {
		t.Fatalf("carp refusal body %s: %v", f.Body, err)
	}
}

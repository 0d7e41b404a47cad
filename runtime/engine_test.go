package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

var ctx = context.Background()

// openTest opens an engine on a fresh temp dir (real Badger, sync writes).
func openTest(t testing.TB, mod ...func(*Config)) *Engine {
	t.Helper()
	cfg := Config{DataDir: t.TempDir()}
	for _, m := range mod {
		m(&cfg)
	}
	e, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// newWorker creates a worker under the root and activates it with a directive.
func newWorker(t testing.TB, e *Engine, extra ...map[string]any) *workspace.Workspace {
	t.Helper()
	req := map[string]any{"role": "worker"}
	for _, x := range extra {
		for k, v := range x {
			req[k] = v
		}
	}
	w, err := e.CreateWorkspace(ctx, e.Root(), mustJSON(req))
	if err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	directive(t, e, e.Root(), w.ID)
	return w
}

func directive(t testing.TB, e *Engine, from, to string) {
	t.Helper()
	_, err := e.SendEnvelope(ctx, from, mustJSON(map[string]any{
		"to": to, "type": "directive", "payload": map[string]any{"content": "do the work"},
	}))
	if err != nil {
		t.Fatalf("SendEnvelope directive: %v", err)
	}
}

func cpReq(parent *string, status string) []byte {
	return mustJSON(map[string]any{
		"type": "artifact", "intent": "because", "parent": parent, "status": status, "confidence": "high",
		"payload": map[string]any{"files_changed": []string{"a.go"}, "content": "x", "artifacts": []string{}},
	})
}

func checkpoint(t testing.TB, e *Engine, ws string, parent *string, status string) checkpointchain.Checkpoint {
	t.Helper()
	cp, err := e.CreateCheckpoint(ctx, ws, cpReq(parent, status))
	if err != nil {
		t.Fatalf("CreateCheckpoint: %v", err)
	}
	return cp
}

func verify(t testing.TB, e *Engine) {
	t.Helper()
	res, err := e.VerifyTrail(ctx, "")
	if err != nil || !res.OK {
		t.Fatalf("VerifyTrail = %+v, %v; want ok", res, err)
	}
}

func events(t testing.TB, e *Engine, ws string) []trail.EventType {
	t.Helper()
	entries, err := e.Trail().ReadLocal(ctx, ws, "", trail.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	var out []trail.EventType
	for _, en := range entries {
		out = append(out, en.EventType)
	}
	return out
}

func TestEngineWalkthrough(t *testing.T) {
	e := openTest(t)
	w := newWorker(t, e)
	got, _ := e.GetWorkspace(ctx, e.Root(), w.ID)
	if got.State != workspace.Active {
		t.Fatalf("state after directive = %s, want active", got.State)
	}
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	c2 := checkpoint(t, e, w.ID, &c1.ID, "final")
	if _, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"complete"}`)); err != nil {
		t.Fatal(err)
	}
	res, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": "accept"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Checkpoint != c2.ID || res.Outcome != "closed" || res.Workspace.State != workspace.Closed {
		t.Fatalf("Integrate = %+v, want checkpoint %s closed", res, c2.ID)
	}
	verify(t, e)
	out, err := e.OutboxAfter("", 0)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, o := range out {
		if o.Signal.Type == "checkpoint" {
			refs = append(refs, *o.Signal.Ref)
		}
	}
	if fmt.Sprint(refs) != fmt.Sprint([]string{c1.ID, c2.ID}) {
		t.Fatalf("checkpoint signals in outbox ref %v, want %v", refs, []string{c1.ID, c2.ID})
	}
	t.Log(events(t, e, w.ID))
}

func TestEngineRejectionReason(t *testing.T) {
	e := openTest(t)
	w := newWorker(t, e)
	_, err := e.CreateCheckpoint(ctx, w.ID, cpReq(ptr("nope"), "final"))
	var rj *checkpointchain.Rejection
	if !errors.As(err, &rj) || rj.Reason != checkpointchain.ReasonInvalidParent {
		t.Fatalf("err = %v, want invalid_parent", err)
	}
	verify(t, e)
}

func ptr(s string) *string { return &s }

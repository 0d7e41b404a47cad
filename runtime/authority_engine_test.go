package runtime

// Authority follows state, and existence is not revealed (authority.go),
// through the Engine against real Badger.

import (
	"strings"
	"testing"

	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// A suspended or migrating delegate has no authority over its subtree;
// resumed (or its migration completed), it has it again.
func TestAuthority_SuspendedOrMigratingDelegate(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	d := newWorker(t, e, map[string]any{"delegate": true})
	c := idleWorker(t, e, d.ID)
	directive(t, e, d.ID, c.ID)

	ops := []struct {
		name string
		call func() error
	}{
		{"create", func() error { _, err := e.CreateWorkspace(ctx, d.ID, []byte(`{"role":"worker"}`)); return err }},
		{"suspend", func() error { _, err := e.Suspend(ctx, d.ID, c.ID, ""); return err }},
		{"migrate", func() error { _, err := e.Migrate(ctx, d.ID, c.ID, "agent-2", ""); return err }},
		{"integrate", func() error { _, err := e.Integrate(ctx, d.ID, integrateBody(c.ID, DecisionAccept)); return err }},
		{"task", func() error { _, err := e.taskActorFor(d.ID); return err }},
		{"abort", func() error { _, err := e.Abort(ctx, d.ID, c.ID, ""); return err }},
	}
	refused := func(state string, undo func() error) {
		t.Helper()
		for _, op := range ops {
			wantCode(t, op.name+" by a "+state+" delegate", op.call(), wire.CodeWorkspaceNotActive)
		}
		sendRejected(t, e, d.ID, envBody(c.ID, "feedback", ""), wire.CodePermissionDenied)
		if got := wsState(t, e, c.ID); got != "active" {
			t.Errorf("child after refused operations is %s, want active", got)
		}
		if err := undo(); err != nil {
			t.Fatalf("undo %s: %v", state, err)
		}
	}

	if _, err := e.Suspend(ctx, root, d.ID, ""); err != nil {
		t.Fatal(err)
	}
	refused("suspended", func() error { _, err := e.Resume(ctx, root, d.ID); return err })
	if _, err := e.Migrate(ctx, root, d.ID, "agent-2", ""); err != nil {
		t.Fatal(err)
	}
	refused("migrating", func() error { _, err := e.CompleteMigration(ctx, root, d.ID, "agent-2", ""); return err })

	// Its authority is back.
	sendOK(t, e, d.ID, envBody(c.ID, "feedback", ""))
	if _, err := e.taskActorFor(d.ID); err != nil {
		t.Errorf("task actor after resume: %v", err)
	}
	if _, err := e.CreateWorkspace(ctx, d.ID, []byte(`{"role":"worker"}`)); err != nil {
		t.Errorf("CreateWorkspace by the delegate resumed: %v", err)
	}
	if _, err := e.Abort(ctx, d.ID, c.ID, ""); err != nil {
		t.Errorf("Abort by the delegate resumed: %v", err)
	}
}

// taskActorFor is taskActor under the engine's lock.
func (e *Engine) taskActorFor(actor string) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.taskActor(actor)
}

// A principal that may not see a workspace gets the same answer, code and
// message, whether or not the id exists: every operation that takes a
// workspace (or checkpoint) id.
func TestAuthority_InvisibleIsNotFound(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	w := activeWorkspace(t, e, "worker")
	cp, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	x := newWorker(t, e)                                    // sees neither w nor root
	dx := newWorker(t, e, map[string]any{"delegate": true}) // a delegate: w is outside its subtree
	const ghost = "01M8ZZZZZZZZZZZZZZZZZZZZZZ"              // no such workspace or checkpoint

	ops := []struct {
		name string
		call func(actor, id string) error
	}{
		{"workspace.get", func(a, id string) error { _, err := e.GetWorkspace(ctx, a, id); return err }},
		{"checkpoint.list", func(a, id string) error { _, err := e.ListCheckpoints(ctx, a, id, "", 0); return err }},
		{"checkpoint.head", func(a, id string) error { _, err := e.Head(ctx, a, id, false); return err }},
		{"workspace.create parent", func(a, id string) error {
			_, err := e.CreateWorkspace(ctx, a, mustJSON(map[string]any{"role": "worker", "parent": id}))
			return err
		}},
		{"workspace.abort", func(a, id string) error { _, err := e.Abort(ctx, a, id, ""); return err }},
		{"workspace.suspend", func(a, id string) error { _, err := e.Suspend(ctx, a, id, ""); return err }},
		{"workspace.resume", func(a, id string) error { _, err := e.Resume(ctx, a, id); return err }},
		{"workspace.migrate", func(a, id string) error { _, err := e.Migrate(ctx, a, id, "agent-2", ""); return err }},
		{"workspace.migrate.complete", func(a, id string) error { _, err := e.CompleteMigration(ctx, a, id, "agent-2", ""); return err }},
		{"integrate", func(a, id string) error { _, err := e.Integrate(ctx, a, integrateBody(id, DecisionAccept)); return err }},
		{"conflict.resolve", func(a, id string) error {
			_, err := e.ResolveConflict(ctx, a, mustJSON(map[string]any{"workspace": id, "resolution_strategy": "coordinator_resolve"}))
			return err
		}},
		{"rights", func(a, id string) error { _, _, err := e.Rights(ctx, a, id); return err }},
		{"envelope to", func(a, id string) error { _, err := e.SendEnvelope(ctx, a, envBody(id, "query", "")); return err }},
	}
	answer := func(err error, id string) string {
		if err == nil {
			return "ok"
		}
		return Code(err) + ": " + strings.ReplaceAll(Message(err), id, "<id>")
	}
	for _, actor := range []string{x.ID, dx.ID} {
		for _, op := range ops {
			real := answer(op.call(actor, w.ID), w.ID)
			random := answer(op.call(actor, ghost), ghost)
			if real != random {
				t.Errorf("%s by %s: a real invisible id answers %q, an unknown one %q", op.name, actor, real, random)
			}
			if real == "ok" {
				t.Errorf("%s by %s on an invisible workspace succeeded", op.name, actor)
			}
		}
		real := answer(func() error { _, err := e.GetCheckpoint(ctx, actor, cp.ID); return err }(), cp.ID)
		random := answer(func() error { _, err := e.GetCheckpoint(ctx, actor, ghost); return err }(), ghost)
		if real != random || !strings.HasPrefix(real, wire.CodeNotFound) {
			t.Errorf("checkpoint.get by %s: a real invisible id answers %q, an unknown one %q", actor, real, random)
		}
	}
	// The coordinator sees everything: the real id works.
	if _, err := e.GetWorkspace(ctx, root, w.ID); err != nil {
		t.Errorf("GetWorkspace by the coordinator: %v", err)
	}
}

// TestAuthority_Frozen (Workspace §3, "Frozen authority"): the authority set
// and the delegate capability given at creation are the workspace's for
// good. Every operation that rewrites a workspace's record (a visibility
// grant, a priority change, a budget raise, suspension and resumption, a
// migration, a checkpoint, a restart) leaves them as they were; no request
// but the creation carries an authority (wire.TestOnlyCreationNamesAnAuthority).
func TestAuthority_Frozen(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	root := e.Root()
	other := newWorker(t, e)
	d := newWorker(t, e, map[string]any{
		"delegate": true, "authority": []string{"files/a"},
		"budget": map[string]any{"storage_budget": map[string]any{"checkpoint_limit": 10, "trail_limit": 1000}},
	})
	frozen := func(after string, e *Engine) {
		t.Helper()
		w, err := e.GetWorkspace(ctx, root, d.ID)
		if err != nil {
			t.Fatalf("after %s: %v", after, err)
		}
		if !w.Delegate || len(w.Authority) != 1 || w.Authority[0] != "files/a" {
			t.Fatalf("after %s: delegate %v, authority %v; want true, [files/a] as created", after, w.Delegate, w.Authority)
		}
	}
	frozen("creation", e)
	ops := []struct {
		name string
		call func() error
	}{
		{"a visibility grant", func() error { _, err := e.GrantVisibility(ctx, root, d.ID, other.ID, "needs it"); return err }},
		{"a priority change", func() error { _, err := e.SetPriority(ctx, root, d.ID, "critical"); return err }},
		{"a budget raise", func() error {
			_, err := e.ModifyBudget(ctx, root, wire.BudgetRequest{ID: d.ID, Budget: &workspace.Budget{StorageBudget: &workspace.StorageBudget{CheckpointLimit: 20, TrailLimit: 1000}}})
			return err
		}},
		{"suspension", func() error { _, err := e.Suspend(ctx, root, d.ID, ""); return err }},
		{"resumption", func() error { _, err := e.Resume(ctx, root, d.ID); return err }},
		{"a migration", func() error { _, err := e.Migrate(ctx, root, d.ID, "agent-2", ""); return err }},
		{"the migration's completion", func() error { _, err := e.CompleteMigration(ctx, root, d.ID, "agent-2", ""); return err }},
		{"a checkpoint", func() error { _, err := e.CreateCheckpoint(ctx, d.ID, cpReq(nil, "provisional")); return err }},
	}
	for _, op := range ops {
		if err := op.call(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		frozen(op.name, e)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngineAt(t, dir)
	frozen("a restart", e)
	verify(t, e)

}

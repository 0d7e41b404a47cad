package runtime

import (
	"testing"

	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// TestDelegationEndsWhenTheDelegateIsTerminal checks that a delegate's
// authority over its subtree ends with the delegate (WACP: terminal states
// absorb everything; rights die when their holder reaches a terminal
// state). A closed or failed delegate's agent still holds a valid token, but
// may no longer create, abort, suspend, migrate or integrate anything; the
// coordinator still may.
func TestDelegationEndsWhenTheDelegateIsTerminal(t *testing.T) {
	t.Run("closed", func(t *testing.T) {
		e := openVerified(t)
		d := newWorker(t, e, map[string]any{"delegate": true})
		child := idleWorker(t, e, d.ID)
		directive(t, e, d.ID, child.ID)
		done, _ := integratingWorker(t, e, d.ID)
		checkpoint(t, e, d.ID, nil, "final")
		emitOK(t, e, d.ID, `{"type":"complete"}`)
		if _, err := e.Integrate(ctx, e.Root(), integrateBody(d.ID, DecisionAccept)); err != nil {
			t.Fatalf("Integrate(delegate) = %v", err)
		}
		if got := wsState(t, e, d.ID); got != workspace.Closed {
			t.Fatalf("delegate state = %s, want closed", got)
		}
		if got := wsState(t, e, child.ID); got != workspace.Active {
			t.Fatalf("child state after its delegate closed = %s, want active", got)
		}
		refused(t, e, d.ID, child.ID, done.ID)
		if _, err := e.Abort(ctx, e.Root(), child.ID, ""); err != nil {
			t.Errorf("coordinator Abort(child of a closed delegate) = %v", err)
		}
	})
	t.Run("failed", func(t *testing.T) {
		e := openVerified(t)
		d := newWorker(t, e, map[string]any{"delegate": true})
		child := idleWorker(t, e, d.ID)
		directive(t, e, d.ID, child.ID)
		checkpoint(t, e, child.ID, nil, "final")
		if _, err := e.Abort(ctx, e.Root(), d.ID, ""); err != nil {
			t.Fatalf("Abort(delegate) = %v", err)
		}
		if got := wsState(t, e, child.ID); got != workspace.Failed {
			t.Fatalf("child state after the cascade = %s, want failed", got)
		}
		_, err := e.Integrate(ctx, d.ID, integrateBody(child.ID, DecisionAccept, "mode", ModeSalvage, "strategy", StrategyEvaluated))
		wantCode(t, "failed delegate salvages its child", err, wire.CodePermissionDenied)
		if _, err := e.Integrate(ctx, e.Root(), integrateBody(child.ID, DecisionAccept, "mode", ModeSalvage, "strategy", StrategyEvaluated)); err != nil {
			t.Errorf("coordinator salvage of the child = %v", err)
		}
	})
}

// refused checks that the agent of terminal delegate d is refused every
// coordinator operation on its children live (active) and done
// (integrating), and that both keep their state.
func refused(t *testing.T, e *Engine, d, live, done string) {
	t.Helper()
	calls := []struct {
		name string
		call func() error
	}{
		{"create", func() error { _, err := e.CreateWorkspace(ctx, d, []byte(`{"role":"worker"}`)); return err }},
		{"abort", func() error { _, err := e.Abort(ctx, d, live, ""); return err }},
		{"suspend", func() error { _, err := e.Suspend(ctx, d, live, ""); return err }},
		{"migrate", func() error { _, err := e.Migrate(ctx, d, live, "agent-2", ""); return err }},
		{"integrate", func() error { _, err := e.Integrate(ctx, d, integrateBody(done, DecisionAccept)); return err }},
	}
	for _, c := range calls {
		wantCode(t, "terminal delegate: "+c.name, c.call(), wire.CodePermissionDenied)
	}
	if got := wsState(t, e, live); got != workspace.Active {
		t.Errorf("state of %s after refused calls = %s, want active", live, got)
	}
	if got := wsState(t, e, done); got != workspace.Integrating {
		t.Errorf("state of %s after refused calls = %s, want integrating", done, got)
	}
}

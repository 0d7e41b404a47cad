package runtime

import (
	"testing"
	"time"

	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// reopen closes e and opens its data dir again, so the checks that follow
// read what was persisted.
func reopen(t *testing.T, e *Engine) *Engine {
	t.Helper()
	cfg := e.cfg
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2, err := Open(cfg)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { e2.Close() })
	return e2
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func signal(t *testing.T, e *Engine, ws, body string) {
	t.Helper()
	if _, err := e.EmitSignal(ctx, ws, []byte(body)); err != nil {
		t.Fatalf("EmitSignal(%s): %v", body, err)
	}
}

// Each legal transition of WACP Workspace §3 driven through the engine on
// real Badger, then checked after reopening the data dir.
func TestWorkspaceTransitions(t *testing.T) {
	type step func(t *testing.T, e *Engine, w string)
	blocked := func(t *testing.T, e *Engine, w string) { signal(t, e, w, `{"type":"blocked","reason":"waiting"}`) }
	complete := func(t *testing.T, e *Engine, w string) {
		checkpoint(t, e, w, nil, "final")
		signal(t, e, w, `{"type":"complete"}`)
	}
	suspend := func(t *testing.T, e *Engine, w string) {
		must[*workspace.Workspace](t)(e.Suspend(ctx, e.Root(), w, ""))
	}
	resume := func(t *testing.T, e *Engine, w string) { must[*workspace.Workspace](t)(e.Resume(ctx, e.Root(), w)) }
	migrate := func(t *testing.T, e *Engine, w string) {
		must[*workspace.Workspace](t)(e.Migrate(ctx, e.Root(), w, "agent-2", ""))
	}
	migrated := func(t *testing.T, e *Engine, w string) {
		must[*workspace.Workspace](t)(e.CompleteMigration(ctx, e.Root(), w, "agent-2", ""))
	}
	abort := func(t *testing.T, e *Engine, w string) { must[*workspace.Workspace](t)(e.Abort(ctx, e.Root(), w, "")) }
	integrate := func(body string) step {
		return func(t *testing.T, e *Engine, w string) {
			must[wire.IntegrateResult](t)(e.Integrate(ctx, e.Root(), []byte(`{"workspace":"`+w+`",`+body+`}`)))
		}
	}
	conflict := integrate(`"decision":"accept","strategy":"layered","conflicts":[{"conflict_type":"content_overlap","resources":["a.go"],"description":"both edit a.go"}]`)
	resolve := func(strategy string) step {
		return func(t *testing.T, e *Engine, w string) {
			must[*workspace.Workspace](t)(e.ResolveConflict(ctx, e.Root(), []byte(`{"workspace":"`+w+`","resolution_strategy":"`+strategy+`"}`)))
		}
	}
	expire := func(t *testing.T, e *Engine, w string) {
		if n := must[int](t)(e.ExpireTimeouts(ctx, time.Now().Add(time.Hour))); n != 1 {
			t.Fatalf("ExpireTimeouts failed %d workspaces, want 1", n)
		}
	}
	tests := []struct {
		name    string
		idle    bool // start idle instead of active
		timeout bool
		steps   []step
		want    workspace.State
		reason  string
	}{
		{name: "CreateToIdle", idle: true, want: workspace.Idle},
		{name: "IdleToActive_FirstEnvelope", want: workspace.Active},
		{name: "IdleToFailed_Abort", idle: true, steps: []step{abort}, want: workspace.Failed, reason: "aborted_by_coordinator"},
		{name: "IdleToFailed_Timeout", idle: true, timeout: true, steps: []step{expire}, want: workspace.Failed, reason: "timeout"},
		{name: "ActiveToMigrating", steps: []step{migrate}, want: workspace.Migrating},
		{name: "ActiveToBlocked", steps: []step{blocked}, want: workspace.Blocked},
		{name: "ActiveToIntegrating", steps: []step{complete}, want: workspace.Integrating},
		{name: "ActiveToFailed_AgentFailed", steps: []step{func(t *testing.T, e *Engine, w string) {
			signal(t, e, w, `{"type":"failed","reason":"tool crashed"}`)
		}}, want: workspace.Failed, reason: "tool crashed"},
		{name: "ActiveToFailed_Abort", steps: []step{abort}, want: workspace.Failed, reason: "aborted_by_coordinator"},
		{name: "ActiveToFailed_Timeout", timeout: true, steps: []step{expire}, want: workspace.Failed, reason: "timeout"},
		{name: "BlockedToActive", steps: []step{blocked, func(t *testing.T, e *Engine, w string) {
			signal(t, e, w, `{"type":"started"}`)
		}}, want: workspace.Active},
		{name: "BlockedToMigrating", steps: []step{blocked, migrate}, want: workspace.Migrating},
		{name: "BlockedToSuspended", steps: []step{blocked, suspend}, want: workspace.Suspended},
		{name: "BlockedToFailed_Abort", steps: []step{blocked, abort}, want: workspace.Failed, reason: "aborted_by_coordinator"},
		{name: "BlockedToFailed_Timeout", timeout: true, steps: []step{blocked, expire}, want: workspace.Failed, reason: "timeout"},
		{name: "MigratingToActive", steps: []step{migrate, migrated}, want: workspace.Active},
		{name: "MigratingToBlocked", steps: []step{blocked, migrate, migrated}, want: workspace.Blocked},
		{name: "MigratingToFailed", steps: []step{migrate, func(t *testing.T, e *Engine, w string) {
			must[*workspace.Workspace](t)(e.CompleteMigration(ctx, e.Root(), w, "agent-2", "cannot bind"))
		}}, want: workspace.Failed, reason: "migration_error"},
		{name: "ActiveToSuspended", steps: []step{suspend}, want: workspace.Suspended},
		{name: "SuspendedToActive", steps: []step{suspend, resume}, want: workspace.Active},
		{name: "SuspendedToBlocked", steps: []step{blocked, suspend, resume}, want: workspace.Blocked},
		{name: "SuspendedToFailed_Abort", steps: []step{suspend, abort}, want: workspace.Failed, reason: "aborted_by_coordinator"},
		{name: "IntegratingToClosed", steps: []step{complete, integrate(`"decision":"accept"`)}, want: workspace.Closed},
		{name: "IntegratingToConflicted", steps: []step{complete, conflict}, want: workspace.Conflicted},
		{name: "IntegratingToFailed_Revise", steps: []step{complete, integrate(`"decision":"revise"`)}, want: workspace.Failed, reason: "revision_required"},
		{name: "IntegratingToFailed_Reject", steps: []step{complete, integrate(`"decision":"reject"`)}, want: workspace.Failed, reason: "rejected"},
		{name: "IntegratingToFailed_Abort", steps: []step{complete, abort}, want: workspace.Failed, reason: "aborted_by_coordinator"},
		{name: "ConflictedToClosed", steps: []step{complete, conflict, resolve("coordinator_resolve")}, want: workspace.Closed},
		{name: "ConflictedToFailed_AgentRework", steps: []step{complete, conflict, resolve("agent_rework")}, want: workspace.Failed, reason: "revision_required"},
		{name: "ConflictedToFailed_Timeout", timeout: true, steps: []step{complete, conflict, expire}, want: workspace.Failed, reason: "conflict_timeout"},
		{name: "ActiveToFailed_BudgetExceeded", steps: nil, want: workspace.Failed, reason: "budget_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openTest(t)
			req := map[string]any{"role": "worker"}
			if tt.timeout {
				req["timeout"] = "30m"
			}
			if tt.name == "ActiveToFailed_BudgetExceeded" {
				req["budget"] = map[string]any{"storage_budget": map[string]any{"checkpoint_limit": 1, "trail_limit": 0}}
			}
			w := must[*workspace.Workspace](t)(e.CreateWorkspace(ctx, e.Root(), mustJSON(req)))
			if !tt.idle {
				directive(t, e, e.Root(), w.ID)
			}
			if tt.name == "ActiveToFailed_BudgetExceeded" {
				checkpoint(t, e, w.ID, nil, "final")
			}
			for _, s := range tt.steps {
				s(t, e, w.ID)
			}
			e = reopen(t, e)
			got := must[*workspace.Workspace](t)(e.GetWorkspace(ctx, e.Root(), w.ID))
			if got.State != tt.want || got.Reason != tt.reason {
				t.Fatalf("state = %s (reason %q), want %s (reason %q)", got.State, got.Reason, tt.want, tt.reason)
			}
			verify(t, e)
		})
	}
}

// Illegal transitions through the engine are refused with
// invalid_transition and change nothing.
func TestWorkspaceTransitionsIllegal(t *testing.T) {
	e := openTest(t)
	idle := must[*workspace.Workspace](t)(e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`)))
	active := newWorker(t, e)
	closed := newWorker(t, e)
	checkpoint(t, e, closed.ID, nil, "final")
	signal(t, e, closed.ID, `{"type":"complete"}`)
	must[wire.IntegrateResult](t)(e.Integrate(ctx, e.Root(), []byte(`{"workspace":"`+closed.ID+`","decision":"accept"}`)))

	calls := []struct {
		name string
		ws   string
		call func(ws string) error
	}{
		{"SuspendIdle", idle.ID, func(w string) error { _, err := e.Suspend(ctx, e.Root(), w, ""); return err }},
		{"ResumeActive", active.ID, func(w string) error { _, err := e.Resume(ctx, e.Root(), w); return err }},
		{"MigrateIdle", idle.ID, func(w string) error { _, err := e.Migrate(ctx, e.Root(), w, "x", ""); return err }},
		{"CompleteMigrationActive", active.ID, func(w string) error {
			_, err := e.CompleteMigration(ctx, e.Root(), w, "x", "")
			return err
		}},
		{"IntegrateActive", active.ID, func(w string) error {
			_, err := e.Integrate(ctx, e.Root(), []byte(`{"workspace":"`+w+`","decision":"accept"}`))
			return err
		}},
		{"ResolveActive", active.ID, func(w string) error {
			_, err := e.ResolveConflict(ctx, e.Root(), []byte(`{"workspace":"`+w+`","resolution_strategy":"coordinator_resolve"}`))
			return err
		}},
		{"AbortClosed", closed.ID, func(w string) error { _, err := e.Abort(ctx, e.Root(), w, ""); return err }},
		{"SuspendClosed", closed.ID, func(w string) error { _, err := e.Suspend(ctx, e.Root(), w, ""); return err }},
		{"SignalFromClosed", closed.ID, func(w string) error { _, err := e.EmitSignal(ctx, w, []byte(`{"type":"started"}`)); return err }},
		{"AbortRoot", e.Root(), func(w string) error { _, err := e.Abort(ctx, e.Root(), w, ""); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			before := must[*workspace.Workspace](t)(e.GetWorkspace(ctx, e.Root(), c.ws))
			n := e.Trail().Len()
			err := c.call(c.ws)
			if Code(err) != wire.CodeInvalidTransition {
				t.Fatalf("err = %v (code %q), want invalid_transition", err, Code(err))
			}
			after := must[*workspace.Workspace](t)(e.GetWorkspace(ctx, e.Root(), c.ws))
			if c.name == "SignalFromClosed" {
				n++ // a late signal is recorded with no effect (Workspace §7, precedence.go)
			}
			if after.State != before.State || e.Trail().Len() != n {
				t.Fatalf("state %s → %s, trail %d → %d; want unchanged", before.State, after.State, n, e.Trail().Len())
			}
		})
	}
	// An agent signal whose transition does not apply is recorded with no effect.
	n := e.Trail().Len()
	signal(t, e, active.ID, `{"type":"started"}`)
	if got := must[*workspace.Workspace](t)(e.GetWorkspace(ctx, e.Root(), active.ID)); got.State != workspace.Active {
		t.Fatalf("started in active moved the workspace to %s", got.State)
	}
	if e.Trail().Len() != n+2 { // signal_emitted + signal_delivered
		t.Fatalf("started in active wrote %d entries, want 2", e.Trail().Len()-n)
	}
}

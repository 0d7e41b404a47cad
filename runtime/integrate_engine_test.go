package runtime

// Integration and abort through the Engine (WACP Integration spec,
// Workspace §3 abort), against real Badger. Every test's trail is verified
// when it ends (openVerified).

import (
	"fmt"
	"testing"

	"github.com/wacpd/wacpd/checkpointchain"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

func integrateBody(ws, decision string, extra ...string) []byte {
	m := map[string]any{"workspace": ws, "decision": decision}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return mustJSON(m)
}

// integratingWorker returns a worker under parent (activated by parent's
// directive) with one final checkpoint, in state integrating.
func integratingWorker(t testing.TB, e *Engine, parent string) (*workspace.Workspace, checkpointchain.Checkpoint) {
	t.Helper()
	w := idleWorker(t, e, parent)
	directive(t, e, parent, w.ID)
	cp := checkpoint(t, e, w.ID, nil, "final")
	emitOK(t, e, w.ID, `{"type":"complete"}`)
	if got := wsState(t, e, w.ID); got != workspace.Integrating {
		t.Fatalf("state after complete = %s, want integrating", got)
	}
	return w, cp
}

func TestIntegrateEngine_Accept(t *testing.T) {
	for _, strategy := range []string{"", StrategyDirect, StrategyLayered, StrategyEvaluated} {
		t.Run("strategy "+strategy, func(t *testing.T) {
			e := openVerified(t)
			root := e.Root()
			w, cp := integratingWorker(t, e, root)
			body := integrateBody(w.ID, DecisionAccept)
			if strategy != "" {
				body = integrateBody(w.ID, DecisionAccept, "strategy", strategy)
			}
			res, err := e.Integrate(ctx, root, body)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != "closed" || res.Checkpoint != cp.ID || res.Workspace == nil || res.Workspace.State != workspace.Closed {
				t.Fatalf("Integrate(accept) = %+v, want closed with checkpoint %s", res, cp.ID)
			}
			if got := wsState(t, e, w.ID); got != workspace.Closed {
				t.Errorf("state = %s, want closed", got)
			}
			wantStrategy := strategy
			if wantStrategy == "" {
				wantStrategy = StrategyDirect
			}
			started := trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": w.ID})
			completed := trailWhere(t, e, trail.EventIntegrationCompleted, map[string]string{"source": w.ID})
			changed := trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": w.ID, "to_state": "closed"})
			signals := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"type": "integrate", "ref": cp.ID})
			if len(started) != 1 || len(completed) != 1 || len(changed) != 1 || len(signals) != 1 {
				t.Fatalf("integration_started, _completed, workspace_state_changed(closed), integrate signal = %d, %d, %d, %d; want 1 each",
					len(started), len(completed), len(changed), len(signals))
			}
			wantBody(t, "integration_started", entryBody(t, started[0]), map[string]any{
				"target": root, "owner": w.Owner, "mode": ModeNormal, "strategy": wantStrategy, "checkpoint_ref": cp.ID,
			})
			wantBody(t, "integration_completed", entryBody(t, completed[0]), map[string]any{
				"target": root, "mode": ModeNormal, "strategy": wantStrategy, "result": "success",
			})
			wantBody(t, "workspace_state_changed", entryBody(t, changed[0]), map[string]any{
				"from_state": "integrating", "trigger": string(workspace.IntegrationSucceeded), "initiator": trail.ActorSystem,
			})
			if signals[0].Workspace != root || entryBody(t, signals[0])["from"] != root {
				t.Errorf("integrate signal = %s in %q, want emitted by the root", signals[0].Body, signals[0].Workspace)
			}
			if !(signals[0].ID < started[0].ID && started[0].ID < completed[0].ID && completed[0].ID < changed[0].ID) {
				t.Errorf("order: integrate %s, started %s, completed %s, state %s; want that order",
					signals[0].ID, started[0].ID, completed[0].ID, changed[0].ID)
			}
			// Closed is terminal: no reopening.
			_, err = e.Integrate(ctx, root, integrateBody(w.ID, DecisionAccept))
			wantCode(t, "Integrate(closed)", err, wire.CodeInvalidTransition)
		})
	}
}

func TestIntegrateEngine_ReviseAndReject(t *testing.T) {
	tests := []struct {
		decision, reason string
	}{
		{DecisionRevise, "revision_required"},
		{DecisionReject, "rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.decision, func(t *testing.T) {
			e := openVerified(t)
			w, cp := integratingWorker(t, e, e.Root())
			res, err := e.Integrate(ctx, e.Root(), integrateBody(w.ID, tt.decision))
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != "failed" || res.Checkpoint != cp.ID || res.Workspace.State != workspace.Failed || res.Workspace.Reason != tt.reason {
				t.Errorf("Integrate(%s) = %+v, want failed with reason %s", tt.decision, res, tt.reason)
			}
			rec, err := e.GetWorkspace(ctx, e.Root(), w.ID)
			if err != nil || rec.State != workspace.Failed || rec.Reason != tt.reason {
				t.Errorf("workspace after %s = %s (%q), want failed (%s)", tt.decision, rec.State, rec.Reason, tt.reason)
			}
			aborted := trailWhere(t, e, trail.EventIntegrationAborted, map[string]string{"source": w.ID})
			if len(aborted) != 1 {
				t.Fatalf("integration_aborted entries = %d, want 1", len(aborted))
			}
			wantBody(t, "integration_aborted", entryBody(t, aborted[0]), map[string]any{"reason": tt.reason, "mode": ModeNormal, "target": e.Root()})
			if n := len(trailWhere(t, e, trail.EventIntegrationCompleted, map[string]string{"source": w.ID})); n != 0 {
				t.Errorf("integration_completed entries = %d, want 0", n)
			}
			if n := len(trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": w.ID})); n != 1 {
				t.Errorf("integration_started entries = %d, want 1", n)
			}
			wantBody(t, "workspace_state_changed", lastStateChange(t, e, w.ID), map[string]any{
				"from_state": "integrating", "to_state": "failed", "trigger": string(workspace.IntegrationFailed), "reason": tt.reason,
			})
			// Never reopened.
			_, err = e.Integrate(ctx, e.Root(), integrateBody(w.ID, DecisionAccept))
			wantCode(t, "Integrate(failed, normal mode)", err, wire.CodeInvalidTransition)
		})
	}
}

func TestIntegrateEngine_NotIntegrating(t *testing.T) {
	tests := []struct {
		state workspace.State
		setup func(t *testing.T, e *Engine) string
	}{
		{workspace.Idle, func(t *testing.T, e *Engine) string { return idleWorker(t, e, e.Root()).ID }},
		{workspace.Active, func(t *testing.T, e *Engine) string {
			w := newWorker(t, e)
			checkpoint(t, e, w.ID, nil, "final")
			return w.ID
		}},
		{workspace.Blocked, func(t *testing.T, e *Engine) string {
			w := newWorker(t, e)
			checkpoint(t, e, w.ID, nil, "final")
			emitOK(t, e, w.ID, `{"type":"blocked","reason":"r"}`)
			return w.ID
		}},
		{workspace.Suspended, func(t *testing.T, e *Engine) string {
			w := newWorker(t, e)
			checkpoint(t, e, w.ID, nil, "final")
			if _, err := e.Suspend(ctx, e.Root(), w.ID, ""); err != nil {
				t.Fatal(err)
			}
			return w.ID
		}},
		{workspace.Failed, func(t *testing.T, e *Engine) string {
			w := newWorker(t, e)
			checkpoint(t, e, w.ID, nil, "final")
			emitOK(t, e, w.ID, `{"type":"failed","reason":"r"}`)
			return w.ID
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			e := openVerified(t)
			ws := tt.setup(t, e)
			for _, d := range []string{DecisionAccept, DecisionRevise, DecisionReject} {
				_, err := e.Integrate(ctx, e.Root(), integrateBody(ws, d))
				wantCode(t, fmt.Sprintf("Integrate(%s, %s)", tt.state, d), err, wire.CodeInvalidTransition)
			}
			if got := wsState(t, e, ws); got != tt.state {
				t.Errorf("state = %s, want %s", got, tt.state)
			}
			if n := len(trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": ws})); n != 0 {
				t.Errorf("integration_started entries = %d, want 0", n)
			}
			if n := len(trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"type": "integrate"})); n != 0 {
				t.Errorf("integrate signals = %d, want 0", n)
			}
		})
	}
}

func TestIntegrateEngine_Salvage(t *testing.T) {
	salvage := func(ws string, extra ...string) []byte {
		return integrateBody(ws, DecisionAccept, append([]string{"mode", ModeSalvage}, extra...)...)
	}
	t.Run("only provisional: uses the head and stays failed", func(t *testing.T) {
		e := openVerified(t)
		w := newWorker(t, e)
		p1 := checkpoint(t, e, w.ID, nil, "provisional")
		p2 := checkpoint(t, e, w.ID, &p1.ID, "provisional")
		if _, err := e.Abort(ctx, e.Root(), w.ID, ""); err != nil {
			t.Fatal(err)
		}
		for _, body := range [][]byte{salvage(w.ID), salvage(w.ID, "strategy", StrategyDirect), salvage(w.ID, "strategy", StrategyLayered)} {
			_, err := e.Integrate(ctx, e.Root(), body)
			wantCode(t, fmt.Sprintf("Integrate(%s)", body), err, wire.CodeInvalidStructure)
		}
		for _, d := range []string{DecisionRevise, DecisionReject} {
			_, err := e.Integrate(ctx, e.Root(), integrateBody(w.ID, d, "mode", ModeSalvage, "strategy", StrategyEvaluated))
			wantCode(t, "Integrate(salvage, "+d+")", err, wire.CodeInvalidStructure)
		}
		res, err := e.Integrate(ctx, e.Root(), salvage(w.ID, "strategy", StrategyEvaluated))
		if err != nil {
			t.Fatal(err)
		}
		if res.Checkpoint != p2.ID || res.Outcome != "salvaged" || res.Workspace.State != workspace.Failed {
			t.Errorf("Integrate(salvage) = %+v, want head %s, outcome salvaged, state failed", res, p2.ID)
		}
		if got := wsState(t, e, w.ID); got != workspace.Failed {
			t.Errorf("state after salvage = %s, want failed", got)
		}
		for _, typ := range []trail.EventType{trail.EventIntegrationStarted, trail.EventIntegrationCompleted} {
			got := trailWhere(t, e, typ, map[string]string{"source": w.ID})
			if len(got) != 1 {
				t.Fatalf("%s entries = %d, want 1", typ, len(got))
			}
			wantBody(t, string(typ), entryBody(t, got[0]), map[string]any{"mode": ModeSalvage, "strategy": StrategyEvaluated})
		}
		if got := trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": w.ID, "checkpoint_ref": p2.ID}); len(got) != 1 {
			t.Errorf("integration_started with checkpoint_ref %s = %d, want 1", p2.ID, len(got))
		}
	})
	t.Run("prefers the most recent final", func(t *testing.T) {
		e := openVerified(t)
		w := newWorker(t, e)
		f1 := checkpoint(t, e, w.ID, nil, "final")
		checkpoint(t, e, w.ID, &f1.ID, "provisional")
		emitOK(t, e, w.ID, `{"type":"failed","reason":"crashed"}`)
		res, err := e.Integrate(ctx, e.Root(), salvage(w.ID, "strategy", StrategyEvaluated))
		if err != nil || res.Checkpoint != f1.ID {
			t.Errorf("Integrate(salvage) = %+v, %v; want the final %s", res, err, f1.ID)
		}
	})
	t.Run("no checkpoints", func(t *testing.T) {
		e := openVerified(t)
		w := newWorker(t, e)
		if _, err := e.Abort(ctx, e.Root(), w.ID, ""); err != nil {
			t.Fatal(err)
		}
		_, err := e.Integrate(ctx, e.Root(), salvage(w.ID, "strategy", StrategyEvaluated))
		wantCode(t, "Integrate(salvage, no checkpoints)", err, wire.CodeNoFinalCheckpoint)
	})
	t.Run("not failed", func(t *testing.T) {
		e := openVerified(t)
		w, _ := integratingWorker(t, e, e.Root())
		_, err := e.Integrate(ctx, e.Root(), salvage(w.ID, "strategy", StrategyEvaluated))
		wantCode(t, "Integrate(salvage, integrating)", err, wire.CodeInvalidTransition)
		if got := wsState(t, e, w.ID); got != workspace.Integrating {
			t.Errorf("state = %s, want integrating", got)
		}
	})
}

func TestIntegrateEngine_Authorization(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	d := newWorker(t, e, map[string]any{"delegate": true})
	worker, _ := integratingWorker(t, e, root)
	child, childCP := integratingWorker(t, e, d.ID)
	plain := newWorker(t, e)

	// A target the actor may not see answers not_found, as one that does
	// not exist (authority.go); one it sees but has no authority over,
	// permission_denied.
	denied := []struct {
		name  string
		actor string
		call  func(actor string) error
		code  string
	}{
		{"worker integrates a sibling", plain.ID, func(a string) error {
			_, err := e.Integrate(ctx, a, integrateBody(worker.ID, DecisionAccept))
			return err
		}, wire.CodeNotFound},
		{"worker aborts a sibling", plain.ID, func(a string) error { _, err := e.Abort(ctx, a, worker.ID, ""); return err }, wire.CodeNotFound},
		{"worker suspends a sibling", plain.ID, func(a string) error { _, err := e.Suspend(ctx, a, d.ID, ""); return err }, wire.CodeNotFound},
		{"delegate integrates outside its subtree", d.ID, func(a string) error {
			_, err := e.Integrate(ctx, a, integrateBody(worker.ID, DecisionAccept))
			return err
		}, wire.CodeNotFound},
		{"delegate aborts itself", d.ID, func(a string) error { _, err := e.Abort(ctx, a, d.ID, ""); return err }, wire.CodePermissionDenied},
		{"child integrates itself", child.ID, func(a string) error {
			_, err := e.Integrate(ctx, a, integrateBody(child.ID, DecisionAccept))
			return err
		}, wire.CodePermissionDenied},
	}
	for _, tt := range denied {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.name, tt.call(tt.actor), tt.code)
		})
	}
	if got := wsState(t, e, worker.ID); got != workspace.Integrating {
		t.Errorf("worker state after refused calls = %s, want integrating", got)
	}
	// A delegate integrates its own child.
	res, err := e.Integrate(ctx, d.ID, integrateBody(child.ID, DecisionAccept))
	if err != nil || res.Outcome != "closed" || res.Checkpoint != childCP.ID {
		t.Fatalf("delegate Integrate(child) = %+v, %v; want closed", res, err)
	}
	started := trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": child.ID})
	if len(started) != 1 || started[0].Actor != "worker" || entryBody(t, started[0])["target"] != d.ID {
		t.Errorf("integration_started for the delegate's child = %v, want one by worker with target %s", started, d.ID)
	}
	sig := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"type": "integrate", "ref": childCP.ID, "from": d.ID})
	if len(sig) != 1 {
		t.Errorf("integrate signal from the delegate = %d, want 1", len(sig))
	}
}

func TestIntegrateEngine_AbortFromEveryLiveState(t *testing.T) {
	for _, state := range []workspace.State{
		workspace.Idle, workspace.Active, workspace.Blocked, workspace.Suspended, workspace.Integrating,
	} {
		t.Run(string(state), func(t *testing.T) {
			e := openVerified(t)
			ws := workerIn(t, e, state)
			w, err := e.Abort(ctx, e.Root(), ws, "")
			if err != nil {
				t.Fatalf("Abort(%s) = %v", state, err)
			}
			if w.State != workspace.Failed || w.Reason != "aborted_by_coordinator" || wsState(t, e, ws) != workspace.Failed {
				t.Errorf("Abort(%s) = %s (%q), want failed (aborted_by_coordinator)", state, w.State, w.Reason)
			}
			sig := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool {
				return o.Signal.From == ws && o.Signal.Type == taxonomy.SignalFailed
			})
			if len(sig) != 1 || sig[0].Signal.Reason == nil || *sig[0].Signal.Reason != "aborted_by_coordinator" ||
				sig[0].Signal.DeliveredTo == nil || *sig[0].Signal.DeliveredTo != e.Root() {
				t.Fatalf("failed signals from %s = %+v, want one with reason aborted_by_coordinator to the root", ws, sig)
			}
			emitted := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"signal_id": sig[0].ID})
			if len(emitted) != 1 || emitted[0].Workspace != ws {
				t.Errorf("signal_emitted of the failed signal = %v, want one in %s's trail", emitted, ws)
			}
			wantBody(t, "workspace_state_changed", lastStateChange(t, e, ws), map[string]any{
				"from_state": string(state), "to_state": "failed", "trigger": string(workspace.Abort),
			})
			_, err = e.Abort(ctx, e.Root(), ws, "")
			wantCode(t, "Abort(failed)", err, wire.CodeInvalidTransition)
		})
	}
}

func TestIntegrateEngine_AbortRefused(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	closed, _ := integratingWorker(t, e, root)
	if _, err := e.Integrate(ctx, root, integrateBody(closed.ID, DecisionAccept)); err != nil {
		t.Fatal(err)
	}
	failed := newWorker(t, e)
	emitOK(t, e, failed.ID, `{"type":"failed","reason":"r"}`)
	tests := []struct {
		name string
		id   string
		want workspace.State
	}{
		{"closed", closed.ID, workspace.Closed},
		{"failed", failed.ID, workspace.Failed},
		{"root", root, workspace.Idle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(globalTrail(t, e))
			_, err := e.Abort(ctx, root, tt.id, "")
			wantCode(t, "Abort("+tt.name+")", err, wire.CodeInvalidTransition)
			if got := wsState(t, e, tt.id); got != tt.want {
				t.Errorf("state = %s, want %s", got, tt.want)
			}
			if n := len(globalTrail(t, e)); n != before {
				t.Errorf("trail grew by %d entries on a refused abort", n-before)
			}
		})
	}
	_, err := e.Abort(ctx, root, "no-such-workspace", "")
	wantCode(t, "Abort(unknown)", err, wire.CodeNotFound)
}

func TestIntegrateEngine_MalformedRequests(t *testing.T) {
	e := openVerified(t)
	w, _ := integratingWorker(t, e, e.Root())
	tests := []struct {
		name string
		body string
		want string
	}{
		{"unknown decision", fmt.Sprintf(`{"workspace":%q,"decision":"merge"}`, w.ID), wire.CodeInvalidStructure},
		{"no workspace", `{"decision":"accept"}`, wire.CodeInvalidStructure},
		{"unknown field", fmt.Sprintf(`{"workspace":%q,"decision":"accept","force":true}`, w.ID), wire.CodeInvalidStructure},
		{"unknown strategy", fmt.Sprintf(`{"workspace":%q,"decision":"accept","strategy":"magic"}`, w.ID), wire.CodeInvalidStructure},
		{"unknown mode", fmt.Sprintf(`{"workspace":%q,"decision":"accept","mode":"rescue"}`, w.ID), wire.CodeInvalidStructure},
		{"result not JSON", fmt.Sprintf(`{"workspace":%q,"decision":"accept","result":nope}`, w.ID), wire.CodeInvalidStructure},
		{"unknown workspace", `{"workspace":"no-such-workspace","decision":"accept"}`, wire.CodeNotFound},
		{"the root", fmt.Sprintf(`{"workspace":%q,"decision":"accept"}`, e.Root()), wire.CodeInvalidTransition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Integrate(ctx, e.Root(), []byte(tt.body))
			wantCode(t, "Integrate("+tt.body+")", err, tt.want)
		})
	}
	if got := wsState(t, e, w.ID); got != workspace.Integrating {
		t.Errorf("state after refused requests = %s, want integrating", got)
	}
}

// TestIntegrateEngine_AbortSignalReasonIsAbortedByCoordinator: Workspace §3
// "Abort ... emits a failed signal with reason: aborted_by_coordinator", also
// when the caller gives a reason (wire: workspace.abort {"id","reason"?}),
// which is recorded as the transition's detail instead.
func TestIntegrateEngine_AbortSignalReasonIsAbortedByCoordinator(t *testing.T) {
	e := openVerified(t)
	w := newWorker(t, e)
	if _, err := e.Abort(ctx, e.Root(), w.ID, "operator changed plans"); err != nil {
		t.Fatal(err)
	}
	sig := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool {
		return o.Signal.From == w.ID && o.Signal.Type == taxonomy.SignalFailed
	})
	if len(sig) != 1 {
		t.Fatalf("failed signals = %d, want 1", len(sig))
	}
	if r := sig[0].Signal.Reason; r == nil || *r != "aborted_by_coordinator" {
		t.Errorf("failed signal reason after Abort(reason %q) = %v, want aborted_by_coordinator", "operator changed plans", anyOf(r))
	}
}

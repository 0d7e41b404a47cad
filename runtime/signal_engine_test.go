package runtime

// Signal behaviour through the Engine (WACP Signal spec, Workspace state
// machine and failure cascade), against real Badger.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// emitSignal emits body from ws and returns the record.
func emitSignal(t testing.TB, e *Engine, ws, body string) agentsignal.Signal {
	t.Helper()
	s, err := e.EmitSignal(ctx, ws, []byte(body))
	if err != nil {
		t.Fatalf("EmitSignal(%s, %s): %v", ws, body, err)
	}
	return s
}

// lastStateChange returns the body of ws's last workspace_state_changed entry.
func lastStateChange(t testing.TB, e *Engine, ws string) map[string]any {
	t.Helper()
	all := trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": ws})
	if len(all) == 0 {
		t.Fatalf("no workspace_state_changed for %s", ws)
	}
	return entryBody(t, all[len(all)-1])
}

func wantBody(t testing.TB, what string, got map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s.%s = %v, want %v", what, k, got[k], v)
		}
	}
}

func TestSignalEngine_StateEffects(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, e *Engine, ws string)
		body     string
		from, to workspace.State
		trigger  workspace.Trigger
	}{
		{"blocked: active to blocked", nil, `{"type":"blocked","reason":"need input"}`, workspace.Active, workspace.Blocked, workspace.AgentBlocked},
		{"started: blocked to active", func(t *testing.T, e *Engine, ws string) {
			emitOK(t, e, ws, `{"type":"blocked","reason":"need input"}`)
		}, `{"type":"started"}`, workspace.Blocked, workspace.Active, workspace.AgentStarted},
		{"complete: active to integrating", nil, `{"type":"complete"}`, workspace.Active, workspace.Integrating, workspace.AgentComplete},
		{"failed: active to failed", nil, `{"type":"failed","reason":"cannot do it"}`, workspace.Active, workspace.Failed, workspace.AgentFailed},
		// Conformance deviation 2: agent failed from idle and blocked too.
		{"failed: blocked to failed", func(t *testing.T, e *Engine, ws string) {
			emitOK(t, e, ws, `{"type":"blocked","reason":"need input"}`)
		}, `{"type":"failed","reason":"cannot do it"}`, workspace.Blocked, workspace.Failed, workspace.AgentFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t)
			w := newWorker(t, e)
			if tt.setup != nil {
				tt.setup(t, e, w.ID)
			}
			if got := wsState(t, e, w.ID); got != tt.from {
				t.Fatalf("setup: state = %s, want %s", got, tt.from)
			}
			s := emitSignal(t, e, w.ID, tt.body)
			if got := wsState(t, e, w.ID); got != tt.to {
				t.Errorf("EmitSignal(%s) moved %s to %s, want %s", tt.body, tt.from, got, tt.to)
			}
			b := lastStateChange(t, e, w.ID)
			wantBody(t, "workspace_state_changed", b, map[string]any{
				"from_state": string(tt.from), "to_state": string(tt.to), "trigger": string(tt.trigger), "initiator": "worker",
			})
			if s.ID == "" || s.From != w.ID || s.Timestamp == "" || s.DeliveredAt == "" || s.DeliveredTo == nil || *s.DeliveredTo != e.Root() {
				t.Errorf("signal record = %+v, want runtime fields set and delivered to the root", s)
			}
			if got := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"signal_id": s.ID}); len(got) != 1 {
				t.Errorf("signal_emitted entries = %d, want 1", len(got))
			}
			if tt.to == workspace.Failed {
				if b["reason"] != "cannot do it" {
					t.Errorf("workspace_state_changed.reason = %v, want the signal's reason", b["reason"])
				}
				rec, err := e.GetWorkspace(ctx, e.Root(), w.ID)
				if err != nil || rec.Reason != "cannot do it" {
					t.Errorf("failed workspace reason = %q, %v; want the signal's reason", rec.Reason, err)
				}
			}
		})
	}
}

func TestSignalEngine_ReasonRequired(t *testing.T) {
	for _, typ := range []string{"blocked", "failed", "escalation"} {
		t.Run(typ, func(t *testing.T) {
			e := openVerified(t)
			w := newWorker(t, e)
			_, err := e.EmitSignal(ctx, w.ID, []byte(fmt.Sprintf(`{"type":%q}`, typ)))
			wantCode(t, fmt.Sprintf("EmitSignal(%s without reason)", typ), err, wire.CodeInvalidStructure)
			if got := wsState(t, e, w.ID); got != workspace.Active {
				t.Errorf("state after a refused signal = %s, want active", got)
			}
			if got := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"from": w.ID, "type": typ}); len(got) != 0 {
				t.Errorf("signal_emitted for a refused signal: %d entries", len(got))
			}
		})
	}
}

// A delegate (owner alice) with a same-owner child A (which has an idle
// child G) and a cross-owner child B (owner bob, with an idle child BC).
type delegateTree struct {
	d, a, g, b, bc *workspace.Workspace
}

func newDelegateTree(t *testing.T, e *Engine) delegateTree {
	t.Helper()
	d, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker","delegate":true,"owner":"alice"}`))
	if err != nil {
		t.Fatal(err)
	}
	directive(t, e, e.Root(), d.ID)
	create := func(body string) *workspace.Workspace {
		t.Helper()
		w, err := e.CreateWorkspace(ctx, d.ID, []byte(body))
		if err != nil {
			t.Fatalf("CreateWorkspace(%s) by the delegate: %v", body, err)
		}
		return w
	}
	var tr delegateTree
	tr.d = d
	tr.a = create(`{"role":"worker"}`)
	tr.b = create(`{"role":"worker","owner":"bob"}`)
	tr.g = create(fmt.Sprintf(`{"role":"worker","parent":%q}`, tr.a.ID))
	tr.bc = create(fmt.Sprintf(`{"role":"worker","parent":%q}`, tr.b.ID))
	directive(t, e, d.ID, tr.a.ID)
	directive(t, e, d.ID, tr.b.ID)
	if tr.a.Owner != "alice" || tr.b.Owner != "bob" || tr.bc.Owner != "bob" {
		t.Fatalf("owners: a %s, b %s, bc %s; want alice, bob, bob", tr.a.Owner, tr.b.Owner, tr.bc.Owner)
	}
	return tr
}

func TestSignalEngine_FailedCascade(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	tr := newDelegateTree(t, e)
	if _, err := e.CreateWorkspace(ctx, tr.d.ID, []byte(`{"role":"worker","delegate":true}`)); Code(err) != wire.CodePermissionDenied {
		t.Errorf("delegate granting delegation: Code(%v) = %q, want permission_denied", err, Code(err))
	}

	s := emitSignal(t, e, tr.d.ID, `{"type":"failed","reason":"boom"}`)
	if s.Reason == nil || *s.Reason != "boom" || s.DeliveredTo == nil || *s.DeliveredTo != root {
		t.Errorf("failed signal = %+v, want reason boom delivered to the root", s)
	}
	get := func(id string) *workspace.Workspace {
		t.Helper()
		w, err := e.GetWorkspace(ctx, root, id)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if d := get(tr.d.ID); d.State != workspace.Failed || d.Reason != "boom" {
		t.Errorf("delegate = %s (%q), want failed (boom)", d.State, d.Reason)
	}
	for _, w := range []*workspace.Workspace{tr.a, tr.g} {
		got := get(w.ID)
		if got.State != workspace.Failed || got.Reason != "parent_failed" {
			t.Errorf("same-owner descendant %s = %s (%q), want failed (parent_failed)", w.ID, got.State, got.Reason)
		}
		wantBody(t, "workspace_state_changed of "+w.ID, lastStateChange(t, e, w.ID), map[string]any{
			"to_state": "failed", "trigger": string(workspace.ParentFailed),
		})
		emitted := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"from": w.ID, "type": "failed", "reason": "parent_failed"})
		if len(emitted) != 1 {
			t.Fatalf("failed signal of %s = %d entries, want 1", w.ID, len(emitted))
		}
		// Its parent is already failed: recorded, with no recipient.
		id := fmt.Sprint(entryBody(t, emitted[0])["signal_id"])
		if got := trailWhere(t, e, trail.EventSignalDelivered, map[string]string{"signal_id": id}); len(got) != 0 {
			t.Errorf("failed signal %s of %s delivered to a failed parent: %d entries", id, w.ID, len(got))
		}
		if got := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.ID == id }); len(got) != 0 {
			t.Errorf("failed signal %s of %s queued for publishing to a failed parent", id, w.ID)
		}
	}
	b := get(tr.b.ID)
	if b.State != workspace.Active || b.ParentID() != root || b.Owner != "bob" || b.Originator != tr.b.Originator {
		t.Errorf("cross-owner child = state %s, parent %s, owner %s; want active, %s, bob", b.State, b.ParentID(), b.Owner, root)
	}
	rep := localEntries(t, e, tr.b.ID, trail.EventWorkspaceReparented)
	if len(rep) != 1 {
		t.Fatalf("workspace_reparented entries in %s's trail = %d, want 1", tr.b.ID, len(rep))
	}
	wantBody(t, "workspace_reparented", entryBody(t, rep[0]), map[string]any{
		"workspace_id": tr.b.ID, "old_parent": tr.d.ID, "new_parent": root, "reason": "parent_failed",
	})
	if got := trailWhere(t, e, trail.EventWorkspaceReparented, nil); len(got) != 1 {
		t.Errorf("workspace_reparented entries = %d, want 1 (immediate children only)", len(got))
	}
	if bc := get(tr.bc.ID); bc.State != workspace.Idle || bc.ParentID() != tr.b.ID {
		t.Errorf("cross-owner grandchild = %s under %s, want idle under %s (the subtree moves)", bc.State, bc.ParentID(), tr.b.ID)
	}
	kids, err := e.ListWorkspaces(ctx, root, root, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range kids {
		ids = append(ids, k.ID)
	}
	if !slices.Contains(ids, tr.b.ID) {
		t.Errorf("ListWorkspaces(parent root) = %v, want it to hold %s", ids, tr.b.ID)
	}
	// The reparented child now signals, and sends to, the root.
	r := emitSignal(t, e, tr.b.ID, `{"type":"ready"}`)
	if r.DeliveredTo == nil || *r.DeliveredTo != root {
		t.Errorf("reparented child's signal delivered to %v, want the root", r.DeliveredTo)
	}
	if _, err := e.SendEnvelope(ctx, tr.b.ID, envBody(root, "query", "")); err != nil {
		t.Errorf("reparented child's query to the root: %v", err)
	}
}

func TestSignalEngine_NoSignalsOutsideIdleActiveBlocked(t *testing.T) {
	tests := []struct {
		state workspace.State
		setup func(t *testing.T, e *Engine, ws string)
	}{
		{workspace.Suspended, func(t *testing.T, e *Engine, ws string) {
			if _, err := e.Suspend(ctx, e.Root(), ws, ""); err != nil {
				t.Fatal(err)
			}
		}},
		{workspace.Integrating, func(t *testing.T, e *Engine, ws string) { emitOK(t, e, ws, `{"type":"complete"}`) }},
		{workspace.Failed, func(t *testing.T, e *Engine, ws string) {
			if _, err := e.Abort(ctx, e.Root(), ws, ""); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		for _, body := range []string{`{"type":"ready"}`, `{"type":"started"}`, `{"type":"blocked","reason":"r"}`, `{"type":"failed","reason":"r"}`} {
			t.Run(string(tt.state)+" "+body, func(t *testing.T) {
				e := openVerified(t)
				w := newWorker(t, e)
				tt.setup(t, e, w.ID)
				before := len(trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"from": w.ID}))
				_, err := e.EmitSignal(ctx, w.ID, []byte(body))
				var rj *agentsignal.Rejection
				if !errors.As(err, &rj) || Code(err) != wire.CodeInvalidTransition {
					t.Fatalf("EmitSignal(%s) in %s = %v (Code %q), want invalid_transition", body, tt.state, err, Code(err))
				}
				if got := wsState(t, e, w.ID); got != tt.state {
					t.Errorf("state = %s, want %s", got, tt.state)
				}
				// A signal that finds its workspace terminal is recorded
				// (Workspace §7, precedence.go); in any other state, not.
				want := before
				if tt.state.Terminal() {
					want++
				}
				if n := len(trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"from": w.ID})); n != want {
					t.Errorf("signal_emitted entries = %d, want %d", n, want)
				}
			})
		}
	}
}

func TestSignalEngine_RecordedWithoutEffect(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, e *Engine) string
		body  string
		state workspace.State
	}{
		{"ready in active", func(t *testing.T, e *Engine) string { return newWorker(t, e).ID }, `{"type":"ready"}`, workspace.Active},
		{"ready in idle", func(t *testing.T, e *Engine) string { return idleWorker(t, e, e.Root()).ID }, `{"type":"ready"}`, workspace.Idle},
		{"started in active", func(t *testing.T, e *Engine) string { return newWorker(t, e).ID }, `{"type":"started"}`, workspace.Active},
		{"escalation in active", func(t *testing.T, e *Engine) string { return newWorker(t, e).ID }, `{"type":"escalation","reason":"help"}`, workspace.Active},
		{"complete in blocked", func(t *testing.T, e *Engine) string {
			w := newWorker(t, e)
			emitOK(t, e, w.ID, `{"type":"blocked","reason":"r"}`)
			return w.ID
		}, `{"type":"complete"}`, workspace.Blocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t)
			ws := tt.setup(t, e)
			changes := len(localEntries(t, e, ws, trail.EventWorkspaceStateChanged))
			s := emitSignal(t, e, ws, tt.body)
			if got := wsState(t, e, ws); got != tt.state {
				t.Errorf("state after %s = %s, want %s", tt.body, got, tt.state)
			}
			if n := len(localEntries(t, e, ws, trail.EventWorkspaceStateChanged)); n != changes {
				t.Errorf("workspace_state_changed entries = %d, want %d", n, changes)
			}
			emitted := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"signal_id": s.ID, "from": ws})
			if len(emitted) != 1 || emitted[0].Workspace != ws || emitted[0].Actor != "worker" {
				t.Errorf("signal_emitted for %s = %v, want one in %s's trail by worker", s.ID, emitted, ws)
			}
			if got := trailWhere(t, e, trail.EventSignalDelivered, map[string]string{"signal_id": s.ID, "delivered_to": e.Root()}); len(got) != 1 {
				t.Errorf("signal_delivered for %s = %d, want 1", s.ID, len(got))
			}
		})
	}
}

func TestSignalEngine_ImmediateParentOnly(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	tr := newDelegateTree(t, e)
	s := emitSignal(t, e, tr.a.ID, `{"type":"ready"}`)
	if s.DeliveredTo == nil || *s.DeliveredTo != tr.d.ID {
		t.Fatalf("grandchild's signal delivered to %v, want its parent %s", s.DeliveredTo, tr.d.ID)
	}
	if got := trailWhere(t, e, trail.EventSignalDelivered, map[string]string{"signal_id": s.ID}); len(got) != 1 || got[0].Workspace != tr.d.ID {
		t.Errorf("signal_delivered for %s = %v, want one, in the parent's trail", s.ID, got)
	}
	for _, en := range localEntries(t, e, root, trail.EventSignalDelivered) {
		if entryBody(t, en)["signal_id"] == s.ID {
			t.Errorf("grandchild's signal %s delivered into the root's trail", s.ID)
		}
	}
	items := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.ID == s.ID })
	if want := fmt.Sprintf("wacp.v1.sig.%s.%s.ready", tr.d.ID, tr.a.ID); len(items) != 1 || items[0].Subject != want {
		t.Errorf("outbox for %s = %+v, want one on %s", s.ID, items, want)
	}
	// The delegate's own signal goes to the root.
	ds := emitSignal(t, e, tr.d.ID, `{"type":"ready"}`)
	if ds.DeliveredTo == nil || *ds.DeliveredTo != root {
		t.Errorf("delegate's signal delivered to %v, want the root", ds.DeliveredTo)
	}
}

func TestSignalEngine_RootSignalsHaveNoRecipient(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	for _, body := range []string{`{"type":"ready"}`, `{"type":"started"}`} {
		s := emitSignal(t, e, root, body)
		if s.DeliveredTo != nil {
			t.Errorf("root signal %s delivered_to = %s, want null", body, *s.DeliveredTo)
		}
		if s.DeliveredAt == "" || s.DeliveredAt != s.Timestamp {
			t.Errorf("root signal %s delivered_at = %q, want its timestamp %q", body, s.DeliveredAt, s.Timestamp)
		}
		if got := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.ID == s.ID }); len(got) != 0 {
			t.Errorf("root signal %s in the outbox: %+v", s.ID, got)
		}
		if got := trailWhere(t, e, trail.EventSignalDelivered, map[string]string{"signal_id": s.ID}); len(got) != 0 {
			t.Errorf("root signal %s has signal_delivered entries: %d", s.ID, len(got))
		}
		if got := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"signal_id": s.ID, "from": root}); len(got) != 1 || got[0].Workspace != root || got[0].Actor != trail.ActorSystem {
			t.Errorf("root signal_emitted = %v, want one in the root's trail by system", got)
		}
		var m map[string]any
		if err := json.Unmarshal(mustJSON(s), &m); err != nil {
			t.Fatal(err)
		}
		if v, ok := m["delivered_to"]; !ok || v != nil {
			t.Errorf("root signal JSON delivered_to = %v (present %v), want null", v, ok)
		}
	}
}

func TestSignalEngine_EmitPermissions(t *testing.T) {
	tests := []struct {
		name string
		role string // "" = the root
		body string
		want string
	}{
		{"worker checkpoint", "worker", `{"type":"checkpoint","ref":"x"}`, wire.CodePermissionDenied},
		{"worker acknowledged", "worker", `{"type":"acknowledged","ref":"x"}`, wire.CodePermissionDenied},
		{"worker integrate", "worker", `{"type":"integrate"}`, wire.CodePermissionDenied},
		{"worker suspend", "worker", `{"type":"suspend","reason":"r"}`, wire.CodePermissionDenied},
		{"worker migrate", "worker", `{"type":"migrate","reason":"r"}`, wire.CodePermissionDenied},
		{"observer blocked", "observer", `{"type":"blocked","reason":"r"}`, wire.CodePermissionDenied},
		{"coordinator complete", "", `{"type":"complete"}`, wire.CodePermissionDenied},
		{"coordinator blocked", "", `{"type":"blocked","reason":"r"}`, wire.CodePermissionDenied},
		{"coordinator checkpoint", "", `{"type":"checkpoint"}`, wire.CodePermissionDenied},
		{"unknown type", "worker", `{"type":"paused"}`, wire.CodeInvalidType},
		{"type in another case", "worker", `{"type":"Ready"}`, wire.CodeInvalidType},
		{"no type", "worker", `{"reason":"r"}`, wire.CodeInvalidStructure},
		{"unknown field", "worker", `{"type":"ready","to":"x"}`, wire.CodeInvalidStructure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t)
			ws := e.Root()
			if tt.role != "" {
				ws = activeWorkspace(t, e, tt.role).ID
			}
			before := len(trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"from": ws}))
			outBefore := len(outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.From == ws }))
			_, err := e.EmitSignal(ctx, ws, []byte(tt.body))
			wantCode(t, fmt.Sprintf("EmitSignal(%s) by %s", tt.body, tt.role), err, tt.want)
			if n := len(trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"from": ws})); n != before {
				t.Errorf("signal_emitted entries = %d, want %d", n, before)
			}
			if n := len(outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.From == ws })); n != outBefore {
				t.Errorf("outbox signals from %s = %d, want %d", ws, n, outBefore)
			}
		})
	}
}

func TestSignalEngine_RejectionCodes(t *testing.T) {
	for _, r := range []agentsignal.Reason{
		agentsignal.ReasonInvalidType, agentsignal.ReasonPermissionDenied,
		agentsignal.ReasonInvalidStructure, agentsignal.ReasonInvalidTransition,
	} {
		rj := agentsignal.Reject(r, "m")
		for _, err := range []error{rj, fmt.Errorf("wrapped: %w", rj)} {
			if got := Code(err); got != string(r) {
				t.Errorf("Code(%v) = %q, want %q", err, got, r)
			}
		}
	}
	e := openVerified(t)
	_, err := e.EmitSignal(ctx, "no-such-workspace", []byte(`{"type":"ready"}`))
	wantCode(t, "EmitSignal(unknown workspace)", err, wire.CodeNotFound)
}

// TestSignalEngine_FailedFromIdle: an agent that fails before its first
// envelope fails its workspace (conformance deviation 2), with the trail
// entry and the signal to its parent.
func TestSignalEngine_FailedFromIdle(t *testing.T) {
	e := openVerified(t)
	w, err := e.CreateWorkspace(ctx, e.Root(), mustJSON(map[string]any{"role": "worker"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, e, w.ID); got != workspace.Idle {
		t.Fatalf("setup: state = %s, want idle", got)
	}
	s := emitSignal(t, e, w.ID, `{"type":"failed","reason":"cannot start"}`)
	if got := wsState(t, e, w.ID); got != workspace.Failed {
		t.Errorf("failed from idle left the workspace %s, want failed", got)
	}
	wantBody(t, "workspace_state_changed", lastStateChange(t, e, w.ID), map[string]any{
		"from_state": "idle", "to_state": "failed", "trigger": string(workspace.AgentFailed), "reason": "cannot start",
	})
	if s.DeliveredTo == nil || *s.DeliveredTo != e.Root() {
		t.Errorf("signal delivered to %v, want the root", s.DeliveredTo)
	}
}

package runtime

import (
	"testing"
	"time"

	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Engine tests of the gates on workspace transitions: integration and
// workspace_abort (Human Highway §2.2, §3, §6).

// heldAt returns the gate a gate_pending refusal names.
func heldAt(t testing.TB, what string, err error, typ highway.GateType) string {
	t.Helper()
	wantCode(t, what, err, wire.CodeGatePending)
	d := Details(err)
	id, _ := d["gate_id"].(string)
	if id == "" || d["gate_type"] != string(typ) {
		t.Fatalf("%s: details %v, want gate_id and gate_type %s", what, d, typ)
	}
	return id
}

func TestHighway_IntegrationGate(t *testing.T) {
	cfg, _ := highway.Preset("supervised")
	e := openVerified(t, withHighway(cfg))
	mkUser(t, e, "operator", user.ApproveIntegration)

	// Reject: the workspace fails with gate_rejected_by_human.
	w, _ := integratingWorker(t, e, e.Root())
	_, err := e.Integrate(ctx, e.Root(), integrateBody(w.ID, DecisionAccept))
	id := heldAt(t, "integrate under supervised", err, highway.Integration)
	if got := wsState(t, e, w.ID); got != workspace.Integrating {
		t.Fatalf("a gated integration moved the workspace to %s", got)
	}
	_, err = e.Integrate(ctx, e.Root(), integrateBody(w.ID, DecisionAccept))
	if again := heldAt(t, "integrate again", err, highway.Integration); again != id {
		t.Errorf("asking again opened gate %s besides %s", again, id)
	}
	g := gateOf(t, e, w.ID)
	if !g.Irreversible || g.Workspace == nil || *g.Workspace != w.ID || len(e.Gates(ctx, false)) != 1 {
		t.Fatalf("gate = %+v", g)
	}
	if _, err := resolve(t, e, "operator", id, "reject"); err != nil {
		t.Fatal(err)
	}
	got, _ := e.GetWorkspace(ctx, e.Root(), w.ID)
	if got.State != workspace.Failed || got.Reason != ReasonGateRejected {
		t.Fatalf("after reject: %s %q, want failed gate_rejected_by_human", got.State, got.Reason)
	}
	if len(trailWhere(t, e, trail.EventIntegrationAborted, map[string]string{"source": w.ID, "reason": ReasonGateRejected})) != 1 ||
		len(trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": w.ID})) != 0 {
		t.Error("a rejected integration: want integration_aborted gate_rejected_by_human and no integration_started")
	}

	// Approve: integrated as asked, closed.
	w2, cp := integratingWorker(t, e, e.Root())
	_, err = e.Integrate(ctx, e.Root(), integrateBody(w2.ID, DecisionAccept))
	id2 := heldAt(t, "integrate w2", err, highway.Integration)
	if _, err := resolve(t, e, "operator", id2, "approve"); err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, e, w2.ID); got != workspace.Closed {
		t.Fatalf("after approve: %s, want closed", got)
	}
	if len(trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": w2.ID, "checkpoint_ref": cp.ID})) != 1 ||
		len(trailWhere(t, e, trail.EventIntegrationCompleted, map[string]string{"source": w2.ID})) != 1 {
		t.Error("an approved integration: want integration_started and integration_completed")
	}

	// Revise and reject are not merges: not gated.
	w3, _ := integratingWorker(t, e, e.Root())
	if _, err := e.Integrate(ctx, e.Root(), integrateBody(w3.ID, DecisionRevise)); err != nil {
		t.Fatalf("revise under supervised: %v", err)
	}

	// The subject goes away: the gate is invalidated, actor protocol.
	w4, _ := integratingWorker(t, e, e.Root())
	_, err = e.Integrate(ctx, e.Root(), integrateBody(w4.ID, DecisionAccept))
	id4 := heldAt(t, "integrate w4", err, highway.Integration)
	if _, err := e.Abort(ctx, e.Root(), w4.ID, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	g4 := gateOf(t, e, w4.ID)
	if g4.ID != id4 || g4.Pending() || g4.Resolution.Actor != highway.ActorProtocol || g4.Resolution.Reason != highway.ReasonSubjectInvalidated {
		t.Fatalf("gate of the aborted workspace = %+v", g4.Resolution)
	}
	if _, err := resolve(t, e, "operator", id4, "approve"); err == nil {
		t.Error("an invalidated gate was resolved again")
	}
}

// TestHighway_IntegrationEscalatesToTheCoordinator: a gate whose fallback
// hands the decision to the coordinator leaves the workspace integrating;
// the coordinator's second integrate goes through as approved
// (gate_reentry_blocked, §6.1).
func TestHighway_IntegrationEscalatesToTheCoordinator(t *testing.T) {
	cfg, _ := highway.Preset("supervised")
	m := time.Minute
	cfg.Overrides = map[highway.GateType]highway.Policy{highway.Integration: {Timeout: &m, Fallback: highway.FallbackCoordinator}}
	clk := newFakeClock()
	e := openVerified(t, withHighway(cfg), withFakeClock(clk))
	w, _ := integratingWorker(t, e, e.Root())
	_, err := e.Integrate(ctx, e.Root(), integrateBody(w.ID, DecisionAccept))
	heldAt(t, "integrate", err, highway.Integration)
	if n, err := e.ExpireGates(ctx, clk.Now().Add(2*time.Minute)); err != nil || n != 1 {
		t.Fatalf("ExpireGates = %d, %v", n, err)
	}
	if got := wsState(t, e, w.ID); got != workspace.Integrating {
		t.Fatalf("after the fallback to the coordinator: %s, want integrating", got)
	}
	res, err := e.Integrate(ctx, e.Root(), integrateBody(w.ID, DecisionAccept))
	if err != nil || res.Outcome != string(workspace.Closed) {
		t.Fatalf("the coordinator's re-trigger = %+v, %v, want closed", res, err)
	}
	if len(trailWhere(t, e, trail.EventGateReentryBlocked, map[string]string{"subject_id": w.ID, "converted_to": "approve"})) != 1 {
		t.Error("no gate_reentry_blocked for the re-trigger")
	}
	if len(e.Gates(ctx, true)) != 1 {
		t.Errorf("%d gates, want the one", len(e.Gates(ctx, true)))
	}
}

func TestHighway_AbortGate(t *testing.T) {
	cfg, _ := highway.Preset("gated")
	cfg.Gates[highway.EnvelopeDelivery] = false // the directive reaches the worker
	cfg.Gates[highway.WorkspaceCreate] = false
	e := openVerified(t, withHighway(cfg))
	mkUser(t, e, "operator", user.AbortOwn)
	w := newWorker(t, e)
	_, err := e.Abort(ctx, e.Root(), w.ID, "too slow")
	id := heldAt(t, "abort under gated", err, highway.WorkspaceAbort)
	if _, err := resolve(t, e, "operator", id, "reject"); err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, e, w.ID); got != workspace.Active {
		t.Fatalf("after a rejected abort: %s, want active", got)
	}
	_, err = e.Abort(ctx, e.Root(), w.ID, "too slow")
	id2 := heldAt(t, "abort again", err, highway.WorkspaceAbort)
	if id2 == id {
		t.Fatal("a resolved gate held the second abort")
	}
	if _, err := e.ResolveGate(ctx, "operator", mustJSON(map[string]any{"gate_id": id2, "action": "modify",
		"modifications": map[string]any{"reason": "over budget"}})); err != nil {
		t.Fatal(err)
	}
	got, _ := e.GetWorkspace(ctx, e.Root(), w.ID)
	if got.State != workspace.Failed || got.Reason != "aborted_by_coordinator" {
		t.Fatalf("after a modified abort: %s %q", got.State, got.Reason)
	}
	if len(trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": w.ID, "to_state": "failed", "detail": "over budget"})) != 1 {
		t.Error("the modified reason is not the transition's detail")
	}
	_, err = e.ResolveGate(ctx, "operator", mustJSON(map[string]any{"gate_id": id2, "action": "modify",
		"modifications": map[string]any{"strategy": "x"}}))
	if err == nil {
		t.Error("a resolved gate resolved again")
	}
}

// conflictedWorker returns a worker whose accepted integration reported a
// content_overlap conflict: conflicted.
func conflictedWorker(t *testing.T, e *Engine) *workspace.Workspace {
	t.Helper()
	w, _ := integratingWorker(t, e, e.Root())
	body := `{"workspace":"` + w.ID + `","decision":"accept","strategy":"layered","conflicts":[{"conflict_type":"content_overlap","resources":["a.go"],"description":"both edit a.go"}]}`
	if _, err := e.Integrate(ctx, e.Root(), []byte(body)); err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, e, w.ID); got != workspace.Conflicted {
		t.Fatalf("state = %s, want conflicted", got)
	}
	return w
}

func resolveConflict(e *Engine, ws, strategy string) error {
	_, err := e.ResolveConflict(ctx, e.Root(), mustJSON(map[string]any{"workspace": ws, "resolution_strategy": strategy}))
	return err
}

// TestHighway_ConflictEscalatedToAPerson: the escalate strategy opens a
// conflict_resolution gate although the run's highway does not gate the
// type; the person approves (closed), picks agent_rework (failed,
// revision_required) or rejects (failed, gate_rejected_by_human). Under
// the gated preset every strategy waits at the gate. Integrations into
// the root are sequential: each worker reaches conflicted after the one
// before ended.
func TestHighway_ConflictEscalatedToAPerson(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "op", user.ApproveIntegrationAny)
	a := conflictedWorker(t, e)

	id := heldAt(t, "escalate a", resolveConflict(e, a.ID, ResolveEscalate), highway.ConflictResolution)
	if _, err := resolve(t, e, "op", id, "approve"); err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, e, a.ID); got != workspace.Closed {
		t.Errorf("an approved escalation left %s", got)
	}
	if len(trailWhere(t, e, trail.EventConflictResolved, map[string]string{"workspace_id": a.ID, "resolution_strategy": "escalate"})) != 1 {
		t.Error("no conflict_resolved with strategy escalate")
	}

	b := conflictedWorker(t, e)
	id = heldAt(t, "escalate b", resolveConflict(e, b.ID, ResolveEscalate), highway.ConflictResolution)
	if _, err := e.ResolveGate(ctx, "op", mustJSON(map[string]any{"gate_id": id, "action": "modify",
		"modifications": map[string]any{"strategy": "agent_rework"}})); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.GetWorkspace(ctx, e.Root(), b.ID); got.State != workspace.Failed || got.Reason != "revision_required" {
		t.Errorf("agent_rework chosen by a person: %s %q", got.State, got.Reason)
	}

	c := conflictedWorker(t, e)
	id = heldAt(t, "escalate c", resolveConflict(e, c.ID, ResolveEscalate), highway.ConflictResolution)
	if _, err := resolve(t, e, "op", id, "reject"); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.GetWorkspace(ctx, e.Root(), c.ID); got.State != workspace.Failed || got.Reason != ReasonGateRejected {
		t.Fatalf("a rejected escalation left %s %q, want failed %s", got.State, got.Reason, ReasonGateRejected)
	}
	if n := len(trailWhere(t, e, trail.EventConflictResolved, map[string]string{"workspace_id": c.ID, "resolution_strategy": "escalate", "outcome": "failed"})); n == 0 {
		t.Error("no conflict_resolved (escalate, failed) after the rejection")
	}
	if n := len(trailWhere(t, e, trail.EventIntegrationAborted, map[string]string{"source": c.ID, "reason": ReasonGateRejected})); n != 1 {
		t.Errorf("integration_aborted(gate_rejected_by_human) = %d, want 1", n)
	}
}

func TestHighway_ConflictResolutionGated(t *testing.T) {
	cfg, _ := highway.Preset("gated")
	cfg.Gates[highway.Integration] = false // reach conflicted without a gate
	cfg.Gates[highway.EnvelopeDelivery] = false
	cfg.Gates[highway.WorkspaceCreate] = false
	e := openVerified(t, withHighway(cfg))
	mkUser(t, e, "op", user.ApproveIntegrationAny)
	w := conflictedWorker(t, e)
	id := heldAt(t, "coordinator_resolve under gated", resolveConflict(e, w.ID, ResolveCoordinator), highway.ConflictResolution)
	if got := wsState(t, e, w.ID); got != workspace.Conflicted {
		t.Fatalf("a gated resolution moved the workspace to %s", got)
	}
	// The workspace fails meanwhile: the gate is invalidated.
	if _, err := e.Abort(ctx, e.Root(), w.ID, ""); Code(err) != wire.CodeGatePending {
		t.Fatalf("abort under gated = %v, want gate_pending", err)
	}
	mkUser(t, e, "boss", user.AbortAny)
	for _, g := range e.Gates(ctx, true) {
		if g.Type == highway.WorkspaceAbort && g.Pending() {
			if _, err := resolve(t, e, "boss", g.ID, "approve"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := wsState(t, e, w.ID); got != workspace.Failed {
		t.Fatalf("after the approved abort: %s", got)
	}
	for _, g := range e.Gates(ctx, true) {
		if g.ID == id && (g.Pending() || g.Resolution.Actor != highway.ActorProtocol) {
			t.Errorf("the conflict gate of a failed workspace = %+v", g.Resolution)
		}
	}
}

func sendHeld(t *testing.T, e *Engine, to, typ, content string) string {
	t.Helper()
	_, err := e.SendEnvelope(ctx, e.Root(), mustJSON(map[string]any{"to": to, "type": typ, "payload": map[string]any{"content": content}}))
	return heldAt(t, "send "+typ, err, highway.EnvelopeDelivery)
}

// TestHighway_EnvelopeGate: under a highway that gates envelope_delivery
// an envelope is created and held; approve delivers it, modify delivers
// the person's payload, reject drops it (envelope_rejected,
// gate_rejected_by_human), and a receiver that ends meanwhile makes it
// undeliverable with the gate invalidated.
func TestHighway_EnvelopeGate(t *testing.T) {
	cfg := highway.Default()
	cfg.Gates[highway.EnvelopeDelivery] = true
	cfg.Gates[highway.TaskApproval] = false
	e := openVerified(t, withHighway(cfg))
	mkUser(t, e, "op", user.InjectDirectiveAny)
	w := idleWorker(t, e, e.Root())

	id := sendHeld(t, e, w.ID, "directive", "start")
	if got := wsState(t, e, w.ID); got != workspace.Idle {
		t.Fatalf("a held directive moved the worker to %s", got)
	}
	if env, err := e.NextEnvelope(ctx, w.ID, 0); err != nil || env != nil {
		t.Fatalf("inbox with the envelope held = %+v, %v; want empty", env, err)
	}
	if _, err := resolve(t, e, "op", id, "approve"); err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, e, w.ID); got != workspace.Active {
		t.Fatalf("after the approval: %s, want active", got)
	}
	env, err := e.NextEnvelope(ctx, w.ID, 0)
	if err != nil || env == nil || env.Payload.Content != "start" {
		t.Fatalf("after the approval the inbox has %+v, %v", env, err)
	}
	if _, err := e.AckEnvelope(ctx, w.ID, env.ID); err != nil {
		t.Fatal(err)
	}

	id = sendHeld(t, e, w.ID, "feedback", "too harsh")
	if _, err := e.ResolveGate(ctx, "op", mustJSON(map[string]any{"gate_id": id, "action": "modify",
		"modifications": map[string]any{"payload": map[string]any{"format": "markdown", "content": "kinder", "attachments": []any{}}}})); err != nil {
		t.Fatal(err)
	}
	if env, err := e.NextEnvelope(ctx, w.ID, 0); err != nil || env == nil || env.Payload.Content != "kinder" {
		t.Fatalf("a modified envelope delivered %+v, %v", env, err)
	}

	id = sendHeld(t, e, w.ID, "feedback", "never mind")
	var envID string
	for _, g := range e.Gates(ctx, true) {
		if g.ID == id {
			envID = g.SubjectID
		}
	}
	if _, err := resolve(t, e, "op", id, "reject"); err != nil {
		t.Fatal(err)
	}
	if len(trailWhere(t, e, trail.EventEnvelopeRejected, map[string]string{"envelope_id": envID, "reason": ReasonGateRejected})) != 1 {
		t.Error("no envelope_rejected gate_rejected_by_human")
	}

	id = sendHeld(t, e, w.ID, "feedback", "too late")
	for _, g := range e.Gates(ctx, true) {
		if g.ID == id {
			envID = g.SubjectID
		}
	}
	if _, err := e.Abort(ctx, e.Root(), w.ID, ""); err != nil {
		t.Fatal(err)
	}
	for _, g := range e.Gates(ctx, true) {
		if g.ID == id && (g.Pending() || g.Resolution.Actor != highway.ActorProtocol) {
			t.Errorf("the gate of an envelope to an aborted workspace = %+v", g.Resolution)
		}
	}
	if len(trailWhere(t, e, trail.EventEnvelopeUndeliverable, map[string]string{"envelope_id": envID})) != 1 {
		t.Error("no envelope_undeliverable for the held envelope")
	}
}

// TestHighway_CreateGate: under a highway that gates workspace_create the
// workspace does not exist until a person approves it (its id reserved,
// gate_pending names it); approve creates it, modify first changes its
// priority; reject: it never exists; its parent ending invalidates the
// gate.
func TestHighway_CreateGate(t *testing.T) {
	cfg := highway.Default()
	cfg.Gates[highway.WorkspaceCreate] = true
	cfg.Gates[highway.TaskApproval] = false
	e := openVerified(t, withHighway(cfg))
	mkUser(t, e, "op", user.CreateWorkspaceAny)
	create := func(body string) (string, string) {
		t.Helper()
		_, err := e.CreateWorkspace(ctx, e.Root(), []byte(body))
		gate := heldAt(t, "create", err, highway.WorkspaceCreate)
		id, _ := Details(err)["workspace_id"].(string)
		if id == "" {
			t.Fatalf("gate_pending without workspace_id: %v", Details(err))
		}
		if _, err := e.GetWorkspace(ctx, e.Root(), id); Code(err) != wire.CodeNotFound {
			t.Fatalf("a held workspace exists: %v", err)
		}
		return gate, id
	}
	gate, id := create(`{"role":"worker"}`)
	if _, err := resolve(t, e, "op", gate, "approve"); err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, e, id); got != workspace.Idle {
		t.Fatalf("approved workspace: %s", got)
	}
	if len(trailWhere(t, e, trail.EventWorkspaceCreated, map[string]string{"workspace_id": id})) != 1 {
		t.Error("no workspace_created for the approved workspace")
	}

	gate, id = create(`{"role":"worker","priority":"normal"}`)
	if _, err := e.ResolveGate(ctx, "op", mustJSON(map[string]any{"gate_id": gate, "action": "modify",
		"modifications": map[string]any{"priority": "critical"}})); err != nil {
		t.Fatal(err)
	}
	if got, err := e.GetWorkspace(ctx, e.Root(), id); err != nil || got.Priority != "critical" {
		t.Fatalf("modified workspace = %+v, %v", got, err)
	}

	gate, id = create(`{"role":"worker"}`)
	if _, err := resolve(t, e, "op", gate, "reject"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetWorkspace(ctx, e.Root(), id); Code(err) != wire.CodeNotFound {
		t.Errorf("a rejected workspace exists: %v", err)
	}
	if len(trailWhere(t, e, trail.EventWorkspaceCreated, map[string]string{"workspace_id": id})) != 0 {
		t.Error("workspace_created for a rejected workspace")
	}
}

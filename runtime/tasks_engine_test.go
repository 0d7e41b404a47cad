package runtime

import (
	"errors"
	"testing"
	"time"

	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Engine tests of tasks, task_approval gates and users (issue 14).

func withHighway(c highway.Config) func(*Config) { return func(cfg *Config) { cfg.Highway = &c } }

func mkUser(t testing.TB, e *Engine, name string, caps ...user.Capability) {
	t.Helper()
	p := principal.Principal{Kind: principal.KindUser, Name: name}
	if err := e.CreateUser(ctx, e.Root(), p, caps, func(Grants) error { return nil }); err != nil {
		t.Fatalf("CreateUser(%s): %v", name, err)
	}
}

func createTasks(t testing.TB, e *Engine, body string) wire.TasksCreated {
	t.Helper()
	out, err := e.CreateTasks(ctx, e.Root(), []byte(body))
	if err != nil {
		t.Fatalf("CreateTasks(%s): %v", body, err)
	}
	return out
}

// gateOf returns the gate whose subject is id.
func gateOf(t testing.TB, e *Engine, id string) highway.Gate {
	t.Helper()
	for _, g := range e.Gates(ctx, true) {
		if g.SubjectID == id {
			return g
		}
	}
	t.Fatalf("no gate for %s", id)
	return highway.Gate{}
}

func resolve(t testing.TB, e *Engine, userID, gate, action string) (highway.Gate, error) {
	t.Helper()
	return e.ResolveGate(ctx, userID, mustJSON(map[string]any{"gate_id": gate, "action": action}))
}

func getTask(t testing.TB, e *Engine, id string) task.Task {
	t.Helper()
	info, err := e.GetTask(ctx, e.Root(), wire.TaskGetRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return info.Task
}

func TestTasks_ApproveBindCompleteIntegrate(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "operator", user.CreateWorkspace) // the root's owner: _own covers the coordinator's plan
	mkUser(t, e, "bystander")
	out := createTasks(t, e, `{"tasks":[{"key":"a","name":"build"},{"name":"ship","depends_on":["a"]}]}`)
	a, b := out.Tasks[0], out.Tasks[1]
	if a.Status != task.Draft || b.Status != task.Draft || !a.Ready || b.Ready || out.Graph.RootTask != a.ID {
		t.Fatalf("created %+v", out)
	}
	queue := e.Gates(ctx, false)
	if len(queue) != 2 || queue[0].SubjectID != a.ID || queue[1].QueuePosition != 1 || queue[0].Type != highway.TaskApproval {
		t.Fatalf("queue = %+v, want the two task_approval gates in order", queue)
	}
	// A user without the capability is refused, and the refusal recorded.
	_, err := resolve(t, e, "bystander", queue[0].ID, "approve")
	wantCode(t, "resolve by a user without create_workspace", err, wire.CodeCapabilityDenied)
	if len(trailWhere(t, e, trail.EventCapabilityDenied, map[string]string{"user_id": "bystander", "reason": user.MissingCapability})) != 1 {
		t.Error("no capability_denied entry for the refused resolution")
	}
	if g := gateOf(t, e, a.ID); !g.Pending() {
		t.Fatal("a refused resolution resolved the gate")
	}
	if _, err := resolve(t, e, "operator", queue[0].ID, "approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := resolve(t, e, "operator", queue[0].ID, "approve"); err == nil {
		t.Error("a gate resolved twice")
	}
	a = getTask(t, e, a.ID)
	if a.Status != task.Pending || len(trailWhere(t, e, trail.EventTaskApproved, map[string]string{"task_id": a.ID, "approval_source": "human"})) != 1 {
		t.Fatalf("after approval: %s", a.Status)
	}
	if len(trailWhere(t, e, trail.EventGateResolved, map[string]string{"gate_id": queue[0].ID, "actor": "operator", "action": "approve"})) != 1 {
		t.Error("no gate_resolved by operator")
	}
	// b is still draft: binding it is refused (S-2), as is binding a to a
	// workspace that is not idle.
	w := idleWorker(t, e, e.Root())
	_, err = e.BindTask(ctx, e.Root(), wire.TaskBindRequest{ID: b.ID, Workspace: w.ID})
	wantCode(t, "bind a draft task", err, wire.CodeInvalidTransition)
	busy := newWorker(t, e)
	_, err = e.BindTask(ctx, e.Root(), wire.TaskBindRequest{ID: a.ID, Workspace: busy.ID})
	wantCode(t, "bind to an active workspace", err, wire.CodeInvalidTransition)
	a, err = e.BindTask(ctx, e.Root(), wire.TaskBindRequest{ID: a.ID, Workspace: w.ID})
	if err != nil || a.Status != task.Assigned || *a.WorkspaceRef != w.ID {
		t.Fatalf("BindTask = %+v, %v", a, err)
	}
	if got, _ := e.GetWorkspace(ctx, e.Root(), w.ID); got.TaskRef != a.ID {
		t.Errorf("workspace task_ref = %q, want %s", got.TaskRef, a.ID)
	}
	// The workspace's lifecycle moves the task.
	directive(t, e, e.Root(), w.ID)
	if got := getTask(t, e, a.ID).Status; got != task.InProgress {
		t.Fatalf("after the directive: %s, want in_progress", got)
	}
	cp := checkpoint(t, e, w.ID, nil, "final")
	emitOK(t, e, w.ID, `{"type":"complete"}`)
	a = getTask(t, e, a.ID)
	if a.Status != task.Completed || a.CheckpointRef == nil || *a.CheckpointRef != cp.ID {
		t.Fatalf("after complete: %+v, want completed with checkpoint_ref %s", a, cp.ID)
	}
	if b = getTask(t, e, b.ID); !b.Ready {
		t.Error("b is not ready after a completed (readiness re-evaluated, S-6)")
	}
	if _, err := e.Integrate(ctx, e.Root(), integrateBody(w.ID, DecisionAccept)); err != nil {
		t.Fatal(err)
	}
	if got := getTask(t, e, a.ID).Status; got != task.Integrated {
		t.Errorf("after integration: %s, want integrated", got)
	}
	for _, typ := range []trail.EventType{trail.EventGraphCreated, trail.EventTaskCreated, trail.EventTaskApproved,
		trail.EventTaskAssigned, trail.EventTaskStatusChanged, trail.EventTaskCompleted, trail.EventGateTriggered, trail.EventGateResolved} {
		if len(trailWhere(t, e, typ, nil)) == 0 {
			t.Errorf("no %s entry", typ)
		}
	}
	info, err := e.GetTask(ctx, e.Root(), wire.TaskGetRequest{ID: b.ID, Transitive: true})
	if err != nil || len(info.Requires) != 1 || info.Requires[0] != a.ID {
		t.Errorf("GetTask(transitive) = %+v, %v", info, err)
	}
	ready := true
	page, err := e.ListTasks(ctx, e.Root(), wire.TaskListRequest{Ready: &ready, Status: task.Draft})
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != b.ID {
		t.Errorf("ListTasks(ready draft) = %+v, %v", page, err)
	}
}

func TestTasks_FailRetryCancel(t *testing.T) {
	auto, _ := highway.Preset("autonomous")
	clk := newFakeClock()
	e := openVerified(t, withHighway(auto), withFakeClock(clk))
	out := createTasks(t, e, `{"tasks":[{"name":"flaky"}]}`)
	k := out.Tasks[0]
	if n, err := e.ExpireGates(ctx, clk.Now().Add(highway.ShortTimeout-time.Second)); err != nil || n != 0 {
		t.Fatalf("ExpireGates before the deadline = %d, %v", n, err)
	}
	if n, err := e.ExpireGates(ctx, clk.Now().Add(highway.ShortTimeout+time.Second)); err != nil || n != 1 {
		t.Fatalf("ExpireGates after the deadline = %d, %v", n, err)
	}
	if len(trailWhere(t, e, trail.EventTaskApproved, map[string]string{"task_id": k.ID, "approval_source": "timeout_auto_approve"})) != 1 ||
		len(trailWhere(t, e, trail.EventGateTimeout, nil)) != 1 || gateOf(t, e, k.ID).Resolution.Actor != "fallback" {
		t.Fatal("the autonomous preset's timeout did not approve the task")
	}
	w1 := idleWorker(t, e, e.Root())
	if _, err := e.BindTask(ctx, e.Root(), wire.TaskBindRequest{ID: k.ID, Workspace: w1.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Abort(ctx, e.Root(), w1.ID, "give up"); err != nil {
		t.Fatal(err)
	}
	k = getTask(t, e, k.ID)
	if k.Status != task.Failed || len(trailWhere(t, e, trail.EventTaskFailed, map[string]string{"task_id": k.ID, "failure_reason": "aborted_by_coordinator"})) != 1 {
		t.Fatalf("after the abort: %+v", k)
	}
	if k, err := e.RetryTask(ctx, e.Root(), wire.TaskOpRequest{ID: k.ID}); err != nil || k.Status != task.Pending {
		t.Fatalf("RetryTask = %+v, %v", k, err)
	}
	w2 := idleWorker(t, e, e.Root())
	k, err := e.BindTask(ctx, e.Root(), wire.TaskBindRequest{ID: k.ID, Workspace: w2.ID})
	if err != nil || len(k.WorkspaceHistory) != 2 {
		t.Fatalf("second BindTask = %+v, %v", k, err)
	}
	if len(trailWhere(t, e, trail.EventTaskAssigned, map[string]string{"task_id": k.ID, "workspace_id": w2.ID})) != 1 {
		t.Error("no task_assigned for the second attempt")
	}
	// Cancelling the bound task aborts its workspace (S-7).
	if k, err = e.CancelTask(ctx, e.Root(), wire.TaskOpRequest{ID: k.ID, Reason: "no longer needed"}); err != nil || k.Status != task.Cancelled {
		t.Fatalf("CancelTask = %+v, %v", k, err)
	}
	if got := wsState(t, e, w2.ID); got != workspace.Failed {
		t.Errorf("the cancelled task's workspace is %s, want failed", got)
	}
	// A draft task cancelled with its gate pending: the gate is
	// invalidated, actor protocol (§6.5).
	d := createTasks(t, e, `{"tasks":[{"name":"drop me"}]}`).Tasks[0]
	if _, err := e.CancelTask(ctx, e.Root(), wire.TaskOpRequest{ID: d.ID}); err != nil {
		t.Fatal(err)
	}
	if g := gateOf(t, e, d.ID); g.Pending() || g.Resolution.Actor != "protocol" || g.Resolution.Reason != highway.ReasonSubjectInvalidated {
		t.Errorf("gate of the cancelled draft = %+v", g.Resolution)
	}
	if n, _ := e.ExpireGates(ctx, clk.Now().Add(time.Hour)); n != 0 {
		t.Errorf("ExpireGates after the invalidation expired %d gates: resolved twice", n)
	}
}

// TestTasks_GatesSurviveARestart: a gate whose time ran out while the
// daemon was down, after a clean stop or a crash, has fallen back when the
// engine opens (the outage counts), once.
func TestTasks_GatesSurviveARestart(t *testing.T) {
	for _, stop := range []string{"clean", "crash"} {
		t.Run(stop, func(t *testing.T) {
			dir := t.TempDir()
			clk := newFakeClock()
			e := openEngineAt(t, dir, withFakeClock(clk)) // default: task_approval gated, 15m, reject
			k := createTasks(t, e, `{"tasks":[{"name":"wait"}]}`).Tasks[0]
			g := gateOf(t, e, k.ID)
			if stop == "crash" {
				crash(t, e)
			} else if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Hour) // the outage outlasts the gate's 15 minutes
			e = openEngineAt(t, dir, withFakeClock(clk))
			if got := gateOf(t, e, k.ID); got.Pending() || got.ID != g.ID || got.Resolution.Actor != highway.ActorFallback || got.Resolution.Action != highway.Reject {
				t.Fatalf("after the restart the gate is %+v, want it fallen back (reject)", got.Resolution)
			}
			if got := getTask(t, e, k.ID).Status; got != task.Cancelled {
				t.Errorf("task after the reject fallback = %s, want cancelled", got)
			}
			if n, _ := e.ExpireGates(ctx, clk.Now()); n != 0 {
				t.Error("a gate resolved twice")
			}
			verify(t, e)
		})
	}
}

func TestTasks_UngatedApprovalFallsBackAtOnce(t *testing.T) {
	cfg := highway.Default()
	cfg.Gates[highway.TaskApproval] = false
	e := openVerified(t, withHighway(cfg))
	k := createTasks(t, e, `{"tasks":[{"name":"go"}]}`).Tasks[0]
	if k.Status != task.Pending {
		t.Fatalf("status = %s, want pending: an ungated approval falls back to approve at once", k.Status)
	}
	if g := gateOf(t, e, k.ID); g.Resolution == nil || g.Resolution.Actor != "fallback" {
		t.Errorf("gate = %+v", g)
	}
}

func TestTasks_Refusals(t *testing.T) {
	e := openVerified(t)
	w := newWorker(t, e)
	_, err := e.CreateTasks(ctx, w.ID, []byte(`{"tasks":[{"name":"x"}]}`))
	wantCode(t, "a worker creates tasks", err, wire.CodePermissionDenied)
	_, err = e.CreateTasks(ctx, e.Root(), []byte(`{"tasks":[{"key":"a","name":"a","depends_on":["a"]}]}`))
	wantCode(t, "a self-dependency", err, wire.CodeInvalidStructure)
	_, err = e.CreateTasks(ctx, e.Root(), []byte(`{"graph":"nope","tasks":[{"name":"a"}]}`))
	wantCode(t, "an unknown graph", err, wire.CodeNotFound)
	g1 := createTasks(t, e, `{"tasks":[{"name":"one"}]}`)
	g2 := createTasks(t, e, `{"tasks":[{"name":"two"}]}`)
	_, err = e.CreateTasks(ctx, e.Root(), mustJSON(map[string]any{"graph": g2.Graph.ID,
		"tasks": []any{map[string]any{"name": "x", "depends_on": []string{g1.Tasks[0].ID}}}}))
	wantCode(t, "a cross-graph dependency", err, wire.CodeInvalidStructure)
	if _, err := e.GetTask(ctx, e.Root(), wire.TaskGetRequest{ID: "nope"}); err == nil {
		t.Error("GetTask(unknown) = nil error")
	}
	// Nothing of the refused requests was stored.
	page, _ := e.ListTasks(ctx, e.Root(), wire.TaskListRequest{})
	if len(page.Tasks) != 2 {
		t.Errorf("%d tasks stored, want 2", len(page.Tasks))
	}
	_, err = e.ResolveGate(ctx, "ghost", mustJSON(map[string]any{"gate_id": gateOf(t, e, g1.Tasks[0].ID).ID, "action": "approve"}))
	if !errors.As(err, new(*Error)) {
		t.Errorf("ResolveGate by a user without a record = %v", err)
	}
}

func TestTasks_ModifyAtApproval(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "operator", user.CreateWorkspace)
	k := createTasks(t, e, `{"tasks":[{"name":"draft name","priority":"normal"}]}`).Tasks[0]
	g := gateOf(t, e, k.ID)
	_, err := e.ResolveGate(ctx, "operator", []byte(`{"gate_id":"`+g.ID+`","action":"modify","modifications":{"depends_on":["x"]}}`))
	wantCode(t, "modify depends_on", err, wire.CodeInvalidStructure)
	_, err = e.ResolveGate(ctx, "operator", []byte(`{"gate_id":"`+g.ID+`","action":"modify","modifications":{"priority":"sky-high"}}`))
	wantCode(t, "modify with a bad priority", err, wire.CodeInvalidStructure)
	if got := getTask(t, e, k.ID); got.Status != task.Draft || got.Priority != task.PriorityNormal || !gateOf(t, e, k.ID).Pending() {
		t.Fatalf("a refused modify changed something: %+v", got)
	}
	res, err := e.ResolveGate(ctx, "operator", []byte(`{"gate_id":"`+g.ID+`","action":"modify","modifications":{"name":"better name","priority":"urgent"}}`))
	if err != nil || res.Resolution.Action != highway.Modify {
		t.Fatalf("modify = %+v, %v", res.Resolution, err)
	}
	got := getTask(t, e, k.ID)
	if got.Status != task.Pending || got.Name != "better name" || got.Priority != task.PriorityUrgent || len(got.DependsOn) != 0 {
		t.Errorf("after modify: %+v", got)
	}
	if len(trailWhere(t, e, trail.EventGateResolved, map[string]string{"gate_id": g.ID, "action": "modify"})) != 1 {
		t.Error("no gate_resolved with action modify")
	}
}

// TestTasks_GateResolvedOnceUnderConcurrency: answers to one gate sent at
// once, which the committer may put into one batch, resolve it once.
func TestTasks_GateResolvedOnceUnderConcurrency(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "operator", user.CreateWorkspace)
	k := createTasks(t, e, `{"tasks":[{"name":"once"}]}`).Tasks[0]
	g := gateOf(t, e, k.ID)
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		action := "approve"
		if i%2 == 1 {
			action = "reject"
		}
		go func() {
			_, err := e.ResolveGate(ctx, "operator", mustJSON(map[string]any{"gate_id": g.ID, "action": action}))
			errs <- err
		}()
	}
	ok := 0
	for range n {
		if err := <-errs; err == nil {
			ok++
		}
	}
	if got := len(trailWhere(t, e, trail.EventGateResolved, map[string]string{"gate_id": g.ID})); ok != 1 || got != 1 {
		t.Fatalf("%d answers accepted, %d gate_resolved entries; want 1 and 1", ok, got)
	}
	if got := len(trailWhere(t, e, trail.EventTaskStatusChanged, map[string]string{"task_id": k.ID})); got != 1 {
		t.Errorf("%d task_status_changed entries for the task, want 1", got)
	}
}

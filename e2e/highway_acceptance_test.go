package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/client"
)

// TestHighwayAcceptance is issue 14's acceptance run, with the real
// binaries: under the supervised preset a task waits at task_approval and
// the operator approves it in the terminal UI (tmux); the task is bound to
// a worker, which runs and completes; its integration waits at the
// integration gate and the operator rejects it in the UI; the workspace
// fails with gate_rejected_by_human, the task fails, and the trail
// verifies. The same run with no operator present (wacp highway at no
// terminal) exits 2 with one JSON denial per gate, and the task is
// cancelled, not approved.
func TestHighwayAcceptance(t *testing.T) {
	t.Run("operator", func(t *testing.T) {
		r := newHWRig(t, "operator", "create_workspace,approve_integration")
		ctx := ctxT(t)
		taskID := r.createTask("write the parser", "the envelope grammar")
		gate := r.gateOf(taskID)

		tm := r.tui(100, 30)
		tm.waitFor(t, "task_approval gate "+gate.ID, tuiWait)
		tm.send("y")
		tm.waitFor(t, "approved gate "+gate.ID, tuiWait)
		if status, _ := r.task(taskID); status != "pending" {
			t.Fatalf("task after the operator's y: %s, want pending", status)
		}

		// The coordinator binds it to an idle worker and starts it; the
		// worker runs to a final checkpoint and completes.
		coord := dial(t, ctx, client.Options{URL: r.d.url, Token: r.d.admin})
		created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: "worker"})
		if err != nil {
			t.Fatal(err)
		}
		ws := created.Workspace.ID
		var bound struct{ Status string }
		r.adminJSON(&bound, "", "task", "bind", taskID, "--workspace", ws)
		if bound.Status != "assigned" {
			t.Fatalf("task bind: %s", bound.Status)
		}
		worker := dial(t, ctx, client.Options{URL: r.d.url, Token: created.Token, Workspace: ws})
		if _, err := coord.SendEnvelope(ctx, client.EnvelopeRequest{To: ws, Type: "directive"}); err != nil {
			t.Fatal(err)
		}
		if env, err := worker.NextEnvelope(ctx, 10*time.Second); err != nil || env == nil {
			t.Fatalf("worker NextEnvelope = %v, %v", env, err)
		}
		if _, err := worker.CreateCheckpoint(ctx, artifact(nil, "final", "the parser")); err != nil {
			t.Fatal(err)
		}
		if _, err := worker.EmitSignal(ctx, client.SignalRequest{Type: "complete"}); err != nil {
			t.Fatal(err)
		}
		if status, _ := r.task(taskID); status != "completed" {
			t.Fatalf("task after the worker completed: %s", status)
		}

		// The merge waits for the operator, who rejects it.
		out, errOut, code := r.wacp(r.d.admin, "", "integrate", ws, "--decision", "accept")
		if code != 2 || !strings.Contains(errOut, "gate_pending") {
			t.Fatalf("integrate under supervised = %d, %q, %q; want 2 gate_pending", code, out, errOut)
		}
		ig := r.gateOf(ws)
		tm.waitFor(t, "integration gate "+ig.ID, tuiWait)
		tm.send("n")
		tm.waitFor(t, "rejected gate "+ig.ID, tuiWait)
		var got struct{ State, Reason string }
		r.adminJSON(&got, "", "workspace", "get", ws)
		if got.State != "failed" || got.Reason != "gate_rejected_by_human" {
			t.Fatalf("workspace after the rejection: %s %q, want failed gate_rejected_by_human", got.State, got.Reason)
		}
		if status, _ := r.task(taskID); status != "completed" {
			// A completed task stays completed when its integration fails
			// (docs/conformance.md, tasks).
			t.Errorf("task after the rejected integration: %s", status)
		}
		if g := r.gate(ig.ID); g.Resolution == nil || g.Resolution.Actor != "operator" || g.Resolution.Action != "reject" {
			t.Errorf("integration gate = %+v, want rejected by operator", g.Resolution)
		}
		var verify struct{ OK bool }
		r.adminJSON(&verify, "", "trail", "verify")
		if !verify.OK {
			t.Error("the trail does not verify")
		}
		tm.send("q")
		if code := tm.waitExit(t, tuiWait); code != 0 {
			t.Errorf("wacp highway exited %d after q", code)
		}
	})

	t.Run("headless", func(t *testing.T) {
		r := newHWRig(t, "operator", "create_workspace,approve_integration")
		taskID := r.createTask("write the parser", "the envelope grammar")
		gate := r.gateOf(taskID)
		// No terminal: stdin is a pipe.
		out, errOut, code := r.wacp(r.user, "", "highway")
		if code != 2 {
			t.Fatalf("wacp highway with no operator = %d, %q, %q; want 2", code, out, errOut)
		}
		var d struct {
			Denial struct {
				Gate, Type, Reason, Actor string
				Subject                   map[string]any
			}
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &d); err != nil || d.Denial.Gate != gate.ID ||
			d.Denial.Type != "task_approval" || d.Denial.Reason != "no_operator_present" || d.Denial.Actor != "protocol" ||
			d.Denial.Subject["id"] != taskID {
			t.Fatalf("the denial = %q (%v)", out, err)
		}
		if status, _ := r.task(taskID); status != "cancelled" {
			t.Fatalf("task after the denial: %s, want cancelled (never approved)", status)
		}
	})
}

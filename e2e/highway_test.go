package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/user"
)

// TestGatesSurviveKill9: wacpd killed with gates pending. After the
// restart a gate with time left is still pending, the one whose time ran
// out during the outage has fallen back (gate_timeout counted from its
// trigger, the outage included), and no gate was resolved twice; the
// pending one is then resolved once, and the trail verifies.
func TestGatesSurviveKill9(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	hw := filepath.Join(t.TempDir(), "highway.yaml")
	// task_approval falls back (reject) after 3s; integration waits for a
	// person indefinitely.
	err := os.WriteFile(hw, []byte("highway:\n  preset: supervised\n  gate_overrides:\n"+
		"    task_approval: {timeout: 3s, fallback: reject}\n    integration: {timeout: null}\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "-highway", hw)
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	opTok, err := coord.CreateToken(ctx, "user", "op", user.CreateWorkspaceAny, user.ApproveIntegrationAny)
	if err != nil {
		t.Fatal(err)
	}

	// An integration waits at its gate.
	worker := newWorker(t, ctx, coord, d.url, true, "")
	if _, err := worker.CreateCheckpoint(ctx, artifact(nil, "final", "done")); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.EmitSignal(ctx, client.SignalRequest{Type: "complete"}); err != nil {
		t.Fatal(err)
	}
	_, err = coord.Integrate(ctx, client.IntegrateRequest{Workspace: worker.Workspace(), Decision: "accept"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "gate_pending" {
		t.Fatalf("integrate under supervised = %v, want gate_pending", err)
	}
	integrationGate, _ := ce.Details["gate_id"].(string)

	// A task waits at its task_approval gate, then the daemon is killed.
	created, err := coord.CreateTasks(ctx, task.CreateRequest{Tasks: []task.Spec{{Name: "build"}}})
	if err != nil {
		t.Fatal(err)
	}
	op := dial(t, ctx, client.Options{URL: d.url, Token: opTok})
	queue, err := op.HighwayQueue(ctx, false)
	if err != nil || len(queue) != 2 || queue[0].ID != integrationGate || queue[1].SubjectID != created.Tasks[0].ID {
		t.Fatalf("queue before the kill = %+v, %v", queue, err)
	}
	taskGate := queue[1]
	deadline, _ := clock.Parse(*taskGate.Deadline)
	op.Close()
	coord.Close()
	d.kill()
	if time.Now().After(deadline) {
		t.Fatalf("the task gate's time ran out before the kill (deadline %s): the host is too slow for this test", *taskGate.Deadline)
	}
	// Let the task gate's time run out while the daemon is down.
	for time.Now().Before(deadline.Add(100 * time.Millisecond)) {
		time.Sleep(time.Until(deadline.Add(100 * time.Millisecond)))
	}

	d = startDaemon(t, dir, "-highway", hw)
	op = dial(t, ctx, client.Options{URL: d.url, Token: opTok})
	coord = dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	g, err := op.Gate(ctx, taskGate.ID)
	if err != nil || g.Pending() || g.Resolution.Actor != highway.ActorFallback || g.Resolution.Action != highway.Reject {
		t.Fatalf("task gate after the outage = %+v, %v; want rejected by its fallback", g.Resolution, err)
	}
	info, err := coord.GetTask(ctx, created.Tasks[0].ID, false)
	if err != nil || info.Task.Status != task.Cancelled {
		t.Fatalf("task after its gate fell back = %+v, %v; want cancelled", info.Task, err)
	}
	queue, err = op.HighwayQueue(ctx, false)
	if err != nil || len(queue) != 1 || queue[0].ID != integrationGate {
		t.Fatalf("queue after the restart = %+v, %v; want the integration gate alone", queue, err)
	}
	if _, err := op.ResolveGate(ctx, integrationGate, highway.Reject, nil); err != nil {
		t.Fatal(err)
	}
	ws, err := coord.GetWorkspace(ctx, worker.Workspace())
	if err != nil || ws.State != "failed" || ws.Reason != "gate_rejected_by_human" {
		t.Fatalf("workspace after the rejected integration = %+v, %v", ws, err)
	}

	// Each gate resolved once; the timeout counted the outage.
	resolved := map[string]int{}
	page, err := coord.Trail(ctx, "", 1000, "gate_resolved")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Entries {
		var b struct {
			GateID string `json:"gate_id"`
		}
		json.Unmarshal(e.Body, &b)
		resolved[b.GateID]++
	}
	if resolved[taskGate.ID] != 1 || resolved[integrationGate] != 1 || len(resolved) != 2 {
		t.Errorf("gate_resolved entries per gate = %v, want one each", resolved)
	}
	page, err = coord.Trail(ctx, "", 10, "gate_timeout")
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("gate_timeout entries = %+v, %v", page.Entries, err)
	}
	var to struct{ Elapsed string }
	json.Unmarshal(page.Entries[0].Body, &to)
	if el, err := time.ParseDuration(to.Elapsed); err != nil || el < 3*time.Second {
		t.Errorf("gate_timeout elapsed = %q, want at least the 3s timeout", to.Elapsed)
	}
	res, err := coord.VerifyTrail(ctx, "")
	if err != nil || !res.OK {
		t.Errorf("trail verify after the restart = %+v, %v", res, err)
	}
}

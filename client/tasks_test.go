package client_test

import (
	"errors"
	"testing"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// TestTasksAndHighway runs a task through the real daemon: the coordinator
// plans two tasks, a user without the capability is refused at the gate,
// the operator approves one in the queue and rejects the other, the
// coordinator binds the approved one to a worker and the worker's
// lifecycle moves it to completed.
func TestTasksAndHighway(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	created, err := coord.CreateTasks(ctx, task.CreateRequest{Tasks: []task.Spec{{Key: "a", Name: "build"}, {Name: "polish", DependsOn: []string{"a"}}}})
	if err != nil || len(created.Tasks) != 2 {
		t.Fatalf("CreateTasks = %+v, %v", created, err)
	}
	a, b := created.Tasks[0], created.Tasks[1]
	opTok, err := coord.CreateToken(ctx, "user", "operator", user.CreateWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	guestTok, err := coord.CreateToken(ctx, "user", "guest")
	if err != nil {
		t.Fatal(err)
	}
	op := dial(t, ctx, client.Options{URL: url, Token: opTok})
	guest := dial(t, ctx, client.Options{URL: url, Token: guestTok})
	queue, err := op.HighwayQueue(ctx, false)
	if err != nil || len(queue) != 2 || queue[0].SubjectID != a.ID || queue[1].SubjectID != b.ID {
		t.Fatalf("HighwayQueue = %+v, %v", queue, err)
	}
	_, err = guest.ResolveGate(ctx, queue[0].ID, highway.Approve, nil)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != wire.CodeCapabilityDenied {
		t.Fatalf("guest's approval = %v, want capability_denied", err)
	}
	if _, err := coord.HighwayQueue(ctx, false); err == nil {
		t.Error("the coordinator's token reached the highway: it is for people")
	}
	if g, err := op.ResolveGate(ctx, queue[0].ID, highway.Approve, nil); err != nil || g.Resolution.Actor != "operator" {
		t.Fatalf("approve = %+v, %v", g.Resolution, err)
	}
	if _, err := op.ResolveGate(ctx, queue[1].ID, highway.Reject, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := op.HighwayQueue(ctx, false); len(got) != 0 {
		t.Errorf("queue after both answers: %d gates", len(got))
	}
	if info, err := coord.GetTask(ctx, b.ID, false); err != nil || info.Task.Status != task.Cancelled {
		t.Errorf("rejected task = %+v, %v", info.Task, err)
	}
	w := newWorker(t, ctx, coord, url, false)
	bound, err := coord.BindTask(ctx, a.ID, w.Workspace())
	if err != nil || bound.Status != task.Assigned {
		t.Fatalf("BindTask = %+v, %v", bound, err)
	}
	directive(t, ctx, coord, w.Workspace(), "build it")
	cp, err := w.CreateCheckpoint(ctx, artifact(nil, "final"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.EmitSignal(ctx, client.SignalRequest{Type: "complete"}); err != nil {
		t.Fatal(err)
	}
	graph, err := coord.GetGraph(ctx, created.Graph.ID)
	if err != nil || len(graph.Tasks) != 2 || graph.Tasks[0].Status != task.Completed || *graph.Tasks[0].CheckpointRef != cp.ID {
		t.Fatalf("GetGraph = %+v, %v", graph, err)
	}
	if list, err := coord.ListTasks(ctx, wire.TaskListRequest{Status: task.Completed}); err != nil || len(list) != 1 {
		t.Errorf("ListTasks(completed) = %v, %v", list, err)
	}
	if _, err := coord.RetryTask(ctx, a.ID); err == nil {
		t.Error("RetryTask of a completed task succeeded")
	}
	if _, err := coord.CancelTask(ctx, a.ID, "enough"); err != nil {
		t.Error(err)
	}
}

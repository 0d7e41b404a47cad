package runtime

import (
	"slices"
	"testing"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Tests of priorities and groups (groups.go, WACP Workspace §4, §9).

// inGroup creates a worker of group g under parent, active unless idle.
func inGroup(t testing.TB, e *Engine, parent, g string, idle bool) *workspace.Workspace {
	t.Helper()
	w, err := e.CreateWorkspace(ctx, parent, mustJSON(map[string]any{"role": "worker", "group": g}))
	if err != nil {
		t.Fatal(err)
	}
	if !idle {
		directive(t, e, parent, w.ID)
	}
	return w
}

// TestGroups_BatchAbort: every non-terminal member fails with batch_abort
// (failed signal, the transition's trigger and reason, the caller's words
// as detail), a terminal member is skipped, a member an earlier member's
// cascade failed is skipped, another group is untouched; batch_abort
// {group_id, affected_workspaces, skipped_workspaces} in the coordinator's
// trail matches the reply.
func TestGroups_BatchAbort(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	d, err := e.CreateWorkspace(ctx, root, []byte(`{"role":"worker","delegate":true,"group":"g"}`))
	if err != nil {
		t.Fatal(err)
	}
	directive(t, e, root, d.ID)
	child := inGroup(t, e, d.ID, "g", false) // fails with its parent
	a := inGroup(t, e, root, "g", false)
	idle := inGroup(t, e, root, "g", true)
	done := inGroup(t, e, root, "g", false)
	emitOK(t, e, done.ID, `{"type":"failed","reason":"gave up"}`)
	other := inGroup(t, e, root, "h", false)

	res, err := e.BatchAbort(ctx, root, "g", "pipeline cancelled")
	if err != nil {
		t.Fatalf("BatchAbort: %v", err)
	}
	wantAffected := []string{d.ID, a.ID, idle.ID}
	slices.Sort(wantAffected)
	wantSkipped := []string{child.ID, done.ID}
	slices.Sort(wantSkipped)
	if res.GroupID != "g" || !slices.Equal(res.Affected, wantAffected) || !slices.Equal(res.Skipped, wantSkipped) {
		t.Fatalf("BatchAbort = %+v, want affected %v, skipped %v", res, wantAffected, wantSkipped)
	}
	for _, id := range wantAffected {
		w, _ := e.GetWorkspace(ctx, root, id)
		if w.State != workspace.Failed || w.Reason != "batch_abort" {
			t.Errorf("%s after batch abort: %s (%s), want failed (batch_abort)", id, w.State, w.Reason)
		}
		if n := len(trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{
			"workspace_id": id, "trigger": "batch_abort", "reason": "batch_abort", "detail": "pipeline cancelled"})); n != 1 {
			t.Errorf("%s: %d transitions on batch_abort with the detail, want 1", id, n)
		}
	}
	if st := wsState(t, e, other.ID); st != workspace.Active {
		t.Errorf("a workspace of another group is %s, want active", st)
	}
	got := localEntries(t, e, root, trail.EventBatchAbort)
	if len(got) != 1 {
		t.Fatalf("%d batch_abort in the coordinator's trail, want 1", len(got))
	}
	b := entryBody(t, got[0])
	if b["group_id"] != "g" || len(b["affected_workspaces"].([]any)) != 3 || len(b["skipped_workspaces"].([]any)) != 2 {
		t.Errorf("batch_abort = %v, want group g, 3 affected, 2 skipped", b)
	}
}

// TestGroups_BatchPriority: the active and blocked members get the new
// priority (priority_changed each), idle and terminal ones are skipped;
// batch_priority_changed records it. A single workspace's priority changes
// in active or blocked only.
func TestGroups_BatchPriority(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	a := inGroup(t, e, root, "p", false)
	b := inGroup(t, e, root, "p", false)
	emitOK(t, e, b.ID, `{"type":"blocked","reason":"waiting"}`)
	idle := inGroup(t, e, root, "p", true)
	res, err := e.BatchPriority(ctx, root, "p", workspace.PriorityCritical)
	if err != nil {
		t.Fatalf("BatchPriority: %v", err)
	}
	if !slices.Equal(res.Affected, []string{a.ID, b.ID}) || !slices.Equal(res.Skipped, []string{idle.ID}) ||
		res.OldPriority != "normal" || res.NewPriority != "critical" {
		t.Fatalf("BatchPriority = %+v, want %s and %s affected, %s skipped, normal → critical", res, a.ID, b.ID, idle.ID)
	}
	for id, want := range map[string]string{a.ID: "critical", b.ID: "critical", idle.ID: "normal"} {
		w, _ := e.GetWorkspace(ctx, root, id)
		if w.Priority != want {
			t.Errorf("%s priority = %s, want %s", id, w.Priority, want)
		}
	}
	if n := len(trailWhere(t, e, trail.EventPriorityChanged, map[string]string{"old_priority": "normal", "new_priority": "critical"})); n != 2 {
		t.Errorf("%d priority_changed, want 2", n)
	}
	bp := localEntries(t, e, root, trail.EventBatchPriorityChanged)
	if len(bp) != 1 {
		t.Fatalf("%d batch_priority_changed, want 1", len(bp))
	}
	if body := entryBody(t, bp[0]); body["group_id"] != "p" || body["old_priority"] != "normal" || body["new_priority"] != "critical" {
		t.Errorf("batch_priority_changed = %v", body)
	}

	if _, err := e.SetPriority(ctx, root, a.ID, workspace.PriorityBackground); err != nil {
		t.Fatalf("SetPriority: %v", err)
	}
	if w, _ := e.GetWorkspace(ctx, root, a.ID); w.Priority != "background" {
		t.Errorf("priority after SetPriority = %s, want background", w.Priority)
	}
	if n := len(trailWhere(t, e, trail.EventPriorityChanged, map[string]string{"workspace_id": a.ID, "old_priority": "critical", "new_priority": "background"})); n != 1 {
		t.Errorf("%d priority_changed critical → background, want 1", n)
	}
	res, err = e.BatchPriority(ctx, root, "p", workspace.PriorityInteractive)
	if err != nil || res.OldPriority != priorityMixed {
		t.Errorf("BatchPriority over mixed priorities = %+v, %v, want old_priority mixed", res, err)
	}
}

// TestGroups_Refusals: refusals change nothing.
func TestGroups_Refusals(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	a := inGroup(t, e, root, "g", false)
	idle := inGroup(t, e, root, "g", true)
	before := e.Trail().Len()
	_, err := e.BatchAbort(ctx, a.ID, "g", "")
	wantCode(t, "batch abort by a worker", err, "permission_denied")
	_, err = e.BatchAbort(ctx, root, "nope", "")
	wantCode(t, "batch abort of an unknown group", err, "not_found")
	_, err = e.BatchAbort(ctx, root, "", "")
	wantCode(t, "batch abort without a group", err, "invalid_structure")
	_, err = e.BatchPriority(ctx, root, "g", "urgent")
	wantCode(t, "batch priority urgent", err, "invalid_structure")
	_, err = e.SetPriority(ctx, root, idle.ID, "critical")
	wantCode(t, "priority of an idle workspace", err, "invalid_transition")
	_, err = e.SetPriority(ctx, root, a.ID, "urgent")
	wantCode(t, "priority urgent", err, "invalid_structure")
	if n := e.Trail().Len(); n != before {
		t.Errorf("refusals wrote %d entries", n-before)
	}
	_, err = e.CreateWorkspace(ctx, root, []byte(`{"role":"worker","group":"a\nb"}`))
	wantCode(t, "create with a control character in group", err, "invalid_structure")
}

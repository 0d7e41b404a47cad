package task

import (
	"fmt"
	"slices"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// ApprovalSource is the approval_source of task_approved (Task spec F-4).
type ApprovalSource string

// The two sources of an approval.
const (
	ApprovedByHuman   ApprovalSource = "human"
	ApprovedByTimeout ApprovalSource = "timeout_auto_approve"
)

// Each function below applies one transition to t (a value: the caller's
// copy is not changed) and returns the new task with the events it writes:
// task_status_changed for every change (Task spec §8: "recorded for every
// status change"), after the event of the transition where the spec has
// one (task_approved, task_assigned, task_completed, task_failed). A
// transition the lifecycle does not have is a *TransitionError naming the
// task.

// Approve moves a draft task to pending (approved by a human or by the
// gate's timeout fallback), or, when approved is false, cancels it (gate
// rejected by a human, or timeout with fallback cancel: byTimeout).
func Approve(t Task, approved, byTimeout bool) (Task, []Event, error) {
	trig, source := OnHumanApproval, ApprovedByHuman
	switch {
	case approved && byTimeout:
		trig, source = OnTimeoutApproval, ApprovedByTimeout
	case !approved && byTimeout:
		trig = OnTimeoutCancel
	case !approved:
		trig = OnGateRejected
	}
	var first []Event
	if approved {
		first = []Event{{trail.EventTaskApproved, map[string]any{"task_id": t.ID, "approval_source": string(source)}}}
	}
	return move(t, trig, first...)
}

// Bind binds a pending, ready task to workspace ws (Task spec §5): it sets
// workspace_ref, appends ws to workspace_history and moves the task to
// assigned; task_assigned carries the attempt number (ws's position in the
// history, from 1). ready is the task's readiness (View.Ready); the caller
// also checks that ws has no other task (one workspace, one task).
func Bind(t Task, ws string, ready bool) (Task, []Event, error) {
	if _, err := Next(t.Status, OnBind); err != nil {
		return t, nil, &TransitionError{Task: t.ID, From: t.Status, Trigger: OnBind}
	}
	if !ready {
		return t, nil, fmt.Errorf("%w: task %s", ErrNotReady, t.ID)
	}
	if ws == "" {
		return t, nil, bad("bind: no workspace")
	}
	if slices.Contains(t.WorkspaceHistory, ws) {
		return t, nil, bad("bind: workspace %s has attempted task %s before", ws, t.ID)
	}
	t.WorkspaceHistory = append(slices.Clone(t.WorkspaceHistory), ws)
	t.WorkspaceRef = &ws
	return move(t, OnBind, Event{trail.EventTaskAssigned, map[string]any{
		"task_id": t.ID, "workspace_id": ws, "attempt_number": len(t.WorkspaceHistory)}})
}

// Start moves an assigned task to in_progress (its workspace started).
func Start(t Task) (Task, []Event, error) { return move(t, OnStarted) }

// Complete moves an in-progress task to completed and sets checkpoint_ref
// to checkpoint, the completing workspace's most recent final checkpoint.
func Complete(t Task, checkpoint string) (Task, []Event, error) {
	if _, err := Next(t.Status, OnComplete); err != nil {
		return t, nil, &TransitionError{Task: t.ID, From: t.Status, Trigger: OnComplete}
	}
	if checkpoint == "" {
		return t, nil, bad("complete: task %s has no final checkpoint", t.ID)
	}
	t.CheckpointRef = &checkpoint
	return move(t, OnComplete, Event{trail.EventTaskCompleted, map[string]any{
		"task_id": t.ID, "workspace_id": deref(t.WorkspaceRef), "checkpoint_id": checkpoint}})
}

// Fail moves an assigned or in-progress task to failed; reason is its
// workspace's failure reason.
func Fail(t Task, reason string) (Task, []Event, error) {
	if _, err := Next(t.Status, OnFailed); err != nil {
		return t, nil, &TransitionError{Task: t.ID, From: t.Status, Trigger: OnFailed}
	}
	return move(t, OnFailed, Event{trail.EventTaskFailed, map[string]any{
		"task_id": t.ID, "workspace_id": deref(t.WorkspaceRef), "attempt_number": len(t.WorkspaceHistory),
		"failure_reason": reason}})
}

// Integrate moves a completed task to integrated (its checkpoint was
// integrated into the parent).
func Integrate(t Task) (Task, []Event, error) { return move(t, OnIntegrated) }

// Cancel moves any non-terminal task to cancelled. The caller aborts the
// bound workspace, when there is one that is not terminal.
func Cancel(t Task) (Task, []Event, error) { return move(t, OnCancel) }

// Retry moves a failed task back to pending; its workspace_ref is cleared
// (a pending task is bound to nothing) and its history kept.
func Retry(t Task) (Task, []Event, error) {
	prev := t.WorkspaceRef
	t, events, err := move(t, OnRetry)
	if err == nil {
		t.WorkspaceRef = nil
		events[len(events)-1].Body["workspace_id"] = deref(prev)
	}
	return t, events, err
}

// move applies trigger and appends task_status_changed to first.
func move(t Task, trigger Trigger, first ...Event) (Task, []Event, error) {
	to, err := Next(t.Status, trigger)
	if err != nil {
		return t, nil, &TransitionError{Task: t.ID, From: t.Status, Trigger: trigger}
	}
	from := t.Status
	t.Status = to
	return t, append(first, Event{trail.EventTaskStatusChanged, map[string]any{
		"task_id": t.ID, "from_status": string(from), "to_status": string(to), "workspace_id": deref(t.WorkspaceRef)}}), nil
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// Derive returns the trigger a bound task takes when its workspace moves
// from state from to state to (Task spec §4, state derivation): leaving
// idle for active is started, entering integrating is complete, entering
// failed is failed, closing from integrating or conflicted is integration
// completed. ok is false when the workspace's transition moves the task
// nowhere (blocked, suspended, migrating and back) or the task is not in a
// status the trigger leaves from (a completed task whose integration fails
// stays completed: the table has no edge for it).
func Derive(status Status, from, to workspace.State) (trig Trigger, ok bool) {
	switch {
	case from == workspace.Idle && to == workspace.Active:
		trig = OnStarted
	case to == workspace.Integrating && from != workspace.Integrating:
		trig = OnComplete
	case to == workspace.Failed:
		trig = OnFailed
	case to == workspace.Closed:
		trig = OnIntegrated
	default:
		return "", false
	}
	_, err := Next(status, trig)
	return trig, err == nil
}

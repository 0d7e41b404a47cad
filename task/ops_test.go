package task

import (
	"errors"
	"reflect"
	"testing"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

func draft() Task {
	return Task{ID: "t1", Name: "n", DependsOn: []string{}, Priority: PriorityNormal, Status: Draft,
		WorkspaceHistory: []string{}, GraphRef: "g1", Timestamp: ts}
}

// types returns the events' types.
func types(events []Event) []trail.EventType {
	var out []trail.EventType
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

func TestApprove(t *testing.T) {
	tests := []struct {
		approved, byTimeout bool
		want                Status
		source              any // task_approved's approval_source; nil: no task_approved
	}{
		{true, false, Pending, "human"},
		{true, true, Pending, "timeout_auto_approve"},
		{false, false, Cancelled, nil},
		{false, true, Cancelled, nil},
	}
	for _, tt := range tests {
		got, events, err := Approve(draft(), tt.approved, tt.byTimeout)
		if err != nil || got.Status != tt.want {
			t.Errorf("Approve(%v, %v) = %s, %v, want %s", tt.approved, tt.byTimeout, got.Status, err, tt.want)
			continue
		}
		checkEvents(t, events)
		last := events[len(events)-1]
		if last.Type != trail.EventTaskStatusChanged || last.Body["from_status"] != "draft" || last.Body["to_status"] != string(tt.want) || last.Body["workspace_id"] != nil {
			t.Errorf("Approve(%v, %v): last event %v", tt.approved, tt.byTimeout, last)
		}
		if tt.source == nil {
			if len(events) != 1 {
				t.Errorf("Approve(%v, %v) events %v, want only task_status_changed", tt.approved, tt.byTimeout, types(events))
			}
			continue
		}
		if events[0].Type != trail.EventTaskApproved || events[0].Body["approval_source"] != tt.source {
			t.Errorf("Approve(%v, %v): first event %v, want task_approved from %v", tt.approved, tt.byTimeout, events[0], tt.source)
		}
	}
	p, _, _ := Approve(draft(), true, false)
	if _, _, err := Approve(p, true, false); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("Approve(pending) = %v, want ErrInvalidTransition", err)
	}
}

// attempt runs a task through one bound attempt that fails.
func attempt(t *testing.T, tk Task, ws string) Task {
	t.Helper()
	tk, events, err := Bind(tk, ws, true)
	if err != nil {
		t.Fatalf("Bind(%s) = %v", ws, err)
	}
	checkEvents(t, events)
	if want := len(tk.WorkspaceHistory); events[0].Type != trail.EventTaskAssigned || events[0].Body["attempt_number"] != want || events[0].Body["workspace_id"] != ws {
		t.Errorf("task_assigned = %v, want attempt %d of %s", events[0], want, ws)
	}
	if tk, _, err = Start(tk); err != nil {
		t.Fatal(err)
	}
	tk, events, err = Fail(tk, "timeout")
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, events)
	if events[0].Type != trail.EventTaskFailed || events[0].Body["attempt_number"] != len(tk.WorkspaceHistory) || events[0].Body["failure_reason"] != "timeout" || events[0].Body["workspace_id"] != ws {
		t.Errorf("task_failed = %v", events[0])
	}
	return tk
}

func TestBindRetryAndComplete(t *testing.T) {
	tk, _, _ := Approve(draft(), true, false)
	orig := tk
	tk = attempt(t, tk, "ws-1")
	if orig.WorkspaceRef != nil || len(orig.WorkspaceHistory) != 0 {
		t.Errorf("Bind changed its argument: %+v", orig)
	}
	if *tk.WorkspaceRef != "ws-1" || tk.Status != Failed {
		t.Errorf("after a failed attempt: %+v", tk)
	}
	if _, _, err := Bind(tk, "ws-2", true); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("Bind(failed) = %v, want ErrInvalidTransition (S-2)", err)
	}
	tk, events, err := Retry(tk)
	if err != nil || tk.Status != Pending || tk.WorkspaceRef != nil || events[0].Body["workspace_id"] != "ws-1" {
		t.Fatalf("Retry = %+v, %v, %v", tk, events, err)
	}
	if _, _, err := Bind(tk, "ws-1", true); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("Bind to a workspace that attempted the task = %v, want ErrInvalidRequest", err)
	}
	if _, _, err := Bind(tk, "ws-2", false); !errors.Is(err, ErrNotReady) {
		t.Errorf("Bind(not ready) = %v, want ErrNotReady", err)
	}
	tk = attempt(t, tk, "ws-2")
	tk, _, _ = Retry(tk)
	tk, _, err = Bind(tk, "ws-3", true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tk.WorkspaceHistory, []string{"ws-1", "ws-2", "ws-3"}) || *tk.WorkspaceRef != "ws-3" {
		t.Errorf("history %v ref %v, want [ws-1 ws-2 ws-3] ws-3 (S-3, S-4)", tk.WorkspaceHistory, *tk.WorkspaceRef)
	}
	if _, _, err := Complete(tk, "cp-1"); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("Complete(assigned) = %v, want ErrInvalidTransition", err)
	}
	tk, _, _ = Start(tk)
	if _, _, err := Complete(tk, ""); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("Complete without a checkpoint = %v", err)
	}
	tk, events, err = Complete(tk, "cp-9")
	if err != nil || tk.Status != Completed || *tk.CheckpointRef != "cp-9" {
		t.Fatalf("Complete = %+v, %v", tk, err)
	}
	checkEvents(t, events)
	if want := map[string]any{"task_id": "t1", "workspace_id": "ws-3", "checkpoint_id": "cp-9"}; !reflect.DeepEqual(events[0].Body, want) {
		t.Errorf("task_completed = %v, want %v", events[0].Body, want)
	}
	tk, _, err = Integrate(tk)
	if err != nil || tk.Status != Integrated || *tk.WorkspaceRef != "ws-3" {
		t.Errorf("Integrate = %+v, %v (workspace_ref kept at a terminal state, S-3)", tk, err)
	}
	if _, _, err := Cancel(tk); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("Cancel(integrated) = %v, want ErrInvalidTransition", err)
	}
}

func TestCancelFromEveryNonTerminal(t *testing.T) {
	for _, s := range Statuses() {
		tk := draft()
		tk.Status = s
		got, events, err := Cancel(tk)
		if s.Terminal() {
			if !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("Cancel(%s) = %v, want ErrInvalidTransition", s, err)
			}
			continue
		}
		if err != nil || got.Status != Cancelled || len(events) != 1 || events[0].Body["from_status"] != string(s) {
			t.Errorf("Cancel(%s) = %s, %v, %v", s, got.Status, events, err)
		}
	}
}

func TestDerive(t *testing.T) {
	tests := []struct {
		status   Status
		from, to workspace.State
		want     Trigger
		ok       bool
	}{
		{Assigned, workspace.Idle, workspace.Active, OnStarted, true},
		{InProgress, workspace.Active, workspace.Blocked, "", false},
		{InProgress, workspace.Active, workspace.Suspended, "", false},
		{InProgress, workspace.Suspended, workspace.Active, "", false},
		{InProgress, workspace.Active, workspace.Migrating, "", false},
		{InProgress, workspace.Active, workspace.Integrating, OnComplete, true},
		{InProgress, workspace.Blocked, workspace.Failed, OnFailed, true},
		{Assigned, workspace.Idle, workspace.Failed, OnFailed, true},
		{Completed, workspace.Integrating, workspace.Closed, OnIntegrated, true},
		{Completed, workspace.Conflicted, workspace.Closed, OnIntegrated, true},
		{Completed, workspace.Integrating, workspace.Conflicted, "", false},
		{Completed, workspace.Integrating, workspace.Failed, OnFailed, false}, // no completed → failed edge
		{Cancelled, workspace.Active, workspace.Failed, OnFailed, false},
	}
	for _, tt := range tests {
		got, ok := Derive(tt.status, tt.from, tt.to)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Derive(%s, %s, %s) = %q, %v, want %q, %v", tt.status, tt.from, tt.to, got, ok, tt.want, tt.ok)
		}
	}
}

func TestModify(t *testing.T) {
	base := draft()
	got, err := Modify(base, []byte(`{"name":"renamed","priority":"urgent","resource_estimate":{"tokens":3}}`))
	if err != nil || got.Name != "renamed" || got.Priority != PriorityUrgent || *got.ResourceEstimate.Tokens != 3 || got.Description != base.Description {
		t.Errorf("Modify = %+v, %v", got, err)
	}
	if base.Name != "n" {
		t.Error("Modify changed its argument")
	}
	for _, tt := range []struct {
		mods string
		want error
	}{
		{`{"depends_on":["x"]}`, ErrImmutable},
		{`{"graph_ref":"g2"}`, ErrImmutable},
		{`{"id":"t2"}`, ErrImmutable},
		{`{"name":""}`, ErrInvalidRequest},
		{`{"priority":"high"}`, ErrInvalidRequest},
		{`{"resource_estimate":{"cost":-1}}`, ErrInvalidRequest},
		{`[]`, ErrInvalidRequest},
	} {
		if _, err := Modify(base, []byte(tt.mods)); !errors.Is(err, tt.want) {
			t.Errorf("Modify(%s) = %v, want %v", tt.mods, err, tt.want)
		}
	}
}

package auditor_test

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
)

func seq(entries []trail.Entry) iter.Seq2[trail.Entry, error] {
	return func(yield func(trail.Entry, error) bool) {
		for _, e := range entries {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// busyTrail drives e through most of a workspace's lives: integrated,
// idle, active, suspended, aborted with a failure cascade, and checkpoint chains
// with and without a final checkpoint.
func busyTrail(t *testing.T, e *runtime.Engine) {
	t.Helper()
	root := e.Root()
	done := worker(t, e, root, true)
	c1 := checkpoint(t, e, done, nil, checkpointchain.StatusProvisional)
	checkpoint(t, e, done, &c1.ID, checkpointchain.StatusFinal)
	if _, err := e.EmitSignal(ctx, done, []byte(`{"type":"complete"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Integrate(ctx, root, mustJSON(t, map[string]any{"workspace": done, "decision": "accept"})); err != nil {
		t.Fatal(err)
	}
	worker(t, e, root, false) // stays idle
	worker(t, e, root, true)  // stays active
	sus := worker(t, e, root, true)
	checkpoint(t, e, sus, nil, checkpointchain.StatusProvisional)
	if _, err := e.Suspend(ctx, root, sus, "pause"); err != nil {
		t.Fatal(err)
	}
	del := worker(t, e, root, true, map[string]any{"delegate": true})
	child, err := e.CreateWorkspace(ctx, del, mustJSON(t, map[string]any{"role": "worker"}))
	if err != nil {
		t.Fatal(err)
	}
	send(t, e, del, child.ID, "directive")
	checkpoint(t, e, child.ID, nil, checkpointchain.StatusFinal)
	if _, err := e.Abort(ctx, root, del, "changed plans"); err != nil {
		t.Fatal(err)
	}
}

// liveState reads the engine's own state: its workspace records and its
// checkpoint registers.
func liveState(t *testing.T, e *runtime.Engine) auditor.State {
	t.Helper()
	root := e.Root()
	ws, err := e.ListWorkspaces(ctx, root, "", "")
	if err != nil {
		t.Fatal(err)
	}
	st := auditor.State{Workspaces: map[string]auditor.WorkspaceState{}, Chains: map[string]auditor.Chain{}}
	for _, w := range ws {
		st.Workspaces[w.ID] = auditor.WorkspaceState{Role: w.Role, Parent: w.ParentID(), State: string(w.State)}
		cps, err := e.ListCheckpoints(ctx, root, w.ID, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(cps) == 0 {
			continue
		}
		c := auditor.Chain{Head: cps[len(cps)-1].ID, Count: len(cps)}
		for _, cp := range cps {
			if cp.Status == checkpointchain.StatusFinal {
				c.LastFinal = cp.ID
			}
		}
		if head, err := e.Head(ctx, root, w.ID, false); err != nil || head.ID != c.Head {
			t.Fatalf("Head(%s) = %s, %v; want the last listed checkpoint %s", w.ID, head.ID, err, c.Head)
		}
		st.Chains[w.ID] = c
	}
	return st
}

func TestReplayMatchesEngine(t *testing.T) {
	e := openEngine(t, "")
	busyTrail(t, e)
	replayed, err := auditor.Replay(seq(readAll(t, e.Trail())))
	if err != nil {
		t.Fatalf("Replay = %v", err)
	}
	live := liveState(t, e)
	if d := auditor.Diff(replayed, live); len(d) != 0 {
		t.Fatalf("Diff(replayed, live) = %v, want none", d)
	}
	states := map[string]bool{}
	for _, w := range replayed.Workspaces {
		states[w.State] = true
	}
	for _, s := range []string{"idle", "active", "closed", "suspended", "failed"} {
		if !states[s] {
			t.Errorf("the busy trail has no workspace in state %s (%v); the test lost coverage", s, states)
		}
	}
	if len(replayed.Workspaces) != 7 || replayed.Checkpoints() != 4 || len(replayed.Chains) != 3 {
		t.Errorf("replayed %d workspaces, %d checkpoints in %d chains; want 7, 4, 3", len(replayed.Workspaces), replayed.Checkpoints(), len(replayed.Chains))
	}

	// A change on the live side is named.
	var w, c string
	for id, ws := range live.Workspaces {
		if ws.State == "suspended" {
			w = id
		}
	}
	for id, ch := range live.Chains {
		if ch.LastFinal != "" && live.Workspaces[id].State == "closed" {
			c = id
		}
	}
	changed := liveState(t, e)
	changed.Workspaces[w] = auditor.WorkspaceState{Role: "worker", Parent: e.Root(), State: "active"}
	ch := changed.Chains[c]
	ch.Head, ch.Count = "01JNOTAREALCHECKPOINTXXXXX", ch.Count+1
	changed.Chains[c] = ch
	delete(changed.Workspaces, e.Root())
	changed.Workspaces["01JGHOSTGHOSTGHOSTGHOSTGHO"] = auditor.WorkspaceState{Role: "worker", State: "idle"}
	want := []auditor.Difference{
		{Workspace: w, Field: "state", Replayed: "suspended", Live: "active"},
		{Workspace: c, Field: "head", Replayed: replayed.Chains[c].Head, Live: "01JNOTAREALCHECKPOINTXXXXX"},
		{Workspace: c, Field: "count", Replayed: fmt.Sprint(replayed.Chains[c].Count), Live: fmt.Sprint(ch.Count)},
		{Workspace: e.Root(), Field: "workspace", Replayed: "exists", Live: ""},
		{Workspace: "01JGHOSTGHOSTGHOSTGHOSTGHO", Field: "workspace", Replayed: "", Live: "exists"},
	}
	got := auditor.Diff(replayed, changed)
	for _, d := range want {
		if !slices.Contains(got, d) {
			t.Errorf("Diff(replayed, changed) = %v, missing %+v", got, d)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Diff(replayed, changed) = %d differences %v, want %d", len(got), got, len(want))
	}
	for _, d := range got {
		if s := d.String(); !strings.Contains(s, d.Workspace) || !strings.Contains(s, d.Field) {
			t.Errorf("Difference.String() = %q, want the workspace and the field", s)
		}
	}
	// Count unknown on the live side is not compared.
	ch.Count = -1
	changed.Chains[c] = ch
	for _, d := range auditor.Diff(replayed, changed) {
		if d.Field == "count" {
			t.Errorf("Diff with live count -1 = %+v, want no count difference", d)
		}
	}
}

// logTrail builds a real trail with traillog.Log in an in-memory Badger from
// events, for rules the engine cannot easily reach (a cross-owner
// reparenting) and for contradictions.
func logTrail(t *testing.T, events []traillog.Event) []trail.Entry {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l, err := traillog.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range events {
		ev.ID = fmt.Sprintf("01J%023d", i+1)
		ev.Timestamp = fmt.Sprintf("2026-01-01T00:00:00.%09dZ", i+1)
		if ev.Actor == "" {
			ev.Actor = trail.ActorProtocol
		}
		txn := db.NewTransaction(true)
		b := l.NewBatch(seglog.Direct(txn))
		if _, err := b.Append(ev); err != nil {
			t.Fatalf("Append(%s): %v", ev.Type, err)
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Commit()
	}
	return readAll(t, l)
}

func created(id string, parent any) traillog.Event {
	return traillog.Event{Workspace: id, Type: trail.EventWorkspaceCreated, Body: map[string]any{
		"workspace_id": id, "role": "worker", "parent": parent, "delegate": false, "originator": "system",
		"owner": "operator", "visibility_set": []string{}, "authority_set": []string{}, "timeout": nil,
		"budget": nil, "priority": "normal", "group": nil,
	}}
}

func changed(id, from, to string) traillog.Event {
	return traillog.Event{Workspace: id, Type: trail.EventWorkspaceStateChanged, Body: map[string]any{
		"workspace_id": id, "from_state": from, "to_state": to, "trigger": "t", "initiator": "system",
	}}
}

func reparented(id, from, to string) traillog.Event {
	return traillog.Event{Type: trail.EventWorkspaceReparented, Body: map[string]any{
		"workspace_id": id, "old_parent": from, "new_parent": to, "reason": "parent_failed",
	}}
}

func cpCreated(ws, id string, parent any, status string) traillog.Event {
	return traillog.Event{Workspace: ws, Type: trail.EventCheckpointCreated, Body: map[string]any{
		"checkpoint_id": id, "workspace": ws, "type": "artifact", "status": status, "confidence": "high",
		"parent": parent, "timestamp": "2026-01-01T00:00:00Z", "digest": "blake3:" + strings.Repeat("0", 64),
	}}
}

func TestReplayRules(t *testing.T) {
	entries := logTrail(t, []traillog.Event{
		created("R", nil),
		created("A", "R"),
		created("B", "A"),
		changed("A", "idle", "active"),
		cpCreated("A", "c1", nil, "final"),
		cpCreated("A", "c2", "c1", "provisional"),
		changed("A", "active", "failed"),
		reparented("B", "A", "R"),
	})
	got, err := auditor.Replay(seq(entries))
	if err != nil {
		t.Fatalf("Replay = %v", err)
	}
	want := auditor.State{
		Workspaces: map[string]auditor.WorkspaceState{
			"R": {Role: "worker", State: "idle"},
			"A": {Role: "worker", Parent: "R", State: "failed"},
			"B": {Role: "worker", Parent: "R", State: "idle"},
		},
		Chains: map[string]auditor.Chain{"A": {Head: "c2", Count: 2, LastFinal: "c1"}},
	}
	if d := auditor.Diff(got, want); len(d) != 0 {
		t.Errorf("Replay = %+v, differs from %+v: %v", got, want, d)
	}
}

func TestReplayInconsistent(t *testing.T) {
	tests := []struct {
		name   string
		events []traillog.Event
	}{
		{"state change from the wrong state", []traillog.Event{created("R", nil), changed("R", "active", "closed")}},
		{"state change of an unknown workspace", []traillog.Event{created("R", nil), changed("X", "idle", "active")}},
		{"created twice", []traillog.Event{created("R", nil), created("R", nil)}},
		{"unknown parent", []traillog.Event{created("R", nil), created("A", "X")}},
		{"checkpoint parent is not the head", []traillog.Event{created("R", nil), cpCreated("R", "c1", nil, "final"), cpCreated("R", "c2", nil, "final")}},
		{"checkpoint of an unknown workspace", []traillog.Event{created("R", nil), cpCreated("X", "c1", nil, "final")}},
		{"reparent from the wrong parent", []traillog.Event{created("R", nil), created("A", "R"), created("B", "A"), reparented("B", "R", "A")}},
		{"reparent under an unknown parent", []traillog.Event{created("R", nil), created("A", "R"), reparented("A", "R", "X")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries := logTrail(t, tt.events)
			_, err := auditor.Replay(seq(entries))
			last := entries[len(entries)-1].ID
			if !errors.Is(err, auditor.ErrInconsistent) || !strings.Contains(err.Error(), last) {
				t.Errorf("Replay = %v, want ErrInconsistent naming entry %s", err, last)
			}
		})
	}
	boom := errors.New("read failed")
	_, err := auditor.Replay(func(yield func(trail.Entry, error) bool) { yield(trail.Entry{}, boom) })
	if !errors.Is(err, boom) {
		t.Errorf("Replay(failing iterator) = %v, want %v", err, boom)
	}
}

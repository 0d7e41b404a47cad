package runtime

import (
	"testing"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Tests of dynamic visibility grants (visibility.go, WACP Workspace §8,
// Visibility §4).

// TestVisibility_GrantLetsTheGranteeRead: a worker cannot read a peer's
// checkpoints until the coordinator grants it visibility into the peer;
// then checkpoint.list and checkpoint.get of the peer answer, and
// visibility_granted {workspace_id, target, reason} is in the grantee's
// trail. The grant survives a restart.
func TestVisibility_GrantLetsTheGranteeRead(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	a := newWorker(t, e)
	b := newWorker(t, e)
	cp := checkpoint(t, e, b.ID, nil, "provisional")
	if _, err := e.ListCheckpoints(ctx, a.ID, b.ID, "", 0); err == nil {
		t.Fatal("a worker lists a peer's checkpoints without a grant")
	}
	if _, err := e.GetCheckpoint(ctx, a.ID, cp.ID); err == nil {
		t.Fatal("a worker reads a peer's checkpoint without a grant")
	}
	w, err := e.GrantVisibility(ctx, e.Root(), a.ID, b.ID, "needs b's schema")
	if err != nil {
		t.Fatalf("GrantVisibility: %v", err)
	}
	if !w.Sees(b.ID) {
		t.Errorf("visibility after the grant = %v, want %s in it", w.Visibility, b.ID)
	}
	got := localEntries(t, e, a.ID, trail.EventVisibilityGranted)
	if len(got) != 1 {
		t.Fatalf("%d visibility_granted in the grantee's trail, want 1", len(got))
	}
	if body := entryBody(t, got[0]); body["workspace_id"] != a.ID || body["target"] != b.ID || body["reason"] != "needs b's schema" || got[0].Actor != trail.ActorSystem {
		t.Errorf("visibility_granted = %v by %s, want workspace_id %s, target %s, the reason, by system", body, got[0].Actor, a.ID, b.ID)
	}
	if cps, err := e.ListCheckpoints(ctx, a.ID, b.ID, "", 0); err != nil || len(cps) != 1 {
		t.Errorf("after the grant ListCheckpoints(peer) = %d, %v, want 1", len(cps), err)
	}
	if _, err := e.GetCheckpoint(ctx, a.ID, cp.ID); err != nil {
		t.Errorf("after the grant GetCheckpoint(peer's) = %v", err)
	}
	if _, err := e.GetCheckpoint(ctx, b.ID, cp.ID); err != nil {
		t.Errorf("the target's own read: %v", err)
	}
	verify(t, e)
	e.Close()
	e = openEngineAt(t, dir)
	if cps, err := e.ListCheckpoints(ctx, a.ID, b.ID, "", 0); err != nil || len(cps) != 1 {
		t.Errorf("after a restart ListCheckpoints(peer) = %d, %v, want 1", len(cps), err)
	}
}

// TestVisibility_GrantRules: refusals change nothing: no reason, a
// grantee that is not active or blocked, a target already visible or
// missing, a worker as grantor; a delegate grants within its subtree only
// (a target it does not see is not_found, as a missing one), and a grant
// keeps the grantee within its parent's visibility (containment).
func TestVisibility_GrantRules(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	a := newWorker(t, e)
	b := newWorker(t, e)
	idle := idleWorker(t, e, root)
	if _, err := e.GrantVisibility(ctx, root, a.ID, b.ID, "first"); err != nil {
		t.Fatal(err)
	}
	d, err := e.CreateWorkspace(ctx, root, []byte(`{"role":"worker","delegate":true}`))
	if err != nil {
		t.Fatal(err)
	}
	directive(t, e, root, d.ID)
	c1 := newChild(t, e, d.ID)
	c2 := newChild(t, e, d.ID)
	blocked := newWorker(t, e)
	emitOK(t, e, blocked.ID, `{"type":"blocked","reason":"waiting"}`)

	before := e.Trail().Len()
	for _, tt := range []struct {
		name, actor, ws, target, reason, code string
	}{
		{"no reason", root, a.ID, idle.ID, "", "invalid_structure"},
		{"no target", root, a.ID, "", "r", "invalid_structure"},
		{"again", root, a.ID, b.ID, "r", "invalid_structure"},
		{"itself", root, a.ID, a.ID, "r", "invalid_structure"},
		{"idle grantee", root, idle.ID, a.ID, "r", "invalid_transition"},
		{"missing target", root, a.ID, "01JZZZZZZZZZZZZZZZZZZZZZZZ", "r", "not_found"},
		{"worker grantor (a workspace it does not see)", b.ID, a.ID, idle.ID, "r", "not_found"},
		{"worker grantor on one it sees", a.ID, b.ID, idle.ID, "r", "permission_denied"},
		{"delegate outside its subtree", d.ID, c1.ID, a.ID, "r", "not_found"},
		{"delegate on a workspace outside its subtree", d.ID, a.ID, c1.ID, "r", "not_found"},
		{"beyond the parent's visibility", root, c1.ID, a.ID, "r", "permission_denied"},
	} {
		_, err := e.GrantVisibility(ctx, tt.actor, tt.ws, tt.target, tt.reason)
		wantCode(t, tt.name, err, tt.code)
	}
	if n := e.Trail().Len(); n != before {
		t.Fatalf("refused grants wrote %d entries", n-before)
	}
	if _, err := e.GrantVisibility(ctx, d.ID, c1.ID, c2.ID, "sibling's output"); err != nil {
		t.Errorf("a delegate's grant within its subtree: %v", err)
	}
	if _, err := e.GrantVisibility(ctx, root, d.ID, a.ID, "for the subtree"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GrantVisibility(ctx, root, c1.ID, a.ID, "now within the parent's"); err != nil {
		t.Errorf("a grant within the parent's visibility: %v", err)
	}
	if _, err := e.GrantVisibility(ctx, root, blocked.ID, idle.ID, "blocked grantee"); err != nil {
		t.Errorf("a grant to a blocked workspace: %v", err)
	}
	closed := workerIn(t, e, workspace.Closed)
	if _, err := e.GrantVisibility(ctx, root, b.ID, closed, "a closed target"); err != nil {
		t.Errorf("a grant of a closed target: %v", err)
	}
}

// newChild creates an active worker under parent (a delegate).
func newChild(t testing.TB, e *Engine, parent string) *workspace.Workspace {
	t.Helper()
	w := idleWorker(t, e, parent)
	directive(t, e, parent, w.ID)
	return w
}

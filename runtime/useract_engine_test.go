package runtime

import (
	"strings"
	"testing"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

func userCreate(e *Engine, uid, body string) (*workspace.Workspace, error) {
	return e.UserCreateWorkspace(ctx, uid, []byte(body), nil)
}

func denials(t testing.TB, e *Engine, uid, reason string) int {
	t.Helper()
	return len(trailWhere(t, e, trail.EventCapabilityDenied, map[string]string{"user_id": uid, "reason": reason}))
}

// TestUsers_PersonActions: User spec §6.2, §6.4: what a user token does
// to workspaces and users itself, each under its capability and scope
// (_own: the user owns the target), every denial a capability_denied entry
// and no change; the person is the actor and, of what it creates, the
// owner and originator.
func TestUsers_PersonActions(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "alice", user.CreateWorkspace, user.SuspendOwn, user.AbortOwn)
	mkUser(t, e, "bob")
	mkUser(t, e, "admin", user.CreateWorkspaceAny, user.SuspendAny, user.AbortAny, user.TransferOwnership, user.DeactivateUser, user.GrantDelegation)

	// create_workspace: owned by self, under any live parent.
	w, err := userCreate(e, "alice", `{"role":"worker"}`)
	if err != nil {
		t.Fatal(err)
	}
	if w.Owner != "alice" || w.Originator != "alice" || w.ParentID() != e.Root() {
		t.Errorf("alice's workspace = owner %s, originator %s, parent %s; want alice, alice, the root", w.Owner, w.Originator, w.ParentID())
	}
	if len(trailWhere(t, e, trail.EventWorkspaceCreated, map[string]string{"workspace_id": w.ID, "owner": "alice", "originator": "alice"})) != 1 {
		t.Error("no workspace_created with owner and originator alice")
	}
	if got := localEntries(t, e, w.ID, trail.EventWorkspaceCreated); len(got) != 1 || got[0].Actor != "alice" {
		t.Errorf("workspace_created actor = %+v, want alice", got)
	}
	n := denials(t, e, "alice", user.WrongScope)
	_, err = userCreate(e, "alice", `{"role":"worker","owner":"bob"}`)
	wantCode(t, "alice creates bob's workspace", err, wire.CodeCapabilityDenied)
	_, err = userCreate(e, "alice", `{"role":"worker","delegate":true}`)
	wantCode(t, "alice grants delegation without grant_delegation", err, wire.CodeCapabilityDenied)
	if got := denials(t, e, "alice", user.WrongScope); got != n+1 {
		t.Errorf("wrong_scope denials of alice = %d, want %d", got, n+1)
	}
	_, err = userCreate(e, "bob", `{"role":"worker"}`)
	wantCode(t, "bob creates without create_workspace", err, wire.CodeCapabilityDenied)
	_, err = userCreate(e, "alice", `{"role":"worker","injection":"01X"}`)
	wantCode(t, "a person names an injection", err, wire.CodeInvalidStructure)
	bobs, err := userCreate(e, "admin", `{"role":"worker","owner":"bob","parent":"`+w.ID+`"}`)
	if err != nil {
		t.Fatalf("admin creates bob's workspace under alice's: %v", err)
	}
	if bobs.Owner != "bob" || bobs.Originator != "admin" || bobs.ParentID() != w.ID {
		t.Errorf("admin's workspace for bob = %+v", bobs)
	}
	// grant_delegation is _own: for a workspace one owns.
	if d, err := userCreate(e, "admin", `{"role":"worker","delegate":true}`); err != nil || !d.Delegate {
		t.Errorf("admin creates its own delegate = %+v, %v", d, err)
	}
	_, err = userCreate(e, "admin", `{"role":"worker","owner":"bob","delegate":true}`)
	wantCode(t, "admin grants delegation to bob's workspace", err, wire.CodeCapabilityDenied)
	_, err = userCreate(e, "admin", `{"role":"worker","owner":"nobody-here"}`)
	wantCode(t, "a workspace for a user with no record", err, wire.CodeNotFound)
	own, err := userCreate(e, "alice", `{"role":"worker","parent":"`+w.ID+`"}`)
	if err != nil {
		t.Fatal(err)
	}

	// suspend_own / resume: alice's own, not bob's.
	directive(t, e, e.Root(), w.ID)
	sw, err := e.UserSuspend(ctx, "alice", wire.IDRequest{ID: w.ID})
	if err != nil || sw.State != workspace.Suspended {
		t.Fatalf("alice suspends her workspace = %+v, %v", sw, err)
	}
	if got := localEntries(t, e, w.ID, trail.EventSuspensionStarted); len(got) != 1 || got[0].Actor != "alice" {
		t.Errorf("suspension_started = %+v, want one by alice", got)
	}
	if rw, err := e.UserResume(ctx, "alice", wire.IDRequest{ID: w.ID}); err != nil || rw.State != workspace.Active {
		t.Fatalf("alice resumes it = %+v, %v", rw, err)
	}
	_, err = e.UserSuspend(ctx, "alice", wire.IDRequest{ID: bobs.ID})
	wantCode(t, "alice suspends bob's workspace", err, wire.CodeCapabilityDenied)
	if wsState(t, e, bobs.ID) != workspace.Idle {
		t.Error("a denied suspend changed the workspace")
	}
	_, err = e.UserResume(ctx, "alice", wire.IDRequest{ID: w.ID})
	wantCode(t, "resume an active workspace", err, wire.CodeInvalidTransition)
	_, err = e.UserAbort(ctx, "admin", wire.IDRequest{ID: e.Root()})
	wantCode(t, "abort the root", err, wire.CodeInvalidTransition)

	// transfer_ownership (any scope).
	_, err = e.UserTransfer(ctx, "alice", wire.TransferRequest{ID: w.ID, Owner: "bob"})
	wantCode(t, "alice transfers without transfer_ownership", err, wire.CodeCapabilityDenied)
	tw, err := e.UserTransfer(ctx, "admin", wire.TransferRequest{ID: own.ID, Owner: "bob", Reason: "handover"})
	if err != nil || tw.Owner != "bob" || tw.Originator != "alice" {
		t.Fatalf("admin transfers = %+v, %v; want owner bob, originator still alice", tw, err)
	}
	if len(trailWhere(t, e, trail.EventWorkspaceOwnershipTransferred, map[string]string{"workspace_id": own.ID, "transferred_by": "admin", "to_user": "bob"})) != 1 {
		t.Error("no workspace_ownership_transferred by admin")
	}

	// deactivate_user: deactivate and reactivate, nothing else.
	_, err = e.UserSetState(ctx, "alice", wire.UserStateRequest{User: "bob", State: user.Deactivated})
	wantCode(t, "alice deactivates bob", err, wire.CodeCapabilityDenied)
	_, err = e.UserSetState(ctx, "admin", wire.UserStateRequest{User: "bob", State: user.Suspended})
	wantCode(t, "a person suspends a user", err, wire.CodeInvalidStructure)
	_, err = e.UserSetState(ctx, "admin", wire.UserStateRequest{User: "bob", State: user.Active})
	wantCode(t, "reactivate an active user", err, wire.CodeInvalidTransition)
	if u, err := e.UserSetState(ctx, "admin", wire.UserStateRequest{User: "bob", State: user.Deactivated, Reason: "left"}); err != nil || u.State != user.Deactivated {
		t.Fatalf("admin deactivates bob = %+v, %v", u, err)
	}
	if len(trailWhere(t, e, trail.EventUserDeactivated, map[string]string{"user_id": "bob", "deactivated_by": "admin"})) != 1 {
		t.Error("no user_deactivated by admin")
	}
	if u, err := e.UserSetState(ctx, "admin", wire.UserStateRequest{User: "bob", State: user.Active}); err != nil || u.State != user.Active {
		t.Fatalf("admin reactivates bob = %+v, %v", u, err)
	}

	// A user who is not active initiates nothing.
	if _, err := setState(e, "alice", user.Suspended); err != nil {
		t.Fatal(err)
	}
	_, err = e.UserAbort(ctx, "alice", wire.IDRequest{ID: w.ID})
	wantCode(t, "a suspended user aborts", err, wire.CodeCapabilityDenied)
	if denials(t, e, "alice", user.NotActive) != 1 || wsState(t, e, w.ID) != workspace.Active {
		t.Error("a suspended user's abort: want one user_not_active denial and no change")
	}
}

// TestUsers_AbortAtOwnershipBoundary: User spec §4.4 (MUST 12): a person's
// abort cascades to the descendants of the same owner and stops at another
// owner's, which is reparented to the root, keeping its state and subtree.
func TestUsers_AbortAtOwnershipBoundary(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "alice", user.CreateWorkspace, user.AbortOwn)
	mkUser(t, e, "bob")
	mkUser(t, e, "admin", user.CreateWorkspaceAny)
	w1, err := userCreate(e, "alice", `{"role":"worker"}`)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := userCreate(e, "alice", `{"role":"worker","parent":"`+w1.ID+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	w5, err := userCreate(e, "admin", `{"role":"worker","parent":"`+w1.ID+`","owner":"bob"}`)
	if err != nil {
		t.Fatal(err)
	}
	w6, err := userCreate(e, "admin", `{"role":"worker","parent":"`+w5.ID+`","owner":"bob"}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.UserAbort(ctx, "alice", wire.IDRequest{ID: w5.ID})
	wantCode(t, "alice aborts bob's workspace", err, wire.CodeCapabilityDenied)

	a, err := e.UserAbort(ctx, "alice", wire.IDRequest{ID: w1.ID, Reason: "done with it"})
	if err != nil || a.State != workspace.Failed || a.Reason != ReasonAbortedByHuman {
		t.Fatalf("alice aborts W1 = %+v, %v; want failed, aborted_by_human", a, err)
	}
	wantBody(t, "W1's transition", lastStateChange(t, e, w1.ID), map[string]any{"initiator": "alice", "reason": ReasonAbortedByHuman, "detail": "done with it"})
	if got, _ := e.GetWorkspace(ctx, e.Root(), w2.ID); got.State != workspace.Failed || got.Reason != "parent_failed" {
		t.Errorf("W2 (alice's) = %s (%s), want failed (parent_failed)", got.State, got.Reason)
	}
	got5, _ := e.GetWorkspace(ctx, e.Root(), w5.ID)
	if got5.State != workspace.Idle || got5.ParentID() != e.Root() || got5.Owner != "bob" {
		t.Errorf("W5 (bob's) = %s under %s owned by %s; want idle under the root, bob's", got5.State, got5.ParentID(), got5.Owner)
	}
	rep := localEntries(t, e, w5.ID, trail.EventWorkspaceReparented)
	if len(rep) != 1 {
		t.Fatalf("workspace_reparented of W5 = %d, want 1", len(rep))
	}
	wantBody(t, "workspace_reparented", entryBody(t, rep[0]), map[string]any{
		"old_parent": w1.ID, "new_parent": e.Root(), "reason": "parent_aborted_cross_ownership"})
	if got6, _ := e.GetWorkspace(ctx, e.Root(), w6.ID); got6.State != workspace.Idle || got6.ParentID() != w5.ID {
		t.Errorf("W6 = %s under %s, want idle under W5", got6.State, got6.ParentID())
	}
}

// TestUsers_TrailScope: User spec §6.2, §6.3 (MUSTs 17, 20): a user reads
// the trail of the workspaces it owns (view_trail_own, implicit) and system
// entries about itself; everything with view_trail_any; a read of another's
// workspace or of the whole chain without view_trail_any is
// capability_denied (wrong_scope), recorded; a user who is not active reads
// nothing.
func TestUsers_TrailScope(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "alice", user.CreateWorkspace)
	mkUser(t, e, "auditor", user.ViewTrailAny)
	mine, err := userCreate(e, "alice", `{"role":"worker"}`)
	if err != nil {
		t.Fatal(err)
	}
	other := newWorker(t, e)

	read := func(keep func(trail.Entry) bool, ws string) []trail.Entry {
		t.Helper()
		var out []trail.Entry
		q := trail.Query{Workspace: ws, Limit: trail.MaxLimit, Keep: keep}
		for {
			page, next, err := e.Trail().Read(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, page...)
			if next == "" {
				return out
			}
			q.After = next
		}
	}
	keep, err := e.UserTrailScope(ctx, "alice", "", false)
	if err != nil || keep == nil {
		t.Fatalf("alice's scope = %v, %v; want a filter", keep != nil, err)
	}
	sawMine, sawSelf := false, false
	for _, en := range read(keep, "") {
		switch {
		case en.Workspace == mine.ID:
			sawMine = true
		case en.Workspace == "" && en.EventType == trail.EventUserCreated:
			sawSelf = true
		case en.Workspace != "":
			t.Errorf("alice reads entry %s of workspace %s, not hers", en.ID, en.Workspace)
		}
		if en.Workspace == "" && en.Actor != "alice" && !strings.Contains(string(en.Body), `"user_id":"alice"`) {
			t.Errorf("alice reads system entry %s (%s), not about her", en.ID, en.EventType)
		}
	}
	if !sawMine || !sawSelf {
		t.Errorf("alice's read: her workspace %v, her user_created %v; want both", sawMine, sawSelf)
	}
	if keep, err := e.UserTrailScope(ctx, "alice", mine.ID, false); err != nil || keep != nil {
		t.Errorf("alice reads her own workspace's trail: %v", err)
	}
	n := denials(t, e, "alice", user.WrongScope)
	_, err = e.UserTrailScope(ctx, "alice", other.ID, false)
	wantCode(t, "alice reads another's workspace", err, wire.CodeCapabilityDenied)
	_, err = e.UserTrailScope(ctx, "alice", "", true)
	wantCode(t, "alice verifies the whole chain", err, wire.CodeCapabilityDenied)
	if got := denials(t, e, "alice", user.WrongScope); got != n+2 {
		t.Errorf("wrong_scope denials = %d, want %d", got, n+2)
	}
	if keep, err := e.UserTrailScope(ctx, "auditor", other.ID, true); err != nil || keep != nil {
		t.Errorf("view_trail_any reads anything: %v", err)
	}
	if keep, err := e.UserTrailScope(ctx, "auditor", "", false); err != nil || keep != nil {
		t.Errorf("view_trail_any reads everything: %v", err)
	}
	if _, err := setState(e, "alice", user.Blocked); err != nil {
		t.Fatal(err)
	}
	_, err = e.UserTrailScope(ctx, "alice", "", false)
	wantCode(t, "a blocked user reads", err, wire.CodeCapabilityDenied)
	if denials(t, e, "alice", user.NotActive) != 1 {
		t.Error("no user_not_active denial")
	}
}

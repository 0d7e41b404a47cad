package runtime

import (
	"testing"

	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

func setState(e *Engine, u string, s user.State) (user.User, error) {
	return e.SetUserState(ctx, e.Root(), wire.UserStateRequest{User: u, State: s, Reason: "test", Condition: "mfa"})
}

func escalationOf(t *testing.T, e *Engine, id string) highway.EscalationRecord {
	t.Helper()
	for _, x := range e.Escalations(ctx, true) {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("no escalation %s", id)
	return highway.EscalationRecord{}
}

// TestUsers_StatesCapabilitiesOwnership: User spec §3.4 (the transitions,
// each with its event, on the coordinator's feed), §3.1 (escalations to a
// suspended or blocked owner queue and deliver on resume; to a
// deactivated one are rejected), §6.5 (grants and revocations), §4.5
// (ownership transfer).
func TestUsers_StatesCapabilitiesOwnership(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "operator", user.InjectDirective)
	mkUser(t, e, "deputy")

	if _, err := setState(e, "operator", user.Suspended); err != nil {
		t.Fatal(err)
	}
	_, x := escalate(t, e)
	if x.Delivery != highway.Queued || !x.Pending() {
		t.Fatalf("escalation to a suspended owner = %+v, want queued", x)
	}
	_, err := respond(e, "operator", x.ID, "delegation", nil)
	wantCode(t, "a suspended user responds", err, wire.CodeCapabilityDenied)
	if _, err := setState(e, "operator", user.Blocked); err != nil {
		t.Fatal(err)
	}
	if _, err := setState(e, "operator", user.Active); err != nil {
		t.Fatal(err)
	}
	if got := escalationOf(t, e, x.ID); got.Delivery != highway.Delivered || !got.Pending() {
		t.Errorf("after the owner came back: %+v, want delivered", got)
	}
	for _, typ := range []trail.EventType{trail.EventUserSuspended, trail.EventUserBlocked, trail.EventUserUnblocked} {
		if len(trailWhere(t, e, typ, map[string]string{"user_id": "operator"})) != 1 {
			t.Errorf("no %s", typ)
		}
	}
	// Deactivation rejects what is pending and hands it to the coordinator.
	if _, err := setState(e, "operator", user.Deactivated); err != nil {
		t.Fatal(err)
	}
	if got := escalationOf(t, e, x.ID); got.Pending() || got.Resolution.Response != highway.RespondDelegation || got.Delivery != highway.Rejected {
		t.Errorf("after the owner was deactivated: %+v", got)
	}
	_, err = setState(e, "operator", user.Suspended)
	wantCode(t, "deactivated → suspended", err, wire.CodeInvalidTransition)
	if _, err := setState(e, "operator", user.Active); err != nil || len(trailWhere(t, e, trail.EventUserReactivated, nil)) != 1 {
		t.Fatalf("reactivation: %v", err)
	}
	_, err = e.SetUserState(ctx, newWorker(t, e).ID, wire.UserStateRequest{User: "operator", State: user.Suspended})
	wantCode(t, "a worker changes a user's state", err, wire.CodePermissionDenied)

	// Capabilities.
	u, err := e.SetCapabilities(ctx, e.Root(), wire.UserCapabilitiesRequest{User: "deputy", Grant: []user.Capability{user.AbortAny}})
	if err != nil || !u.Has(user.AbortAny) {
		t.Fatalf("grant = %+v, %v", u, err)
	}
	u, err = e.SetCapabilities(ctx, e.Root(), wire.UserCapabilitiesRequest{User: "deputy", Revoke: []user.Capability{user.AbortAny}, Reason: "rotation"})
	if err != nil || u.Has(user.AbortAny) {
		t.Fatalf("revoke = %+v, %v", u, err)
	}
	if len(trailWhere(t, e, trail.EventCapabilityGranted, map[string]string{"user_id": "deputy", "capability": "abort_any"})) != 1 ||
		len(trailWhere(t, e, trail.EventCapabilityRevoked, map[string]string{"user_id": "deputy", "reason": "rotation"})) != 1 {
		t.Error("no capability_granted / capability_revoked")
	}
	_, err = e.SetCapabilities(ctx, e.Root(), wire.UserCapabilitiesRequest{User: "deputy", Grant: []user.Capability{"root"}})
	wantCode(t, "grant an unknown capability", err, wire.CodeInvalidStructure)

	// Ownership: escalations follow the new owner.
	w := newWorker(t, e)
	got, err := e.TransferOwnership(ctx, e.Root(), wire.TransferRequest{ID: w.ID, Owner: "deputy", Reason: "handover"})
	if err != nil || got.Owner != "deputy" {
		t.Fatalf("transfer = %+v, %v", got, err)
	}
	if len(trailWhere(t, e, trail.EventWorkspaceOwnershipTransferred, map[string]string{"workspace_id": w.ID, "from_user": w.Owner, "to_user": "deputy"})) != 1 {
		t.Error("no workspace_ownership_transferred")
	}
	emitOK(t, e, w.ID, `{"type":"blocked","reason":"stuck"}`)
	emitOK(t, e, w.ID, `{"type":"escalation","reason":"help"}`)
	found := false
	for _, x := range e.Escalations(ctx, false) {
		found = found || (x.Workspace == w.ID && x.Owner == "deputy")
	}
	if !found {
		t.Error("the escalation did not go to the new owner")
	}
	_, err = e.TransferOwnership(ctx, e.Root(), wire.TransferRequest{ID: w.ID, Owner: "nobody"})
	wantCode(t, "transfer to a user without a record", err, wire.CodeNotFound)
}

package user

import (
	"errors"
	"reflect"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

const ts = "2026-11-26T00:00:00.000000000Z"

func checkEvents(t *testing.T, events ...Event) {
	t.Helper()
	for _, e := range events {
		if err := trail.ValidateBody(e.Type, e.Body); err != nil {
			t.Errorf("%s: %v", e.Type, err)
		}
		if _, err := trail.EncodeBody(e.Type, e.Body); err != nil {
			t.Errorf("EncodeBody(%s) = %v", e.Type, err)
		}
	}
}

func mustNew(t *testing.T, id string, caps ...Capability) User {
	t.Helper()
	u, events, err := New(id, "system", ts, caps...)
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, events...)
	return u
}

func TestNew(t *testing.T) {
	u, events, err := New("alice", "system", ts, AbortOwn, CreateWorkspace, AbortOwn)
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, events...)
	if u.State != Active || !reflect.DeepEqual(u.Capabilities, []Capability{AbortOwn, CreateWorkspace}) {
		t.Errorf("New = %+v", u)
	}
	var types []trail.EventType
	for _, e := range events {
		types = append(types, e.Type)
	}
	if want := []trail.EventType{trail.EventUserCreated, trail.EventCapabilityGranted, trail.EventCapabilityGranted}; !reflect.DeepEqual(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
	for _, id := range []string{"", "system", "protocol", "fallback", string(make([]byte, 129)), "\xff"} {
		if _, _, err := New(id, "system", ts); !errors.Is(err, ErrInvalidID) {
			t.Errorf("New(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	if _, _, err := New("bob", "system", ts, "root"); !errors.Is(err, ErrUnknownCapability) {
		t.Errorf("New with capability root = %v", err)
	}
}

func TestTransitionsAreTheSpecs(t *testing.T) {
	// §3.4, edge by edge, with the event each writes.
	want := map[[2]State]trail.EventType{
		{Active, Suspended}:      trail.EventUserSuspended,
		{Active, Blocked}:        trail.EventUserBlocked,
		{Active, Deactivated}:    trail.EventUserDeactivated,
		{Suspended, Active}:      trail.EventUserResumed,
		{Suspended, Blocked}:     trail.EventUserBlocked,
		{Suspended, Deactivated}: trail.EventUserDeactivated,
		{Blocked, Active}:        trail.EventUserUnblocked,
		{Blocked, Suspended}:     trail.EventUserSuspended,
		{Blocked, Deactivated}:   trail.EventUserDeactivated,
		{Deactivated, Active}:    trail.EventUserReactivated,
	}
	for _, from := range States() {
		for _, to := range States() {
			u := mustNew(t, "alice", AbortAny)
			u.State = from
			got, ev, err := Move(u, to, "why", "mfa_required", "admin", "ts2")
			typ, ok := want[[2]State{from, to}]
			if !ok {
				if !errors.Is(err, ErrInvalidTransition) || got.State != from {
					t.Errorf("Move(%s → %s) = %s, %v, want ErrInvalidTransition", from, to, got.State, err)
				}
				continue
			}
			if err != nil || got.State != to || ev.Type != typ {
				t.Errorf("Move(%s → %s) = %s, %s, %v, want %s", from, to, got.State, ev.Type, err, typ)
				continue
			}
			checkEvents(t, ev)
			if !reflect.DeepEqual(got.Capabilities, []Capability{AbortAny}) {
				t.Errorf("Move(%s → %s) changed the capabilities: %v", from, to, got.Capabilities)
			}
			if typ == trail.EventUserDeactivated && ev.Body["prior_state"] != string(from) {
				t.Errorf("user_deactivated prior_state = %v, want %s", ev.Body["prior_state"], from)
			}
		}
	}
	u := mustNew(t, "alice")
	u, ev, _ := Move(u, Blocked, "", "credential_expired", "system", "ts")
	if u.Condition != "credential_expired" || ev.Body["blocking_condition"] != "credential_expired" {
		t.Errorf("blocked: %+v %v", u, ev.Body)
	}
	u, ev, _ = Move(u, Active, "", "", "system", "ts")
	if u.Condition != "" || ev.Body["resolved_condition"] != "credential_expired" {
		t.Errorf("unblocked: %+v %v", u, ev.Body)
	}
}

func TestGrantRevoke(t *testing.T) {
	u := mustNew(t, "alice")
	u2, events, err := Grant(u, SuspendAny, "admin", "ts")
	checkEvents(t, events...)
	if err != nil || !u2.Has(SuspendAny) || u.Has(SuspendAny) || len(events) != 1 {
		t.Errorf("Grant = %+v, %v, %v (and the argument kept)", u2, events, err)
	}
	if _, events, _ := Grant(u2, SuspendAny, "admin", "ts"); events != nil {
		t.Error("granting a held capability wrote an event")
	}
	if _, events, _ := Grant(u2, ViewTrailOwn, "admin", "ts"); events != nil {
		t.Error("granting view_trail_own wrote an event: it is implicit")
	}
	u3, events, err := Revoke(u2, SuspendAny, "admin", "", "ts")
	checkEvents(t, events...)
	if err != nil || u3.Has(SuspendAny) || len(events) != 1 || events[0].Body["reason"] != nil {
		t.Errorf("Revoke = %+v, %v, %v", u3, events, err)
	}
	if _, _, err := Revoke(u3, ViewTrailOwn, "admin", "", "ts"); !errors.Is(err, ErrUnknownCapability) {
		t.Errorf("Revoke(view_trail_own) = %v", err)
	}
	if len(Capabilities()) != 17 {
		t.Errorf("%d capabilities, want 17", len(Capabilities()))
	}
}

func TestAuthorize(t *testing.T) {
	own := Target{ID: "ws-1", Owner: "alice"}
	other := Target{ID: "ws-2", Owner: "bob"}
	tests := []struct {
		name   string
		caps   []Capability
		state  State
		action string
		target Target
		allow  bool
		cap    Capability
		reason string
	}{
		{"own on own", []Capability{SuspendOwn}, Active, "workspace.suspend", own, true, SuspendOwn, ""},
		{"own on other's", []Capability{SuspendOwn}, Active, "workspace.suspend", other, false, SuspendOwn, WrongScope},
		{"any on other's", []Capability{SuspendAny}, Active, "workspace.suspend", other, true, SuspendAny, ""},
		{"none", nil, Active, "workspace.abort", own, false, AbortOwn, MissingCapability},
		{"suspended user", []Capability{AbortAny}, Suspended, "workspace.abort", own, false, AbortOwn, NotActive},
		{"blocked user", []Capability{AbortAny}, Blocked, "workspace.abort", own, false, AbortOwn, NotActive},
		{"deactivated user", []Capability{AbortAny}, Deactivated, "workspace.abort", own, false, AbortOwn, NotActive},
		{"implicit view_trail_own", nil, Active, "trail.read", own, true, ViewTrailOwn, ""},
		{"view_trail_own on other's", nil, Active, "trail.read", other, false, ViewTrailOwn, WrongScope},
		{"view_trail_own not active", nil, Suspended, "trail.read", own, false, ViewTrailOwn, NotActive},
		{"any-only without it", []Capability{AbortAny}, Active, "workspace.transfer", own, false, TransferOwnership, MissingCapability},
		{"any-only with it", []Capability{TransferOwnership}, Active, "workspace.transfer", other, true, TransferOwnership, ""},
		{"own-only", []Capability{GrantDelegation}, Active, "workspace.delegate", own, true, GrantDelegation, ""},
		{"own without a target", []Capability{AbortOwn}, Active, "workspace.abort", Target{}, false, AbortOwn, WrongScope},
		{"unknown action", []Capability{AbortAny}, Active, "workspace.explode", own, false, "", MissingCapability},
		{"integration gate", []Capability{ApproveIntegration}, Active, "gate.integration", own, true, ApproveIntegration, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := mustNew(t, "alice", tt.caps...)
			u.State = tt.state
			d := Authorize(u, tt.action, tt.target, ts)
			if d.Allowed != tt.allow || d.Capability != tt.cap || d.Reason != tt.reason {
				t.Errorf("Authorize = %+v, want allowed %v, %s, %q", d, tt.allow, tt.cap, tt.reason)
			}
			if tt.allow {
				if d.Event.Type != "" {
					t.Errorf("an allowed action has an event: %v", d.Event)
				}
				return
			}
			checkEvents(t, d.Event)
			if b := d.Event.Body; d.Event.Type != trail.EventCapabilityDenied || b["user_id"] != "alice" || b["reason"] != tt.reason || b["action"] != tt.action {
				t.Errorf("capability_denied = %v", b)
			}
		})
	}
}

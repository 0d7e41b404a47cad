package user

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/wacpd/wacpd/trail"
)

// State is a user's state (User spec §3.1). Persisted as its string value.
type State string

// The four states.
const (
	Active      State = "active"
	Suspended   State = "suspended"
	Blocked     State = "blocked"
	Deactivated State = "deactivated"
)

// States returns the four states in spec order.
func States() []State { return []State{Active, Suspended, Blocked, Deactivated} }

// Valid reports whether s is one of the four states.
func (s State) Valid() bool { return slices.Contains(States(), s) }

// User is a user record.
type User struct {
	ID    string `json:"id"`
	State State  `json:"state"`
	// Capabilities are the granted ones, sorted; view_trail_own is
	// implicit and never listed.
	Capabilities []Capability `json:"capabilities"`
	// Condition is what blocks a blocked user.
	Condition string `json:"blocking_condition,omitempty"`
	CreatedBy string `json:"created_by"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// Event is a trail entry a change writes.
type Event struct {
	Type trail.EventType
	Body map[string]any
}

// MaxIDBytes bounds a user id (as the wire contract's user names).
const MaxIDBytes = 128

// CheckID reports whether id can be a user id: 1 to MaxIDBytes bytes of
// UTF-8, and not "system", "fallback" or "protocol", which the trail uses
// as actors that are no person.
func CheckID(id string) error {
	switch {
	case id == "" || len(id) > MaxIDBytes || !utf8.ValidString(id):
		return fmt.Errorf("%w: %q: 1 to %d bytes of UTF-8", ErrInvalidID, id, MaxIDBytes)
	case id == trail.ActorSystem || id == trail.ActorProtocol || id == "fallback":
		return fmt.Errorf("%w: %q is the trail's actor for no person", ErrInvalidID, id)
	}
	return nil
}

// New returns the record of a user accepted for the first time, active
// (§3.2), with the given capabilities, and its user_created event with a
// capability_granted event for each capability. by is the creating actor:
// a user id or "system".
func New(id, by, ts string, caps ...Capability) (User, []Event, error) {
	if err := CheckID(id); err != nil {
		return User{}, nil, err
	}
	u := User{ID: id, State: Active, Capabilities: []Capability{}, CreatedBy: by, CreatedAt: ts, UpdatedAt: ts}
	events := []Event{{trail.EventUserCreated, map[string]any{"user_id": id, "created_by": by, "timestamp": ts}}}
	for _, c := range caps {
		var ev []Event
		var err error
		if u, ev, err = Grant(u, c, by, ts); err != nil {
			return User{}, nil, err
		}
		events = append(events, ev...)
	}
	return u, events, nil
}

// TransitionError is returned for a state change the spec does not have.
type TransitionError struct {
	User     string
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("user: %s is %s: no transition to %s", e.User, e.From, e.To)
}

// Unwrap returns ErrInvalidTransition.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// edges are the spec's ten transitions (§3.4).
var edges = map[[2]State]bool{
	{Active, Suspended}: true, {Active, Blocked}: true, {Active, Deactivated}: true,
	{Suspended, Active}: true, {Suspended, Blocked}: true, {Suspended, Deactivated}: true,
	{Blocked, Active}: true, {Blocked, Suspended}: true, {Blocked, Deactivated}: true,
	{Deactivated, Active}: true,
}

// Can reports whether the spec has a transition from from to to.
func Can(from, to State) bool { return edges[[2]State{from, to}] }

// Move changes u's state to to at ts, by actor by ("system" or a user id),
// and returns the new record with the event of the transition (§3.4):
// user_suspended, user_blocked (detail is the blocking condition),
// user_deactivated (with the prior state), user_resumed (from suspended),
// user_unblocked (from blocked; detail is the condition resolved, the
// stored one when empty) or user_reactivated (from deactivated). reason
// is recorded where the event has one.
func Move(u User, to State, reason, detail, by, ts string) (User, Event, error) {
	if !Can(u.State, to) {
		return u, Event{}, &TransitionError{User: u.ID, From: u.State, To: to}
	}
	from := u.State
	var ev Event
	switch {
	case to == Suspended:
		ev = Event{trail.EventUserSuspended, map[string]any{"user_id": u.ID, "reason": reason, "suspended_by": by, "timestamp": ts}}
	case to == Blocked:
		ev = Event{trail.EventUserBlocked, map[string]any{"user_id": u.ID, "blocking_condition": detail, "blocked_by": by, "timestamp": ts}}
	case to == Deactivated:
		ev = Event{trail.EventUserDeactivated, map[string]any{"user_id": u.ID, "reason": reason, "deactivated_by": by, "prior_state": string(from), "timestamp": ts}}
	case from == Suspended:
		ev = Event{trail.EventUserResumed, map[string]any{"user_id": u.ID, "reason": reason, "resumed_by": by, "timestamp": ts}}
	case from == Blocked:
		if detail == "" {
			detail = u.Condition
		}
		ev = Event{trail.EventUserUnblocked, map[string]any{"user_id": u.ID, "resolved_condition": detail, "timestamp": ts}}
	default: // deactivated → active
		ev = Event{trail.EventUserReactivated, map[string]any{"user_id": u.ID, "reason": reason, "reactivated_by": by, "timestamp": ts}}
	}
	u.State, u.UpdatedAt, u.Condition = to, ts, ""
	if to == Blocked {
		u.Condition = detail
	}
	u.Capabilities = slices.Clone(u.Capabilities)
	return u, ev, nil
}

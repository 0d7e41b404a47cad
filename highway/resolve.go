package highway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/trail"
)

// ResolveRequest is the body of highway.resolve: a person's answer to a
// gate.
type ResolveRequest struct {
	GateID        string          `json:"gate_id"`
	Action        Action          `json:"action"`
	Modifications json.RawMessage `json:"modifications,omitempty"`
	// Outcome is a control-plane checkpoint's outcome (issue 16): with
	// approve "continue" (the default) or "per_step", with reject "deny"
	// (the default) or "halt"; a gate of any other subject takes none.
	Outcome string `json:"outcome,omitempty"`
	// Confirm is the second confirmation an approval of an irreversible
	// checkpoint needs: a single approve is not enough.
	Confirm bool `json:"confirm,omitempty"`
}

// DecodeResolveRequest decodes and checks the shape of a resolve request:
// an action of approve, reject or modify, modifications (a non-empty JSON
// object) with modify and only with it. Errors wrap ErrInvalidResolution.
// Which fields may be modified depends on the gate (Resolve).
func DecodeResolveRequest(data []byte) (ResolveRequest, error) {
	if !utf8.Valid(data) {
		return ResolveRequest{}, fmt.Errorf("%w: request is not valid UTF-8", ErrInvalidResolution)
	}
	var r ResolveRequest
	if err := strictjson.Decode(data, &r); err != nil {
		return ResolveRequest{}, fmt.Errorf("%w: %v", ErrInvalidResolution, err)
	}
	if r.GateID == "" {
		return ResolveRequest{}, fmt.Errorf("%w: gate_id is required", ErrInvalidResolution)
	}
	if r.Action == Deny && r.Outcome != "" {
		return ResolveRequest{}, fmt.Errorf("%w: deny takes no outcome: with no operator present a checkpoint is denied, never halted", ErrInvalidResolution)
	}
	if _, err := r.modifications(); err != nil {
		return ResolveRequest{}, err
	}
	return r, nil
}

// modifications checks the action and returns the modified fields.
func (r ResolveRequest) modifications() (map[string]json.RawMessage, error) {
	switch r.Action {
	case Approve, Reject, Deny:
		if len(r.Modifications) > 0 && !bytes.Equal(bytes.TrimSpace(r.Modifications), []byte("null")) {
			return nil, fmt.Errorf("%w: modifications come only with modify", ErrInvalidResolution)
		}
		return nil, nil
	case Modify:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r.Modifications, &m); err != nil || len(m) == 0 {
			return nil, fmt.Errorf("%w: modify needs modifications, a JSON object of the fields changed", ErrInvalidResolution)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: action %q is not approve, reject, modify or deny", ErrInvalidResolution, r.Action)
}

// Resolve records user's answer r to pending gate g at ts and returns the
// resolved gate with its gate_resolved event. A modify may change only the
// fields g's type lets a person change (GateType.Mutable); the caller
// applies the modifications to the subject, and checks their values, in
// the same step. The caller checks that user may resolve g (capabilities).
func Resolve(g Gate, r ResolveRequest, user, ts string) (Gate, Event, error) {
	if !g.Pending() {
		return g, Event{}, fmt.Errorf("%w: %s was resolved by %s", ErrResolved, g.ID, g.Resolution.Actor)
	}
	if user == "" || user == ActorFallback || user == ActorProtocol {
		return g, Event{}, fmt.Errorf("%w: a person's resolution needs the person's user id", ErrInvalidResolution)
	}
	m, err := r.modifications()
	if err != nil {
		return g, Event{}, err
	}
	for _, f := range sortedKeys(m) {
		if !slices.Contains(g.Type.Mutable(), f) {
			return g, Event{}, fmt.Errorf("%w: %s gates let a person change %v, not %q", ErrInvalidResolution, g.Type, g.Type.Mutable(), f)
		}
	}
	res := Resolution{Action: r.Action, Actor: user, Timestamp: ts, Outcome: r.Outcome}
	if r.Action == Deny {
		// No person decides: the gate is denied by the protocol on the
		// user's behalf.
		res = Resolution{Action: Reject, Actor: ActorProtocol, Timestamp: ts, Reason: ReasonNoOperator, RequestedBy: user}
	}
	if r.Action == Modify {
		res.Modifications = r.Modifications
	}
	return resolved(g, res)
}

// Expire falls gate g back if its deadline has passed at now: the
// fallback's resolution, actor "fallback", with gate_timeout (the time
// elapsed since the trigger) and gate_resolved. ok is false, and nothing
// changes, for a gate that is resolved, waits indefinitely or has time
// left.
func Expire(g Gate, now time.Time, ts string) (out Gate, events []Event, ok bool) {
	deadline, has := g.DeadlineTime()
	if !g.Pending() || !has || now.Before(deadline) {
		return g, nil, false
	}
	fb := *g.Fallback
	action := Action(fb) // approve, reject, escalate_to_coordinator
	elapsed := "unknown"
	if at, err := clock.Parse(g.Timestamp); err == nil {
		elapsed = now.Sub(at).String()
	}
	g, ev, err := resolved(g, Resolution{Action: action, Actor: ActorFallback, Timestamp: ts})
	if err != nil {
		return g, nil, false
	}
	return g, []Event{{trail.EventGateTimeout, map[string]any{
		"gate_id": g.ID, "gate_type": string(g.Type), "fallback_action": string(fb), "elapsed": elapsed}}, ev}, true
}

// Invalidate resolves pending gate g because its subject became invalid
// (§6.5): reject, actor "protocol", reason subject_invalidated.
func Invalidate(g Gate, ts string) (Gate, Event, error) {
	if !g.Pending() {
		return g, Event{}, fmt.Errorf("%w: %s", ErrResolved, g.ID)
	}
	return resolved(g, Resolution{Action: Reject, Actor: ActorProtocol, Timestamp: ts, Reason: ReasonSubjectInvalidated})
}

// resolved sets g's resolution and returns its gate_resolved event.
func resolved(g Gate, r Resolution) (Gate, Event, error) {
	g.Resolution = &r
	var mods any
	if len(r.Modifications) > 0 {
		var m map[string]any
		if err := json.Unmarshal(r.Modifications, &m); err != nil {
			return g, Event{}, fmt.Errorf("%w: modifications: %v", ErrInvalidResolution, err)
		}
		mods = m
	}
	body := map[string]any{"gate_id": g.ID, "gate_type": string(g.Type), "action": string(r.Action),
		"modifications": mods, "actor": r.Actor}
	if r.Reason != "" {
		body["reason"] = r.Reason
	}
	if r.RequestedBy != "" {
		body["requested_by"] = r.RequestedBy
	}
	return g, Event{trail.EventGateResolved, body}, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Guard is the re-entry guard (§6.1): the (gate type, subject) pairs a
// fallback resolved, with that fallback. The engine rebuilds it from the
// stored gates.
type Guard map[GuardKey]Fallback

// GuardKey names a gate's subject for the guard.
type GuardKey struct {
	Type    GateType
	Subject string
}

// Note records resolved gate g in the guard when its fallback resolved it.
func (gd Guard) Note(g Gate) {
	if g.Resolution != nil && g.Resolution.Actor == ActorFallback && g.Fallback != nil {
		gd[GuardKey{g.Type, g.SubjectID}] = *g.Fallback
	}
}

// ReentryError is returned by Check for a gate triggered again for a
// subject a fallback resolved.
type ReentryError struct {
	Type     GateType
	Subject  string
	Fallback Fallback
}

func (e *ReentryError) Error() string {
	return fmt.Sprintf("highway: the %s gate of %s fell back to %s: it cannot be triggered again", e.Type, e.Subject, e.Fallback)
}

// Unwrap returns ErrReentry.
func (e *ReentryError) Unwrap() error { return ErrReentry }

// Check is the guard for a new gate of type t for subject: nil when no
// fallback resolved one; otherwise, after a fallback to the coordinator,
// the conversion to approve (convert true) with its gate_reentry_blocked
// event (gateID names the blocked trigger); after approve or reject, a
// *ReentryError (the transition already went on or was cancelled).
func (gd Guard) Check(t GateType, subject, gateID string) (convert bool, ev Event, err error) {
	fb, ok := gd[GuardKey{t, subject}]
	switch {
	case !ok:
		return false, Event{}, nil
	case fb == FallbackCoordinator:
		return true, Event{trail.EventGateReentryBlocked, map[string]any{
			"gate_id": gateID, "gate_type": string(t), "subject_id": subject, "converted_to": string(Approve)}}, nil
	}
	return false, Event{}, &ReentryError{Type: t, Subject: subject, Fallback: fb}
}

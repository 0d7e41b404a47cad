package highway

import (
	"fmt"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
)

// Escalations (Human Highway §2.4). An agent's escalation signal goes up
// the tree as every signal does and, in addition, to the workspace's
// owner: an Escalation record, delivered, queued or rejected by the
// owner's state, resolved once by the owner's response, its timeout's
// fallback, or the protocol.

// Delivery is how an escalation reached its owner. Persisted as its string
// value.
type Delivery string

// The three deliveries (§2.4, the user-state table).
const (
	Delivered Delivery = "delivered" // the owner is active
	Queued    Delivery = "queued"    // the owner is suspended or blocked: it waits, its timeout runs
	Rejected  Delivery = "rejected"  // the owner is deactivated (or has no record): the coordinator handles it
)

// Response is how an escalation ended. Persisted as its string value.
type Response string

// The three responses of a person (§2.4), and those of a fallback or the
// protocol.
const (
	RespondEnvelope   Response = "envelope"   // feedback or a directive to the blocked workspace
	RespondAbort      Response = "abort"      // the workspace fails, aborted_by_human
	RespondDelegation Response = "delegation" // the coordinator handles it
	// A fallback's responses: approve lets the agent go on as it is
	// (the escalation is closed with no action), reject fails the
	// workspace (escalation_rejected), delegate_to_coordinator is a
	// delegation.
	RespondApprove Response = "approve"
	RespondReject  Response = "reject"
	// RespondWithdrawn: the workspace ended before anyone answered.
	RespondWithdrawn Response = "withdrawn"
)

// ReasonEscalationRejected is the failure reason of a workspace whose
// escalation fell back to reject.
const ReasonEscalationRejected = "escalation_rejected"

// EscalationRecord is an escalation, as the runtime keeps it.
type EscalationRecord struct {
	ID        string              `json:"id"` // the escalation signal's id
	Workspace string              `json:"workspace"`
	Reason    string              `json:"reason"`
	Owner     string              `json:"owner"` // the user it is routed to
	Delivery  Delivery            `json:"delivery"`
	Timestamp string              `json:"timestamp"`
	Timeout   *string             `json:"timeout"`  // null waits indefinitely
	Fallback  *EscalationFallback `json:"fallback"` // null without a timeout
	Deadline  *string             `json:"deadline"`
	// Resolution is null while it is pending.
	Resolution *EscalationResolution `json:"resolution"`
}

// EscalationResolution is how an escalation ended.
type EscalationResolution struct {
	Response  Response `json:"response_type"`
	Ref       string   `json:"response_ref,omitempty"` // the envelope of an envelope response
	Actor     string   `json:"actor"`                  // a user id, "fallback" or "protocol"
	Timestamp string   `json:"timestamp"`
}

// Pending reports whether x has no resolution yet.
func (x EscalationRecord) Pending() bool { return x.Resolution == nil }

// DeadlineTime returns x's deadline, and false when it waits indefinitely.
func (x EscalationRecord) DeadlineTime() (time.Time, bool) {
	if x.Deadline == nil {
		return time.Time{}, false
	}
	t, err := clock.Parse(*x.Deadline)
	return t, err == nil
}

// Route returns the escalation of signal id from workspace ws (reason
// why) to its owner, whose record is owner (ok false: none), at at (ts),
// under cfg: delivered to an active owner, queued for a suspended or
// blocked one (its timeout runs), rejected for a deactivated owner or none
// (resolved at once as a delegation by the protocol, with
// capability_denied: the capability named is inject_directive, which a
// response needs). events are
// escalation_received and, when rejected, the denial and
// escalation_resolved.
func Route(cfg Config, id, ws, why string, owner user.User, ok bool, ownerID string, at time.Time, ts string) (EscalationRecord, []Event) {
	x := EscalationRecord{ID: id, Workspace: ws, Reason: why, Owner: ownerID, Timestamp: ts}
	switch {
	case !ok || owner.State == user.Deactivated:
		x.Delivery = Rejected
	case owner.State == user.Active:
		x.Delivery = Delivered
	default:
		x.Delivery = Queued
	}
	if p := cfg.Escalation; p.Timeout != nil {
		d, f := p.Timeout.String(), p.Fallback
		deadline := clock.Format(at.Add(*p.Timeout))
		x.Timeout, x.Fallback, x.Deadline = &d, &f, &deadline
	}
	events := []Event{{trail.EventEscalationReceived, map[string]any{
		"signal_id": id, "workspace": ws, "reason": why, "routed_to": ownerID, "delivery": string(x.Delivery)}}}
	if x.Delivery == Rejected {
		reason := user.NotActive
		if !ok {
			reason = "no_user_record"
		}
		var rejected []Event
		x, rejected = rejectEscalation(x, reason, ts)
		events = append(events, rejected...)
	}
	return x, events
}

// Respond records user's response to pending escalation x at ts (ref: the
// envelope of an envelope response).
func Respond(x EscalationRecord, r Response, ref, userID, ts string) (EscalationRecord, Event, error) {
	switch {
	case !x.Pending():
		return x, Event{}, fmt.Errorf("%w: escalation %s was resolved by %s", ErrResolved, x.ID, x.Resolution.Actor)
	case r != RespondEnvelope && r != RespondAbort && r != RespondDelegation:
		return x, Event{}, fmt.Errorf("%w: response %q is not envelope, abort or delegation", ErrInvalidResolution, r)
	case userID == "" || userID == ActorFallback || userID == ActorProtocol:
		return x, Event{}, fmt.Errorf("%w: a person's response needs the person's user id", ErrInvalidResolution)
	}
	x, ev := resolveEscalation(x, EscalationResolution{Response: r, Ref: ref, Actor: userID, Timestamp: ts})
	return x, ev, nil
}

// ExpireEscalation falls x back when its deadline has passed at now:
// escalation_timeout and escalation_resolved (actor fallback).
func ExpireEscalation(x EscalationRecord, now time.Time, ts string) (EscalationRecord, []Event, bool) {
	d, has := x.DeadlineTime()
	if !x.Pending() || !has || now.Before(d) {
		return x, nil, false
	}
	fb := *x.Fallback
	r := map[EscalationFallback]Response{EscalationApprove: RespondApprove, EscalationReject: RespondReject,
		EscalationCoordinator: RespondDelegation}[fb]
	elapsed := "unknown"
	if at, err := clock.Parse(x.Timestamp); err == nil {
		elapsed = now.Sub(at).String()
	}
	x, ev := resolveEscalation(x, EscalationResolution{Response: r, Actor: ActorFallback, Timestamp: ts})
	return x, []Event{{trail.EventEscalationTimeout, map[string]any{
		"signal_id": x.ID, "workspace": x.Workspace, "fallback_action": string(fb), "elapsed": elapsed}}, ev}, true
}

// Withdraw resolves pending x by the protocol: its workspace ended.
func Withdraw(x EscalationRecord, ts string) (EscalationRecord, Event) {
	return resolveEscalation(x, EscalationResolution{Response: RespondWithdrawn, Actor: ActorProtocol, Timestamp: ts})
}

func resolveEscalation(x EscalationRecord, r EscalationResolution) (EscalationRecord, Event) {
	x.Resolution = &r
	var ref any
	if r.Ref != "" {
		ref = r.Ref
	}
	return x, Event{trail.EventEscalationResolved, map[string]any{
		"signal_id": x.ID, "workspace": x.Workspace, "actor": r.Actor, "response_type": string(r.Response),
		"response_ref": ref}}
}

// RejectForOwner resolves pending x, whose owner was deactivated, as
// Route does for an escalation to a deactivated owner: capability_denied
// and a delegation to the coordinator by the protocol.
func RejectForOwner(x EscalationRecord, ts string) (EscalationRecord, []Event) {
	return rejectEscalation(x, user.NotActive, ts)
}

// rejectEscalation rejects x at its owner (why: the capability_denied
// reason) and resolves it as a delegation to the coordinator by the
// protocol: capability_denied and escalation_resolved.
func rejectEscalation(x EscalationRecord, why, ts string) (EscalationRecord, []Event) {
	x.Delivery = Rejected
	deny := Event{trail.EventCapabilityDenied, map[string]any{
		"user_id": x.Owner, "capability": string(user.InjectDirective), "action": "escalation.receive",
		"reason": why, "target": x.Workspace, "timestamp": ts}}
	x, ev := resolveEscalation(x, EscalationResolution{Response: RespondDelegation, Actor: ActorProtocol, Timestamp: ts})
	return x, []Event{deny, ev}
}

// Redeliver returns queued escalation x as delivered (its owner became
// active again); false when x is not queued and pending.
func Redeliver(x EscalationRecord) (EscalationRecord, bool) {
	if !x.Pending() || x.Delivery != Queued {
		return x, false
	}
	x.Delivery = Delivered
	return x, true
}

package runtime

import (
	"testing"
	"time"

	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// escalate makes a new active worker block and escalate, and returns it
// with its escalation.
func escalate(t *testing.T, e *Engine) (*workspace.Workspace, highway.EscalationRecord) {
	t.Helper()
	w := newWorker(t, e)
	emitOK(t, e, w.ID, `{"type":"blocked","reason":"the directive is ambiguous"}`)
	emitOK(t, e, w.ID, `{"type":"escalation","reason":"which parser?"}`)
	for _, x := range e.Escalations(ctx, true) {
		if x.Workspace == w.ID {
			return w, x
		}
	}
	t.Fatalf("no escalation for %s", w.ID)
	return nil, highway.EscalationRecord{}
}

func respond(e *Engine, userID, id, response string, env map[string]any) (highway.EscalationRecord, error) {
	body := map[string]any{"escalation_id": id, "response": response}
	if env != nil {
		body["envelope"] = env
	}
	return e.RespondEscalation(ctx, userID, mustJSON(body))
}

// TestHighway_Escalation: Human Highway §2.4 (S-3, S-4, S-5, S-9, S-10).
func TestHighway_Escalation(t *testing.T) {
	clk := newFakeClock()
	e := openVerified(t, withFakeClock(clk))
	mkUser(t, e, "operator", user.InjectDirective, user.AbortOwn)
	mkUser(t, e, "stranger", user.InjectDirective)

	// Routed to the owner, delivered: the owner is active.
	w, x := escalate(t, e)
	if x.Owner != w.Owner || x.Delivery != highway.Delivered || !x.Pending() || x.Reason != "which parser?" {
		t.Fatalf("escalation = %+v (workspace owner %q)", x, w.Owner)
	}
	if len(trailWhere(t, e, trail.EventEscalationReceived, map[string]string{"signal_id": x.ID, "workspace": w.ID})) != 1 ||
		len(trailWhere(t, e, trail.EventSignalDelivered, map[string]string{"signal_id": x.ID})) != 1 {
		t.Error("an escalation goes both up the tree and to the highway (S-3)")
	}
	// Someone else's workspace: wrong scope.
	_, err := respond(e, "stranger", x.ID, "delegation", nil)
	wantCode(t, "respond to another's escalation", err, wire.CodeCapabilityDenied)
	// An envelope response.
	out, err := respond(e, "operator", x.ID, "envelope", map[string]any{"payload": map[string]any{"content": "use the LR parser"}})
	if err != nil || out.Resolution.Response != highway.RespondEnvelope || out.Resolution.Ref == "" {
		t.Fatalf("envelope response = %+v, %v", out, err)
	}
	env, err := e.NextEnvelope(ctx, w.ID, 0) // the directive that started it
	if err == nil && env != nil && env.ID != out.Resolution.Ref {
		env, err = e.NextEnvelope(ctx, w.ID, 0)
	}
	if err != nil || env == nil || env.ID != out.Resolution.Ref || env.Origin != "human" || env.Originator != "operator" ||
		env.Priority != "normal" || env.Payload.Format != "markdown" || env.Payload.Attachments == nil {
		t.Fatalf("the blocked workspace's inbox = %+v, %v", env, err)
	}
	if len(trailWhere(t, e, trail.EventEscalationResolved, map[string]string{"signal_id": x.ID, "actor": "operator", "response_type": "envelope", "response_ref": env.ID})) != 1 {
		t.Error("no escalation_resolved for the envelope response")
	}
	if _, err := respond(e, "operator", x.ID, "delegation", nil); Code(err) != wire.CodeInvalidTransition {
		t.Errorf("a second response = %v, want invalid_transition", err)
	}

	// An abort: the workspace fails, aborted_by_human.
	w2, x2 := escalate(t, e)
	if _, err := respond(e, "operator", x2.ID, "abort", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.GetWorkspace(ctx, e.Root(), w2.ID); got.State != workspace.Failed || got.Reason != "aborted_by_human" {
		t.Errorf("after an abort response: %s %q", got.State, got.Reason)
	}

	// A delegation: the coordinator handles it; the workspace stays blocked.
	w3, x3 := escalate(t, e)
	if _, err := respond(e, "operator", x3.ID, "delegation", nil); err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, e, w3.ID); got != workspace.Blocked {
		t.Errorf("after a delegation: %s, want blocked", got)
	}

	// The timeout's fallback (default: 15 minutes, reject).
	w4, x4 := escalate(t, e)
	if n, err := e.ExpireEscalations(ctx, clk.Now().Add(14*time.Minute)); err != nil || n != 0 {
		t.Fatalf("ExpireEscalations before the deadline = %d, %v", n, err)
	}
	if n, err := e.ExpireEscalations(ctx, clk.Now().Add(16*time.Minute)); err != nil || n != 1 {
		t.Fatalf("ExpireEscalations after the deadline = %d, %v", n, err)
	}
	if got, _ := e.GetWorkspace(ctx, e.Root(), w4.ID); got.State != workspace.Failed || got.Reason != highway.ReasonEscalationRejected {
		t.Errorf("after the reject fallback: %s %q", got.State, got.Reason)
	}
	if len(trailWhere(t, e, trail.EventEscalationTimeout, map[string]string{"signal_id": x4.ID, "fallback_action": "reject"})) != 1 {
		t.Error("no escalation_timeout")
	}

	// The workspace ends first: withdrawn by the protocol.
	w5, x5 := escalate(t, e)
	if _, err := e.Abort(ctx, e.Root(), w5.ID, ""); err != nil {
		t.Fatal(err)
	}
	for _, x := range e.Escalations(ctx, true) {
		if x.ID == x5.ID && (x.Pending() || x.Resolution.Actor != highway.ActorProtocol) {
			t.Errorf("the escalation of an aborted workspace = %+v", x.Resolution)
		}
	}

	// A deactivated owner: rejected, capability_denied, delegated.
	if err := e.RevokeUser(ctx, e.Root(), principal.Principal{Kind: principal.KindUser, Name: "operator"}, "left", 0, func(Grants) error { return nil }); err != nil {
		t.Fatal(err)
	}
	_, x6 := escalate(t, e)
	if x6.Delivery != highway.Rejected || x6.Pending() || x6.Resolution.Response != highway.RespondDelegation {
		t.Errorf("escalation to a deactivated owner = %+v", x6)
	}
	if len(trailWhere(t, e, trail.EventCapabilityDenied, map[string]string{"user_id": "operator", "action": "escalation.receive", "reason": user.NotActive})) != 1 {
		t.Error("no capability_denied for the escalation to a deactivated owner")
	}
}

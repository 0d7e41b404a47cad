package runtime

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/runtime/delivery"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Escalations (Human Highway §2.4; the rules are package highway's). An
// agent's escalation signal, besides going up the tree, is routed in the
// same commit to the workspace's owner (routeEscalation); the owner
// answers with an envelope, an abort or a delegation (RespondEscalation),
// or the timeout's fallback does (the gate timer), or the protocol
// withdraws it when the workspace ends.

// routeEscalation routes escalation signal id of workspace c (reason why)
// to c's owner, when the run's highway has escalation on.
func (t *tx) routeEscalation(c *workspace.Workspace, id, why string) error {
	cfg := *t.e.cfg.Highway
	if !cfg.Escalation.Enabled {
		return nil
	}
	at := t.next()
	owner, ok := t.user(c.Owner)
	x, events := highway.Route(cfg, id, c.ID, why, owner, ok, c.Owner, at, clock.Format(at))
	if err := t.putEscalation(x); err != nil {
		return err
	}
	for _, ev := range events {
		ws := c.ID
		if ev.Type != "escalation_received" {
			ws = "" // the denial and the protocol's delegation: system-level
		}
		if _, err := t.append(ws, actorOfEvent(ev), ev.Type, ev.Body); err != nil {
			return err
		}
	}
	return nil
}

func actorOfEvent(ev highway.Event) string {
	if a, ok := ev.Body["actor"].(string); ok {
		return a
	}
	return highway.ActorProtocol
}

// RespondEscalation records user userID's response to an escalation: an
// envelope to the blocked workspace (from the root, origin human,
// originator the user; the user needs inject_directive), an abort (the
// workspace fails with aborted_by_human; abort_own), or a delegation to
// the coordinator (inject_directive). The user must be active; a denial is
// recorded (capability_denied).
func (e *Engine) RespondEscalation(ctx context.Context, userID string, body []byte) (highway.EscalationRecord, error) {
	var req wire.EscalationRespondRequest
	if err := Decode(body, &req); err != nil {
		return highway.EscalationRecord{}, err
	}
	switch {
	case req.EscalationID == "":
		return highway.EscalationRecord{}, Refuse(wire.CodeInvalidStructure, "escalation_id is required")
	case req.Response != highway.RespondEnvelope && req.Response != highway.RespondAbort && req.Response != highway.RespondDelegation:
		return highway.EscalationRecord{}, Refuse(wire.CodeInvalidStructure, "response %q is not envelope, abort or delegation", req.Response)
	case (req.Response == highway.RespondEnvelope) != (req.Envelope != nil):
		return highway.EscalationRecord{}, Refuse(wire.CodeInvalidStructure, "an envelope response, and only it, carries envelope")
	}
	if req.Envelope != nil && req.Envelope.Type == "" {
		req.Envelope.Type = "feedback"
	}
	return runAs(ctx, e, len(body), func() (highway.EscalationRecord, error) {
		var out highway.EscalationRecord
		err := e.userCommit(func(t *tx) error {
			x, ok := t.escalation(req.EscalationID)
			if !ok {
				return Refuse(wire.CodeNotFound, "escalation %s does not exist", req.EscalationID)
			}
			if !x.Pending() {
				return Refuse(wire.CodeInvalidTransition, "escalation %s was resolved by %s", x.ID, x.Resolution.Actor)
			}
			c := t.ws(x.Workspace)
			action := "escalation.respond"
			if req.Response == highway.RespondAbort {
				action = "escalation.respond.abort"
			}
			ts := t.next()
			if err := t.authorizeUser(userID, action, user.Target{ID: c.ID, Owner: c.Owner}, clock.Format(ts)); err != nil {
				return err // a denial is recorded: userCommit commits it
			}
			ref := ""
			switch req.Response {
			case highway.RespondEnvelope:
				ereq, err := envelope.Normalize(envelope.Request{To: c.ID, Type: req.Envelope.Type, Payload: req.Envelope.Payload})
				if err != nil {
					return err
				}
				if rj, _ := injectionCheck(e, c, ereq); rj != nil {
					return rj
				}
				env := e.humanEnvelope(e.ids.New(ts), userID, ereq, ts)
				if err := delivery.Send(deliveryTx{t}, ts, userID, &env); err != nil {
					return err
				}
				ref = env.ID
			case highway.RespondAbort:
				if c.State.Terminal() {
					return Refuse(wire.CodeInvalidTransition, "workspace %s is already %s", c.ID, c.State)
				}
			}
			x, ev, err := highway.Respond(x, req.Response, ref, userID, clock.Format(t.next()))
			if err != nil {
				return Refuse(wire.CodeInvalidStructure, "%v", err)
			}
			if err := t.putEscalation(x); err != nil {
				return err
			}
			if _, err := t.append(c.ID, userID, ev.Type, ev.Body); err != nil {
				return err
			}
			out = x
			if req.Response == highway.RespondAbort {
				return t.abortFor(c, userID, ReasonAbortedByHuman, "")
			}
			return nil
		})
		return out, err
	})
}

// Escalations returns the escalations: pending ones (queued included)
// FIFO, or with all every one, by time.
func (e *Engine) Escalations(ctx context.Context, all bool) []highway.EscalationRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []highway.EscalationRecord
	for _, x := range e.gov.escal {
		if all || x.Pending() {
			out = append(out, *x)
		}
	}
	slices.SortFunc(out, func(a, b highway.EscalationRecord) int {
		if c := strings.Compare(a.Timestamp, b.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// expireEscalation falls escalation id back at now, if it is pending and
// due: approve closes it, reject fails the workspace
// (escalation_rejected), delegate_to_coordinator hands it over.
func (t *tx) expireEscalation(id string, now time.Time) error {
	x, _ := t.escalation(id)
	x, events, ok := highway.ExpireEscalation(x, now, clock.Format(now))
	if !ok {
		return nil
	}
	if err := t.putEscalation(x); err != nil {
		return err
	}
	c := t.ws(x.Workspace)
	for _, ev := range events {
		if _, err := t.append(c.ID, highway.ActorFallback, ev.Type, ev.Body); err != nil {
			return err
		}
	}
	if x.Resolution.Response != highway.RespondReject || c.State.Terminal() {
		return nil
	}
	return t.abortFor(c, trail.ActorSystem, highway.ReasonEscalationRejected, "")
}

// withdrawEscalations resolves by the protocol the pending escalations of
// workspace w, which ended.
func (t *tx) withdrawEscalations(w *workspace.Workspace) error {
	if !t.anyEscalations() {
		return nil
	}
	for _, x := range t.escalationsSeen() {
		if x.Workspace != w.ID || !x.Pending() {
			continue
		}
		x, ev := highway.Withdraw(x, clock.Format(t.next()))
		if err := t.putEscalation(x); err != nil {
			return err
		}
		if _, err := t.append("", highway.ActorProtocol, ev.Type, ev.Body); err != nil {
			return err
		}
	}
	return nil
}

// ExpireEscalations falls back every pending escalation whose deadline
// has passed at now, each in its own commit, and returns how many.
func (e *Engine) ExpireEscalations(ctx context.Context, now time.Time) (int, error) {
	return runAs(ctx, e, 0, func() (int, error) {
		n := 0
		for _, x := range e.open.tx.escalationsSeen() {
			if d, ok := x.DeadlineTime(); !x.Pending() || !ok || now.Before(d) {
				continue
			}
			if err := e.commit(func(t *tx) error { return t.expireEscalation(x.ID, now) }); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	})
}

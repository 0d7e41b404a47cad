package runtime

import (
	"context"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/runtime/delivery"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The reasons of a rejected injection (Human Highway §6.2, §6.3), in its
// human_injection entry.
const (
	InjectionTerminal = "workspace_terminal"
	InjectionSealed   = "workspace_sealed"
)

// Inject sends an envelope from a person, user userID, to any workspace
// (Human Highway §2.3): the user must be active and hold inject_directive
// (for a workspace the user owns) or inject_directive_any; the sender-role
// check of the permission matrix, and the send right, are the only rules
// skipped. The envelope is the root's (from), with origin human and
// originator the user. A terminal target is rejected with
// workspace_terminal, an integrating or conflicted one with
// workspace_sealed (both target_terminal on the wire), an unregistered
// type with invalid_type; a suspended or migrating target queues it.
// Every injection the user may make writes human_injection (status
// delivered, queued or rejected, with the reason): in the target's local
// trail, or the system's when the target is gone or terminal. A body that
// is not an envelope request changes nothing.
func (e *Engine) Inject(ctx context.Context, userID string, body []byte) (envelope.Envelope, error) {
	req, err := envelope.DecodeRequest(body)
	if err != nil {
		return envelope.Envelope{}, err
	}
	return runAs(ctx, e, len(body), func() (envelope.Envelope, error) {
		if !e.cfg.Highway.Injection {
			return envelope.Envelope{}, Refuse(wire.CodePermissionDenied, "the run's highway has injection off")
		}
		var env envelope.Envelope
		var rejected error // a rejection, recorded (human_injection): committed, then answered
		err := e.userCommit(func(t *tx) error {
			ts := t.next()
			to := e.get(req.To)
			target := user.Target{ID: req.To} // an id of no workspace: as another's (userprobe.go)
			if to != nil {
				target.Owner = to.Owner
			}
			if err := t.authorizeUser(userID, "highway.inject", target, clock.Format(ts)); err != nil {
				return err // a denial is recorded: userCommit commits it
			}
			id := e.ids.New(ts)
			rj, why := injectionCheck(e, to, req)
			record := func(status, reason string) error {
				b := map[string]any{"envelope_id": id, "actor": userID, "to": req.To, "type": req.Type, "status": status}
				if reason != "" {
					b["reason"] = reason
				}
				where := req.To
				if to == nil {
					where = "" // no such workspace: system-level (appendAt does so for a terminal one)
				}
				_, err := t.append(where, userID, trail.EventHumanInjection, b)
				return err
			}
			if rj != nil {
				rejected = rj
				return record("rejected", why)
			}
			env = e.humanEnvelope(id, userID, req, ts)
			status := "delivered"
			if to.State == workspace.Suspended || to.State == workspace.Migrating {
				status = "queued"
			}
			if err := delivery.Send(deliveryTx{t}, ts, userID, &env); err != nil {
				return err
			}
			return record(status, "")
		})
		if err == nil {
			err = rejected
		}
		return env, err
	})
}

// humanEnvelope is envelope id of a person, user userID, made at ts from
// req (an injection, an escalation's answer): from the root, origin
// human, originator the person.
func (e *Engine) humanEnvelope(id, userID string, req envelope.Request, ts time.Time) envelope.Envelope {
	return envelope.Envelope{
		ID: id, From: e.root, To: req.To, Originator: userID, Type: req.Type,
		Payload: req.Payload, InReplyTo: req.InReplyTo, Priority: req.Priority, Rights: []envelope.RightSpec{},
		Timestamp: clock.Format(ts), Origin: envelope.OriginHuman, Status: envelope.StatusValidated,
	}
}

// injectionCheck returns why an injection of req to workspace to (nil: it
// does not exist) is rejected, with the reason its human_injection entry
// records, or nil. Caller holds e.mu.
func injectionCheck(e *Engine, to *workspace.Workspace, req envelope.Request) (*Error, string) {
	switch {
	case to == nil:
		return Refuse(wire.CodeTargetNotFound, "workspace %s does not exist", req.To), string(envelope.ReasonTargetNotFound)
	case to.State.Terminal():
		return Refuse(wire.CodeTargetTerminal, "workspace %s is %s: injections to terminal workspaces are rejected", to.ID, to.State), InjectionTerminal
	case to.State == workspace.Integrating || to.State == workspace.Conflicted:
		return Refuse(wire.CodeTargetTerminal, "workspace %s is %s and its inbox is sealed; inject into the coordinator's instead", to.ID, to.State), InjectionSealed
	case len(req.Rights) > 0:
		return Refuse(wire.CodeInvalidStructure, "a person's envelope carries no port rights (a person holds none)"), string(envelope.ReasonInvalidStructure)
	case !e.tax.HasEnvelopeType(req.Type):
		return Refuse(wire.CodeInvalidType, "envelope type %q is not registered in taxonomy %s", req.Type, e.tax.ID()), string(envelope.ReasonInvalidType)
	}
	return nil, ""
}

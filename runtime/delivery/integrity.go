package delivery

import (
	"errors"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/trail"
)

// Integrity is the engine's envelope key as delivery uses it (WACP
// Security §4.1): Prove sets an envelope's proof when it is created;
// Verify checks a stored one, returning an *envelope.IntegrityError when
// its proof does not verify.
type Integrity interface {
	Prove(env *envelope.Envelope)
	Verify(env envelope.Envelope) error
}

// Verified checks env, read back from the store, before it is delivered,
// queued for delivery again or handed to its receiver's agent. When its
// proof does not verify the envelope is rejected (Reject) and ok is
// false: the caller does not deliver it. Errors other than a violation
// are returned.
func Verified(t Tx, env *envelope.Envelope) (ok bool, err error) {
	var ie *envelope.IntegrityError
	switch err := t.Verify(*env); {
	case err == nil:
		return true, nil
	case !errors.As(err, &ie):
		return false, err
	default:
		return false, Reject(t, env, ie)
	}
}

// Reject ends env, whose proof ie says does not verify, without delivering
// it (Security §4.1 rule 3, §9): integrity_violation (subject_type
// envelope, action_taken rejected) in the global trail, envelope_rejected
// with reason integrity_violation and the violation in its sender's trail,
// the rights it carries back with their holder, status rejected. The
// record's fields are as found: from, to and type may be what changed; a
// sender that does not exist gets no envelope_rejected in a trail of its
// own (it is a system-level entry).
func Reject(t Tx, env *envelope.Envelope, ie *envelope.IntegrityError) error {
	err := t.Append("", trail.ActorProtocol, trail.EventIntegrityViolation, map[string]any{
		"subject_type": "envelope", "subject_id": env.ID, "violation": ie.Violation,
		"expected": ie.Expected, "actual": ie.Actual, "action_taken": "rejected",
	})
	if err != nil {
		return err
	}
	from := env.From
	if t.Workspace(from) == nil {
		from = ""
	}
	err = t.Append(from, trail.ActorProtocol, trail.EventEnvelopeRejected, map[string]any{
		"envelope_id": env.ID, "from": env.From, "to": env.To, "type": env.Type,
		"reason": string(envelope.ReasonIntegrityViolation), "violation": ie.Violation, "timestamp": nil,
	})
	if err != nil {
		return err
	}
	env.Status = envelope.StatusRejected
	if err := t.Rights(env, false); err != nil {
		return err
	}
	if err := t.Step("integrity_rejected"); err != nil {
		return err
	}
	return envstore.Put(t.Txn(), *env)
}

package runtime

import (
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// Users (User spec; the rules are package user's). A user record is made
// when the coordinator first mints a token for the user
// (createUserLocked) and moves through its states with its own events;
// every action a user token takes is authorized against it
// (authorizeUser).

// authorizeUser decides whether user id may take action on target: the
// user's record must exist and user.Authorize allow it. A denial writes
// capability_denied in t (to the global trail) and returns the refusal
// capability_denied.
func (t *tx) authorizeUser(id, action string, target user.Target, ts string) error {
	u, ok := t.user(id)
	if !ok {
		return Refuse(wire.CodeUnauthorized, "user %s has no record", id)
	}
	d := user.Authorize(u, action, target, ts)
	if d.Allowed {
		return nil
	}
	if _, err := t.append("", id, d.Event.Type, d.Event.Body); err != nil {
		return err
	}
	return Refuse(wire.CodeCapabilityDenied, "user %s may not %s: %s (%s)", id, action, d.Reason, d.Capability)
}

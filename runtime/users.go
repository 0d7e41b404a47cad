package runtime

import (
	"context"
	"slices"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
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

// SetUserState moves user req.User to req.State for the coordinator
// (actor, the root): one of the spec's ten transitions, each with its own
// event, written system-level (the coordinator follows them on the live
// trail feed, wacp.v1.trail._system.user_*). A user who becomes active
// again gets the escalations queued for it delivered; a deactivated one
// has its pending escalations rejected (capability_denied) and handed to
// the coordinator.
func (e *Engine) SetUserState(ctx context.Context, actor string, req wire.UserStateRequest) (user.User, error) {
	if !req.State.Valid() {
		return user.User{}, Refuse(wire.CodeInvalidStructure, "state %q is not active, suspended, blocked or deactivated", req.State)
	}
	return e.changeUser(ctx, actor, req.User, "changes a user's state", func(t *tx, u user.User, by, ts string) (user.User, []user.Event, error) {
		nu, ev, err := user.Move(u, req.State, req.Reason, req.Condition, by, ts)
		if err != nil {
			return u, nil, Refuse(wire.CodeInvalidTransition, "%v", err)
		}
		return nu, []user.Event{ev}, nil
	}, (*tx).followUser)
}

// changeUser runs a change of user who's record for the coordinator
// (actor): change returns the new record and its events, which are
// written system-level with the record; then follow, if set, runs on the
// new record in the same commit.
func (e *Engine) changeUser(ctx context.Context, actor, who, what string,
	change func(t *tx, u user.User, by, ts string) (user.User, []user.Event, error), follow func(*tx, user.User) error) (user.User, error) {
	if actor != e.root {
		return user.User{}, Refuse(wire.CodePermissionDenied, "only the coordinator %s", what)
	}
	return e.changeUserAs(ctx, trail.ActorSystem, nil, who, change, follow)
}

// changeUserAs is changeUser for by (system, or a person's user id): allow,
// if set, decides first whether by may; a capability_denied refusal from
// it is committed (its entry) and returned.
func (e *Engine) changeUserAs(ctx context.Context, by string, allow func(t *tx, ts string) error, who string,
	change func(t *tx, u user.User, by, ts string) (user.User, []user.Event, error), follow func(*tx, user.User) error) (user.User, error) {
	return runAs(ctx, e, 0, func() (user.User, error) {
		var out user.User
		err := e.userCommit(func(t *tx) error {
			ts := clock.Format(t.next())
			if allow != nil {
				if err := allow(t, ts); err != nil {
					return err
				}
			}
			u, ok := t.user(who)
			if !ok {
				return Refuse(wire.CodeNotFound, "user %s has no record", who)
			}
			nu, events, err := change(t, u, by, ts)
			if err != nil {
				return err
			}
			out = nu
			if len(events) == 0 {
				return nil
			}
			if err := t.putUser(nu); err != nil {
				return err
			}
			for _, ev := range events {
				if _, err := t.append("", by, ev.Type, ev.Body); err != nil {
					return err
				}
			}
			if follow == nil {
				return nil
			}
			return follow(t, nu)
		})
		return out, err
	})
}

// followUser applies user u's new state to the escalations routed to it.
func (t *tx) followUser(u user.User) error {
	for _, x := range t.escalationsSeen() {
		if x.Owner != u.ID || !x.Pending() {
			continue
		}
		switch u.State {
		case user.Active:
			if nx, ok := highway.Redeliver(x); ok {
				if err := t.putEscalation(nx); err != nil {
					return err
				}
			}
		case user.Deactivated:
			ts := clock.Format(t.next())
			nx, events := highway.RejectForOwner(x, ts)
			if err := t.putEscalation(nx); err != nil {
				return err
			}
			for _, ev := range events {
				if _, err := t.append("", highway.ActorProtocol, ev.Type, ev.Body); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// SetCapabilities grants and revokes capabilities of user req.User for
// the coordinator: capability_granted and capability_revoked for each
// change (a grant of one held, or a revocation of one not held, writes
// nothing).
func (e *Engine) SetCapabilities(ctx context.Context, actor string, req wire.UserCapabilitiesRequest) (user.User, error) {
	for _, c := range append(slices.Clone(req.Grant), req.Revoke...) {
		if !c.Valid() {
			return user.User{}, Refuse(wire.CodeInvalidStructure, "capability %q is not one of the seventeen", c)
		}
	}
	return e.changeUser(ctx, actor, req.User, "grants and revokes capabilities", func(t *tx, u user.User, by, ts string) (user.User, []user.Event, error) {
		var events []user.Event
		for _, c := range req.Grant {
			var ev []user.Event
			var err error
			if u, ev, err = user.Grant(u, c, by, ts); err != nil {
				return u, nil, Refuse(wire.CodeInvalidStructure, "%v", err)
			}
			events = append(events, ev...)
		}
		for _, c := range req.Revoke {
			var ev []user.Event
			var err error
			if u, ev, err = user.Revoke(u, c, by, req.Reason, ts); err != nil {
				return u, nil, Refuse(wire.CodeInvalidStructure, "%v", err)
			}
			events = append(events, ev...)
		}
		return u, events, nil
	}, nil)
}

// TransferOwnership gives workspace req.ID to user req.Owner for the
// coordinator (User spec §4.5): the owner field changes,
// workspace_ownership_transferred is written, nothing before it is
// rewritten, and the workspace's children keep their owners. The new
// owner must have a user record.
func (e *Engine) TransferOwnership(ctx context.Context, actor string, req wire.TransferRequest) (*workspace.Workspace, error) {
	return e.coordinate(ctx, actor, req.ID, func(w *workspace.Workspace) error {
		if !e.get(actor).IsRoot() {
			return Refuse(wire.CodePermissionDenied, "only the coordinator transfers ownership")
		}
		return e.transferable(w, req.Owner)
	}, func(t *tx, a, c *workspace.Workspace) error { return t.transfer(c, e.actorOf(a), req) })
}

// transfer gives workspace c (a tx copy) to user req.Owner for by (system,
// or the person who holds transfer_ownership): the record's owner and
// workspace_ownership_transferred. Nothing else changes (User spec §4.5):
// not its originator, not its children's owners.
func (t *tx) transfer(c *workspace.Workspace, by string, req wire.TransferRequest) error {
	from := c.Owner
	c.Owner = req.Owner
	if err := t.put(c); err != nil {
		return err
	}
	_, err := t.append(c.ID, by, trail.EventWorkspaceOwnershipTransferred, map[string]any{
		"workspace_id": c.ID, "from_user": from, "to_user": req.Owner, "reason": optional(req.Reason),
		"transferred_by": by, "timestamp": nil,
	})
	return err
}

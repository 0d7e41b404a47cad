package runtime

import (
	"context"
	"encoding/json"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// A person's own actions on workspaces and users (User spec §6.2), taken
// with a user token on the highway: the coordinator's operations, each
// authorized against the user's record (authorizeUser: active, holding
// the action's capability, and for an _own capability owning the target),
// written with the user's id as actor. A person's own decision is not held
// at a gate: gates are where a person approves what agents asked for.

// ReasonAbortedByHuman is the failure reason of a workspace a person
// aborted (WACP failure reasons).
const ReasonAbortedByHuman = "aborted_by_human"

// userCommit is commit for a person's action: a capability_denied refusal
// from fn commits (its entry, which fn wrote first, is the record of the
// attempt) and is returned; any other error aborts the commit.
func (e *Engine) userCommit(fn func(t *tx) error) error {
	var refused error
	err := e.commit(func(t *tx) error {
		err := fn(t)
		if Code(err) == wire.CodeCapabilityDenied {
			refused = err
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	return refused
}

// asUser runs person uid's action on workspace id: the workspace exists
// and is not the root (which ends with the run), the user may take action
// on it (a denial commits capability_denied and is refused with it), check
// passes on the committed record, then fn runs on the transaction's copy,
// in one commit. It returns the record after the commit.
func (e *Engine) asUser(ctx context.Context, uid, action, id string, check func(*workspace.Workspace) error,
	fn func(t *tx, c *workspace.Workspace) error) (*workspace.Workspace, error) {
	if id == "" {
		return nil, Refuse(wire.CodeInvalidStructure, "id is required")
	}
	// A person's abort takes precedence as the coordinator's (precedence.go).
	return runLane(ctx, e, action == "workspace.abort", 0, func() (*workspace.Workspace, error) {
		w := e.get(id)
		switch {
		case w == nil: // answered as for another's workspace (userprobe.go)
			return nil, e.userMay(uid, action, id)
		case w.IsRoot():
			return nil, Refuse(wire.CodeInvalidTransition, "the root workspace is the coordinator's and ends with the run")
		}
		var out *workspace.Workspace
		err := e.userCommit(func(t *tx) error {
			if err := t.authorizeUser(uid, action, user.Target{ID: id, Owner: w.Owner}, clock.Format(t.next())); err != nil {
				return err
			}
			if err := check(w); err != nil {
				return err
			}
			out = t.ws(id)
			return fn(t, out)
		})
		if err != nil {
			return nil, err
		}
		return out.Clone(), nil
	})
}

// UserAbort fails workspace id for person uid (abort_own, abort_any): a
// failed signal with reason aborted_by_human, the transition with the
// person's reason as its detail, and the cascade, which stops at
// ownership boundaries (a child of another owner is reparented to the
// root, User spec §4.4).
func (e *Engine) UserAbort(ctx context.Context, uid string, req wire.IDRequest) (*workspace.Workspace, error) {
	return e.asUser(ctx, uid, "workspace.abort", req.ID, func(w *workspace.Workspace) error {
		if w.State.Terminal() {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is already %s", w.ID, w.State)
		}
		return nil
	}, func(t *tx, c *workspace.Workspace) error {
		return t.abortFor(c, uid, ReasonAbortedByHuman, req.Reason)
	})
}

// UserSuspend suspends an active or blocked workspace for person uid
// (suspend_own, suspend_any): the suspend signal comes from the root, the
// coordinator mediating, with the person as actor.
func (e *Engine) UserSuspend(ctx context.Context, uid string, req wire.IDRequest) (*workspace.Workspace, error) {
	reason := req.Reason
	if reason == "" {
		reason = "human_request"
	}
	return e.asUser(ctx, uid, "workspace.suspend", req.ID, func(w *workspace.Workspace) error {
		if w.State != workspace.Active && w.State != workspace.Blocked {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is %s; only active or blocked workspaces are suspended", w.ID, w.State)
		}
		return nil
	}, func(t *tx, c *workspace.Workspace) error {
		return t.suspend(c, t.ws(e.root), uid, reason)
	})
}

// UserResume resumes a suspended workspace for person uid (suspend_own,
// suspend_any).
func (e *Engine) UserResume(ctx context.Context, uid string, req wire.IDRequest) (*workspace.Workspace, error) {
	return e.asUser(ctx, uid, "workspace.resume", req.ID, func(w *workspace.Workspace) error {
		if w.State != workspace.Suspended {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is %s, not suspended", w.ID, w.State)
		}
		return nil
	}, func(t *tx, c *workspace.Workspace) error { return t.resume(c, uid) })
}

// UserTransfer gives a workspace to another user for person uid
// (transfer_ownership, whose scope is any).
func (e *Engine) UserTransfer(ctx context.Context, uid string, req wire.TransferRequest) (*workspace.Workspace, error) {
	if req.Owner == "" {
		return nil, Refuse(wire.CodeInvalidStructure, "owner is required")
	}
	return e.asUser(ctx, uid, "workspace.transfer", req.ID, func(w *workspace.Workspace) error {
		return e.transferable(w, req.Owner)
	}, func(t *tx, c *workspace.Workspace) error { return t.transfer(c, uid, req) })
}

// transferable checks that w may go to user owner: a user with a record,
// not already its owner. Caller holds e.mu.
func (e *Engine) transferable(w *workspace.Workspace, owner string) error {
	if _, ok := e.userOf(owner); !ok {
		return Refuse(wire.CodeNotFound, "user %s has no record", owner)
	}
	if w.Owner == owner {
		return Refuse(wire.CodeInvalidTransition, "workspace %s is already %s's", w.ID, owner)
	}
	return nil
}

// UserCreateWorkspace creates a workspace for person uid: under parent
// (default the root), owned by uid unless the request names another owner,
// with uid as its originator (a person caused it, User spec §5). Creating
// a workspace one will own needs create_workspace, for another owner
// create_workspace_any; delegate needs grant_delegation as well, and only
// for one's own workspace. A person's creation is not held at a
// workspace_create gate. grant writes the agent's token record in the same
// commit, as for CreateWorkspaceGranting. The new workspace's partition is
// chosen as for CreateWorkspace (WithPartition).
func (e *Engine) UserCreateWorkspace(ctx context.Context, uid string, body []byte, grant func(Grants, *workspace.Workspace) error) (*workspace.Workspace, error) {
	req, err := workspace.DecodeCreateRequest(body)
	if err != nil {
		return nil, &Error{Code: wire.CodeInvalidStructure, Message: err.Error(), Err: err}
	}
	if req.Injection != "" {
		return nil, Refuse(wire.CodeInvalidStructure, "injection is for agents: a workspace a person creates is that person's doing already")
	}
	return runAs(ctx, e, len(body), func() (*workspace.Workspace, error) {
		root := e.get(e.root)
		pid := req.Parent
		if pid == "" {
			pid = root.ID
		}
		if pid != root.ID {
			if err := e.userParent(uid, pid); err != nil {
				return nil, err
			}
		}
		parent := e.get(pid)
		if parent == nil {
			return nil, Refuse(wire.CodeNotFound, "parent workspace %s does not exist", pid)
		}
		if err := e.creatableRole(req.Role); err != nil {
			return nil, err
		}
		part, err := e.childPartition(ctx, parent) // placement.go
		if err != nil {
			return nil, err
		}
		if err := e.admit(); err != nil { // admission control (admission.go)
			return nil, err
		}
		if req.Owner == "" {
			req.Owner = uid
		}
		req.Originator = uid
		var created *workspace.Workspace
		err = e.userCommit(func(t *tx) error {
			ts := t.next()
			target := user.Target{ID: parent.ID, Owner: req.Owner}
			for _, action := range []string{"workspace.create", "workspace.delegate"} {
				if action == "workspace.delegate" && !req.Delegate {
					continue
				}
				if err := t.authorizeUser(uid, action, target, clock.Format(ts)); err != nil {
					return err
				}
			}
			if req.Owner != uid {
				if _, ok := t.user(req.Owner); !ok {
					return Refuse(wire.CodeNotFound, "user %s has no record", req.Owner)
				}
			}
			id, err := e.mintIn(ts, part)
			if err != nil {
				return err
			}
			w, err := t.createWorkspace(root, uid, parent, req, id, ts)
			if err != nil {
				return err
			}
			created = w
			return t.grant(grant, w)
		})
		if err != nil {
			return nil, err
		}
		return created.Clone(), nil
	})
}

// UserSetState deactivates or reactivates user req.User for person uid
// (deactivate_user, whose scope is any): to deactivated from any state, or
// to active from deactivated. Suspending and blocking a user are the
// coordinator's (user.state).
func (e *Engine) UserSetState(ctx context.Context, uid string, req wire.UserStateRequest) (user.User, error) {
	action := "user.deactivate"
	switch {
	case req.State == user.Deactivated:
	case req.State == user.Active:
		action = "user.reactivate"
	default:
		return user.User{}, Refuse(wire.CodeInvalidStructure, "a person deactivates (state deactivated) or reactivates (state active) a user; %q is the coordinator's", req.State)
	}
	return e.changeUserAs(ctx, uid, func(t *tx, ts string) error {
		return t.authorizeUser(uid, action, user.Target{}, ts)
	}, req.User, func(t *tx, u user.User, by, ts string) (user.User, []user.Event, error) {
		if action == "user.reactivate" && u.State != user.Deactivated {
			return u, nil, Refuse(wire.CodeInvalidTransition, "user %s is %s; a person reactivates only a deactivated user", u.ID, u.State)
		}
		nu, ev, err := user.Move(u, req.State, req.Reason, req.Condition, by, ts)
		if err != nil {
			return u, nil, Refuse(wire.CodeInvalidTransition, "%v", err)
		}
		return nu, []user.Event{ev}, nil
	}, (*tx).followUser)
}

// UserTrailScope returns what person uid may read of the trail (User spec
// §6.2): keep is nil for all of it (view_trail_any), else it reports
// whether an entry is the user's (view_trail_own, which every active user
// holds): an entry of a workspace the user owns when the read begins, or a
// system-level entry about the user (its actor, or its body's user_id). A
// read limited to workspace ws needs ws to be the user's, or
// view_trail_any; a read of everything (whole) needs view_trail_any. A
// refusal is capability_denied (wrong_scope, or user_not_active for a user
// who is not active), recorded in the trail.
func (e *Engine) UserTrailScope(ctx context.Context, uid, ws string, whole bool) (keep func(trail.Entry) bool, err error) {
	return runAs(ctx, e, 0, func() (func(trail.Entry) bool, error) {
		u, ok := e.userOf(uid)
		if !ok {
			return nil, Refuse(wire.CodeUnauthorized, "user %s has no record", uid)
		}
		if u.State == user.Active && u.Has(user.ViewTrailAny) {
			return nil, nil
		}
		target := user.Target{ID: ws} // an id of no workspace: as another's (userprobe.go)
		if w := e.get(ws); w != nil {
			target.Owner = w.Owner
		}
		if ws != "" || whole || u.State != user.Active {
			err := e.userCommit(func(t *tx) error { return t.authorizeUser(uid, "trail.read", target, clock.Format(t.next())) })
			if err != nil || ws != "" {
				return nil, err // or ws is the user's: the read's workspace filter does the rest
			}
		}
		owned := map[string]bool{}
		for id, w := range e.ws {
			if w.Owner == uid {
				owned[id] = true
			}
		}
		return func(en trail.Entry) bool {
			if en.Workspace != "" {
				return owned[en.Workspace]
			}
			if en.Actor == uid {
				return true
			}
			var b struct {
				UserID string `json:"user_id"`
			}
			return json.Unmarshal(en.Body, &b) == nil && b.UserID == uid
		}, nil
	})
}

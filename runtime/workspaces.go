package runtime

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime/delivery"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

func createdBody(w *workspace.Workspace) map[string]any {
	return map[string]any{
		"workspace_id": w.ID, "role": w.Role, "parent": w.Parent, "delegate": w.Delegate,
		"originator": w.Originator, "owner": w.Owner, "visibility_set": w.Visibility,
		"authority_set": w.Authority, "timeout": optional(w.Timeout), "budget": w.Budget,
		"priority": w.Priority, "group": optional(w.Group),
	}
}

// CreateWorkspace creates a workspace on behalf of the agent of workspace
// actor, which must be the coordinator (root) or a delegate. The parent is
// the actor unless the request names one: the coordinator may name any live
// workspace, a delegate only one in its own subtree. Only the coordinator
// grants delegation; no one creates a second coordinator. When the engine
// partitions its ids, the new workspace's id lands in its parent's
// partition, or for a child of the root in the one ctx names
// (WithPartition; default the root's). It writes
// workspace_created and the send rights between the new workspace and its
// parent (port_right_created, both ways) in one commit.
func (e *Engine) CreateWorkspace(ctx context.Context, actor string, body []byte) (*workspace.Workspace, error) {
	return e.CreateWorkspaceGranting(ctx, actor, body, nil)
}

// CreateWorkspaceGranting is CreateWorkspace with grant, if set, writing
// token records into the same transaction (the daemon stores the new
// agent's token there).
func (e *Engine) CreateWorkspaceGranting(ctx context.Context, actor string, body []byte, grant func(Grants, *workspace.Workspace) error) (*workspace.Workspace, error) {
	return runAs(ctx, e, len(body), func() (*workspace.Workspace, error) { return e.createWorkspaceLocked(ctx, actor, body, grant) })
}

// createWorkspaceLocked is CreateWorkspaceGranting run by the committer.
func (e *Engine) createWorkspaceLocked(ctx context.Context, actor string, body []byte, grant func(Grants, *workspace.Workspace) error) (*workspace.Workspace, error) {
	req, err := workspace.DecodeCreateRequest(body)
	if err != nil {
		return nil, &Error{Code: wire.CodeInvalidStructure, Message: err.Error(), Err: err}
	}
	a := e.get(actor)
	switch {
	case a == nil:
		return nil, Refuse(wire.CodeNotFound, "workspace %s does not exist", actor)
	case !a.IsRoot() && !a.Delegate:
		return nil, Refuse(wire.CodePermissionDenied, "only the coordinator or a delegate creates workspaces")
	case a.State.Terminal():
		return nil, Refuse(wire.CodePermissionDenied, "workspace %s is %s", actor, a.State)
	}
	if err := activeAuthority(a); err != nil {
		return nil, err
	}
	parentID := req.Parent
	if parentID == "" {
		parentID = actor
	}
	parent, err := e.lookupFor(actor, parentID)
	switch {
	case err != nil:
		return nil, err
	case !a.IsRoot() && !e.inSubtree(actor, parentID):
		return nil, Refuse(wire.CodePermissionDenied, "a delegate creates workspaces only in its own subtree")
	}
	if err := e.creatableRole(req.Role); err != nil {
		return nil, err
	}
	switch {
	case req.Delegate && !a.IsRoot():
		return nil, Refuse(wire.CodePermissionDenied, "only the coordinator grants delegation")
	}
	part, err := e.childPartition(ctx, parent) // placement.go
	if err != nil {
		return nil, err
	}
	if err := e.admit(); err != nil { // admission control (admission.go)
		return nil, err
	}
	var created *workspace.Workspace
	var gateID string
	err = e.commit(func(t *tx) error {
		ts := t.next()
		id, err := e.mintIn(ts, part) // a held creation keeps it (planCreate)
		if err != nil {
			return err
		}
		var w *workspace.Workspace
		if e.cfg.Highway.Gated(highway.WorkspaceCreate) {
			w, gateID, err = t.holdWorkspace(a, parent, req, id, ts, body)
		} else {
			w, err = t.createWorkspace(a, e.actorOf(a), parent, req, id, ts)
		}
		if err != nil {
			return err
		}
		created = w
		return t.grant(grant, w)
	})
	if err == nil && gateID != "" {
		e := gatePending(gateID, highway.WorkspaceCreate, "the creation of workspace "+created.ID).(*Error)
		e.Details["workspace_id"] = created.ID
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	return created.Clone(), nil
}

// creatableRole checks that a new workspace may have role: one the
// taxonomy registers, never the coordinator's.
func (e *Engine) creatableRole(role string) error {
	switch {
	case !e.tax.HasRole(role):
		return Refuse(wire.CodeInvalidType, "role %q is not registered in taxonomy %s", role, e.tax.ID())
	case role == taxonomy.RoleCoordinator:
		return Refuse(wire.CodePermissionDenied, "there is exactly one coordinator, assigned by the runtime")
	}
	return nil
}

// grant runs the daemon's grant, if set, for new workspace w in t: its
// agent's token record commits with it.
func (t *tx) grant(grant func(Grants, *workspace.Workspace) error, w *workspace.Workspace) error {
	if grant == nil {
		return nil
	}
	if err := t.step("extra"); err != nil {
		return err
	}
	return grant(Grants{t.txn}, w)
}

// createWorkspace creates workspace id from req under parent for the
// agent of a (the root for a person), actor (its role, system, or the
// person's user id), at ts: workspace_created and the send rights between
// it and its parent (port_right_created, both ways).
func (t *tx) createWorkspace(a *workspace.Workspace, actor string, parent *workspace.Workspace, req workspace.CreateRequest, id string, ts time.Time) (*workspace.Workspace, error) {
	if err := t.causedBy(a, &req); err != nil {
		return nil, err
	}
	w, err := workspace.Plan(req, parent, id, clock.Format(ts))
	if err != nil {
		return nil, err
	}
	if err := t.budgetFits(w.Budget, parent, ""); err != nil { // containment (budget.go)
		return nil, err
	}
	t.created[w.ID] = w
	if err := t.put(w); err != nil {
		return nil, err
	}
	if err := t.appendAt(ts, w.ID, actor, trail.EventWorkspaceCreated, createdBody(w)); err != nil {
		return nil, err
	}
	if err := t.linkRights(w.ID, parent.ID, a.ID); err != nil {
		return nil, err
	}
	return w, nil
}

// causedBy sets req's originator from its injection, if it names one:
// the envelope must be a person's (origin human: an injection, or a
// person's answer to an escalation) delivered to a's workspace, the one
// creating. The new workspace is then that person's doing, whatever its
// parent's originator (User spec §5.2 rule 4); its own children inherit
// it (rule 5).
func (t *tx) causedBy(a *workspace.Workspace, req *workspace.CreateRequest) error {
	if req.Injection == "" {
		return nil
	}
	env, err := envstore.Get(t.txn, req.Injection)
	switch {
	case errors.Is(err, envstore.ErrNotFound) || (err == nil && env.To != a.ID):
		return Refuse(wire.CodeNotFound, "no envelope %s was sent to workspace %s", req.Injection, a.ID)
	case err != nil:
		return err
	case env.Origin != envelope.OriginHuman:
		return Refuse(wire.CodeInvalidStructure, "envelope %s is an agent's (origin %s); injection names a person's envelope", req.Injection, env.Origin)
	}
	req.Originator = env.Originator
	return nil
}

// inSubtree reports whether id is root or a descendant of root. Caller holds e.mu.
func (e *Engine) inSubtree(root, id string) bool {
	for w := e.get(id); w != nil; w = e.get(w.ParentID()) {
		if w.ID == root {
			return true
		}
	}
	return false
}

// canSee reports whether the agent of actor may read workspace target: the
// coordinator sees everything; a workspace sees itself, its visibility set
// and its own subtree. Caller holds e.mu.
func (e *Engine) canSee(actor, target string) bool {
	a := e.get(actor)
	if a == nil {
		return false
	}
	return a.IsRoot() || a.Sees(target) || e.inSubtree(actor, target)
}

// GetWorkspace returns workspace id's record if actor may see it.
func (e *Engine) GetWorkspace(ctx context.Context, actor, id string) (*workspace.Workspace, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w, err := e.lookupFor(actor, id)
	if err != nil {
		return nil, err
	}
	return w.Clone(), nil
}

// ListWorkspaces returns the workspaces actor may see, filtered by parent
// and state when set, in creation order.
func (e *Engine) ListWorkspaces(ctx context.Context, actor, parent string, state workspace.State) ([]*workspace.Workspace, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.get(actor) == nil {
		return nil, Refuse(wire.CodeNotFound, "workspace %s does not exist", actor)
	}
	if state != "" && !state.Valid() {
		return nil, Refuse(wire.CodeInvalidStructure, "state %q is not a workspace state", state)
	}
	var out []*workspace.Workspace
	for id, w := range e.ws {
		if (parent == "" || w.ParentID() == parent) && (state == "" || w.State == state) && e.canSee(actor, id) {
			out = append(out, w.Clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// authorize checks that actor may run a coordinator operation on target:
// the coordinator on any workspace but the root, a live delegate on its own
// subtree. A delegate's authority ends when it is terminal, as it does for
// creating workspaces, and waits while it is suspended or migrating
// (activeAuthority). A target actor may not see answers as one that does
// not exist (lookupFor). Caller holds e.mu.
func (e *Engine) authorize(actor, target string) (*workspace.Workspace, *workspace.Workspace, error) {
	a := e.get(actor)
	if a == nil {
		return nil, nil, Refuse(wire.CodeNotFound, "workspace %s does not exist", actor)
	}
	w, err := e.lookupFor(actor, target)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case !a.IsRoot() && !(a.Delegate && target != actor && e.inSubtree(actor, target)):
		return nil, nil, Refuse(wire.CodePermissionDenied, "only the coordinator or a delegate over %s may do this", target)
	case a.State.Terminal():
		return nil, nil, Refuse(wire.CodePermissionDenied, "workspace %s is %s and acts on nothing", actor, a.State)
	}
	if err := activeAuthority(a); err != nil {
		return nil, nil, err
	}
	switch {
	case w.IsRoot():
		return nil, nil, Refuse(wire.CodeInvalidTransition, "the root workspace ends with the run")
	}
	return a, w, nil
}

// Abort fails workspace id at once (any non-terminal state): a failed signal
// with reason aborted_by_coordinator, the transition, and the cascade. The
// caller's reason, if any, is recorded as the transition's detail.
//
// When the run's highway gates workspace_abort, the abort waits at a gate
// instead (gate_pending); its resolution aborts the workspace, or not.
func (e *Engine) Abort(ctx context.Context, actor, id, reason string) (*workspace.Workspace, error) {
	const why = "aborted_by_coordinator"
	var gateID string
	check := func(w *workspace.Workspace) error {
		if w.State.Terminal() {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is already %s", id, w.State)
		}
		return nil
	}
	fail := func(t *tx, a, c *workspace.Workspace) error {
		s, err := abortGate(a, c, reason)
		if err != nil {
			return err
		}
		gid, held, err := t.openGate(highway.WorkspaceAbort, s)
		switch {
		case err != nil:
			return err
		case held:
			gateID = gid
			return nil
		case gid != "":
			return nil // the guard converted a re-trigger to approve: aborted
		}
		return t.abortFor(c, e.actorOf(a), why, reason)
	}
	// The abort takes precedence over queued agent signals (precedence.go).
	w, err := runLane(ctx, e, true, 0, func() (*workspace.Workspace, error) { return e.coordinateLocked(actor, id, check, fail) })
	if err == nil && gateID != "" {
		return nil, gatePending(gateID, highway.WorkspaceAbort, "the abort of "+id)
	}
	return w, err
}

// abortFor fails workspace c (a tx copy) for actor (a role, system, or a
// person's user id): a failed signal with reason why, the transition with
// the caller's words as its detail, and the cascade.
func (t *tx) abortFor(c *workspace.Workspace, actor, why, detail string) error {
	if _, err := t.emit(c, taxonomy.SignalFailed, why, "", trail.ActorProtocol); err != nil {
		return err
	}
	t.detail = detail // the caller's words go into workspace_state_changed as "detail"
	return t.transition(c, workspace.Abort, actor, why, false)
}

// Suspend moves an active or blocked workspace to suspended, storing its
// pre-state: the coordinator's suspend signal, suspension_started and the
// transition.
func (e *Engine) Suspend(ctx context.Context, actor, id, reason string) (*workspace.Workspace, error) {
	if reason == "" {
		reason = "coordinator_request"
	}
	return e.coordinate(ctx, actor, id, func(w *workspace.Workspace) error {
		if w.State != workspace.Active && w.State != workspace.Blocked {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is %s; only active or blocked workspaces are suspended", id, w.State)
		}
		return nil
	}, func(t *tx, a, c *workspace.Workspace) error { return t.suspend(c, t.ws(a.ID), e.actorOf(a), reason) })
}

// suspend suspends workspace c (a tx copy) for actor: the suspend signal
// from workspace from (the coordinator's or a delegate's; the root's for a
// person), suspension_started and the transition.
func (t *tx) suspend(c, from *workspace.Workspace, actor, reason string) error {
	if _, err := t.emit(from, taxonomy.SignalSuspend, reason, c.ID, actor); err != nil {
		return err
	}
	_, err := t.append(c.ID, actor, trail.EventSuspensionStarted, map[string]any{
		"workspace_id": c.ID, "pre_suspension_state": c.State, "reason": reason,
	})
	if err != nil {
		return err
	}
	return t.transition(c, workspace.Suspend, actor, "", false)
}

// Resume returns a suspended workspace to its pre-state and delivers the
// envelopes that queued while it was suspended.
func (e *Engine) Resume(ctx context.Context, actor, id string) (*workspace.Workspace, error) {
	return e.coordinate(ctx, actor, id, func(w *workspace.Workspace) error {
		if w.State != workspace.Suspended {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is %s, not suspended", id, w.State)
		}
		return nil
	}, func(t *tx, a, c *workspace.Workspace) error { return t.resume(c, e.actorOf(a)) })
}

// resume returns suspended workspace c (a tx copy) to its pre-state for
// actor: suspension_resumed, the transition, and the envelopes that queued
// meanwhile are delivered.
func (t *tx) resume(c *workspace.Workspace, actor string) error {
	since, _ := clock.Parse(c.UpdatedAt)
	ts := t.next()
	err := t.appendAt(ts, c.ID, actor, trail.EventSuspensionResumed, map[string]any{
		"workspace_id": c.ID, "resumed_to_state": c.PreState, "duration": ts.Sub(since).String(),
	})
	if err != nil {
		return err
	}
	if err := t.transition(c, workspace.Resume, actor, "", false); err != nil {
		return err
	}
	return delivery.DeliverQueued(deliveryTx{t}, c.ID)
}

// coordinate runs a coordinator operation on workspace id for the agent of
// actor: authorize, check against the committed record, then fn on the
// transaction's copy of it (c; a is the actor's record), in one commit. It
// returns the record after the commit.
func (e *Engine) coordinate(ctx context.Context, actor, id string, check func(w *workspace.Workspace) error,
	fn func(t *tx, a, c *workspace.Workspace) error) (*workspace.Workspace, error) {
	return runAs(ctx, e, 0, func() (*workspace.Workspace, error) { return e.coordinateLocked(actor, id, check, fn) })
}

// coordinateLocked is coordinate run by the committer.
func (e *Engine) coordinateLocked(actor, id string, check func(w *workspace.Workspace) error,
	fn func(t *tx, a, c *workspace.Workspace) error) (*workspace.Workspace, error) {
	a, w, err := e.authorize(actor, id)
	if err != nil {
		return nil, err
	}
	if err := check(w); err != nil {
		return nil, err
	}
	var out *workspace.Workspace
	err = e.commit(func(t *tx) error {
		out = t.ws(id)
		return fn(t, a, out)
	})
	if err != nil {
		return nil, err
	}
	return out.Clone(), nil
}

// RevokeUser deletes principal p's n tokens (del, in the same
// transaction) for the agent of actor (the coordinator). A user's record
// moves to deactivated (user_deactivated with its prior state) unless it
// is deactivated already; an auditor, which has no record, gets
// user_deactivated as before. With n zero and nothing to deactivate
// nothing is written.
func (e *Engine) RevokeUser(ctx context.Context, actor string, p principal.Principal, reason string, n int, del func(Grants) error) error {
	return e.run(ctx, 0, func() error {
		a := e.get(actor)
		if a == nil || !a.IsRoot() {
			return Refuse(wire.CodePermissionDenied, "only the coordinator revokes user and auditor tokens")
		}
		u, isUser := e.userOf(p.Name)
		deactivate := p.Kind == principal.KindUser && isUser && u.State != user.Deactivated
		if n == 0 && !deactivate {
			return nil
		}
		return e.commit(func(t *tx) error {
			switch {
			case deactivate:
				ts := clock.Format(t.next())
				nu, ev, err := user.Move(u, user.Deactivated, reason, "", actor, ts)
				if err != nil {
					return err
				}
				if err := t.putUser(nu); err != nil {
					return err
				}
				if _, err := t.append("", e.actorOf(a), ev.Type, ev.Body); err != nil {
					return err
				}
			case p.Kind != principal.KindUser:
				if _, err := t.append("", e.actorOf(a), trail.EventUserDeactivated, map[string]any{
					"user_id": p.Name, "reason": reason, "deactivated_by": actor, "prior_state": "active", "timestamp": nil,
				}); err != nil {
					return err
				}
			}
			if err := t.step("revoke"); err != nil {
				return err
			}
			return del(Grants{t.txn})
		})
	})
}

// CreateUser stores a token of principal p, minted by the agent of actor
// (the coordinator), with write in the same transaction. A user principal
// seen for the first time gets its record, active (user_created, once per
// user id), and caps are granted to it (capability_granted for each new
// one); an auditor gets user_created with each token, as before it had
// records.
func (e *Engine) CreateUser(ctx context.Context, actor string, p principal.Principal, caps []user.Capability, write func(Grants) error) error {
	return e.run(ctx, 0, func() error { return e.createUserLocked(ctx, actor, p, caps, write) })
}

// createUserLocked is CreateUser run by the committer.
func (e *Engine) createUserLocked(ctx context.Context, actor string, p principal.Principal, caps []user.Capability, write func(Grants) error) error {
	a := e.get(actor)
	if a == nil || !a.IsRoot() {
		return Refuse(wire.CodePermissionDenied, "only the coordinator mints user and auditor tokens")
	}
	if p.Kind == principal.KindUser {
		if err := user.CheckID(p.Name); err != nil {
			return Refuse(wire.CodeInvalidStructure, "%v", err)
		}
	}
	for _, c := range caps {
		if !c.Valid() {
			return Refuse(wire.CodeInvalidStructure, "capability %q is not one of the seventeen", c)
		}
	}
	return e.commit(func(t *tx) error {
		ts := clock.Format(t.next())
		var events []user.Event
		if p.Kind != principal.KindUser {
			events = []user.Event{{Type: trail.EventUserCreated, Body: map[string]any{"user_id": p.Name, "created_by": actor, "timestamp": nil}}}
		} else {
			u, ok := t.user(p.Name)
			var err error
			if !ok {
				u, events, err = user.New(p.Name, actor, ts, caps...)
			} else {
				for _, c := range caps {
					var ev []user.Event
					if u, ev, err = user.Grant(u, c, actor, ts); err != nil {
						break
					}
					events = append(events, ev...)
				}
			}
			if err != nil {
				return err
			}
			if len(events) > 0 {
				if err := t.putUser(u); err != nil {
					return err
				}
			}
		}
		for _, ev := range events {
			if _, err := t.append("", e.actorOf(a), ev.Type, ev.Body); err != nil {
				return err
			}
		}
		return write(Grants{t.txn})
	})
}

package runtime

import (
	"context"
	"slices"

	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Priorities and groups (WACP Workspace §4 "Priority changes", §9). A
// workspace joins at most one group, named by the group field of its
// create request, and stays in it; groups are flat. The coordinator aborts
// a group's non-terminal workspaces (batch_abort) or changes the priority
// of its active and blocked ones (batch_priority_changed) in one commit,
// the members in id order; a member that is terminal, or for a priority
// change not active or blocked, is skipped and listed as such. A member a
// cascade of an earlier member's abort failed is skipped too. Batch
// operations are the coordinator's (§9); a delegate changes the priority
// of a workspace of its subtree one at a time (SetPriority).

// priorityMixed is batch_priority_changed's old_priority when the
// affected members had different priorities.
const priorityMixed = "mixed"

// SetPriority changes the priority of an active or blocked workspace for
// the agent of actor (the coordinator, or a delegate over it):
// priority_changed {workspace_id, old_priority, new_priority} in its
// trail. The same priority again changes and writes nothing.
func (e *Engine) SetPriority(ctx context.Context, actor, id, priority string) (*workspace.Workspace, error) {
	if !workspace.ValidPriority(priority) {
		return nil, Refuse(wire.CodeInvalidStructure, "priority %q is not one of critical, interactive, normal, background", priority)
	}
	return e.coordinate(ctx, actor, id, func(w *workspace.Workspace) error {
		if !workspace.PriorityChangeable(w.State) {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is %s; priority changes only while active or blocked", id, w.State)
		}
		return nil
	}, func(t *tx, a, c *workspace.Workspace) error {
		return t.setPriority(c, e.actorOf(a), priority)
	})
}

// setPriority moves c (a tx copy) to priority p for actor, writing
// priority_changed; nothing when it has p already.
func (t *tx) setPriority(c *workspace.Workspace, actor, p string) error {
	if c.Priority == p {
		return nil
	}
	_, err := t.append(c.ID, actor, trail.EventPriorityChanged, map[string]any{
		"workspace_id": c.ID, "old_priority": c.Priority, "new_priority": p,
	})
	if err != nil {
		return err
	}
	c.Priority = p
	return t.put(c)
}

// groupMembers returns the workspaces of group g as t sees them, in id
// order.
func (t *tx) groupMembers(g string) []*workspace.Workspace {
	all, _ := t.snapshot()
	var out []*workspace.Workspace
	for _, w := range all {
		if w.Group == g {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b *workspace.Workspace) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// batch runs a batch operation of the coordinator actor on group g: fn
// does it in one commit and returns the entry's body; the entry goes to
// the coordinator's trail.
func (e *Engine) batch(ctx context.Context, actor, g string, typ trail.EventType, fn func(t *tx, members []*workspace.Workspace, by string) (map[string]any, wire.Batch, error)) (wire.Batch, error) {
	if g == "" {
		return wire.Batch{}, Refuse(wire.CodeInvalidStructure, "group is required")
	}
	// A group abort takes precedence as an abort (precedence.go).
	return runLane(ctx, e, typ == trail.EventBatchAbort, 0, func() (wire.Batch, error) {
		a := e.get(actor)
		switch {
		case a == nil:
			return wire.Batch{}, Refuse(wire.CodeNotFound, "workspace %s does not exist", actor)
		case !a.IsRoot():
			return wire.Batch{}, Refuse(wire.CodePermissionDenied, "batch operations on a group are the coordinator's")
		case a.State.Terminal():
			return wire.Batch{}, Refuse(wire.CodePermissionDenied, "workspace %s is %s and acts on nothing", actor, a.State)
		}
		var out wire.Batch
		err := e.commit(func(t *tx) error {
			members := t.groupMembers(g)
			if len(members) == 0 {
				return Refuse(wire.CodeNotFound, "group %q has no workspaces", g)
			}
			body, res, err := fn(t, members, e.actorOf(a))
			if err != nil {
				return err
			}
			out = res
			_, err = t.append(actor, e.actorOf(a), typ, body)
			return err
		})
		return out, err
	})
}

// BatchAbort aborts every non-terminal workspace of group g for the
// coordinator actor (WACP Workspace §9): each gets the failed signal and
// the transition with reason batch_abort (the caller's reason as the
// transition's detail) and its failure cascade; then batch_abort
// {group_id, affected_workspaces, skipped_workspaces} in the coordinator's
// trail.
func (e *Engine) BatchAbort(ctx context.Context, actor, g, reason string) (wire.Batch, error) {
	const why = "batch_abort"
	return e.batch(ctx, actor, g, trail.EventBatchAbort, func(t *tx, members []*workspace.Workspace, by string) (map[string]any, wire.Batch, error) {
		plan := workspace.PlanBatchAbort(members)
		res := wire.Batch{GroupID: g, Affected: []string{}, Skipped: plan.Skipped}
		for _, id := range plan.Affected {
			c := t.ws(id)
			if c.State.Terminal() { // an earlier member's cascade failed it
				res.Skipped = append(res.Skipped, id)
				continue
			}
			if _, err := t.emit(c, taxonomy.SignalFailed, why, "", trail.ActorProtocol); err != nil {
				return nil, res, err
			}
			t.detail = reason
			if err := t.transition(c, workspace.BatchAbort, by, why, false); err != nil {
				return nil, res, err
			}
			res.Affected = append(res.Affected, id)
		}
		slices.Sort(res.Skipped)
		return map[string]any{
			"group_id": g, "affected_workspaces": res.Affected, "skipped_workspaces": res.Skipped,
		}, res, nil
	})
}

// BatchPriority sets the priority of the active and blocked workspaces of
// group g to p for the coordinator actor: priority_changed for each whose
// priority changes, then batch_priority_changed {group_id, old_priority,
// new_priority, affected_workspaces, skipped_workspaces} in the
// coordinator's trail (old_priority "mixed" when the affected workspaces
// had different ones).
func (e *Engine) BatchPriority(ctx context.Context, actor, g, p string) (wire.Batch, error) {
	if !workspace.ValidPriority(p) {
		return wire.Batch{}, Refuse(wire.CodeInvalidStructure, "priority %q is not one of critical, interactive, normal, background", p)
	}
	return e.batch(ctx, actor, g, trail.EventBatchPriorityChanged, func(t *tx, members []*workspace.Workspace, by string) (map[string]any, wire.Batch, error) {
		plan, err := workspace.PlanBatchPriority(members, p)
		if err != nil {
			return nil, wire.Batch{}, Refuse(wire.CodeInvalidStructure, "%v", err)
		}
		res := wire.Batch{GroupID: g, NewPriority: p, Affected: plan.Affected, Skipped: plan.Skipped}
		old := ""
		for _, id := range plan.Affected {
			c := t.ws(id)
			switch {
			case old == "":
				old = c.Priority
			case old != c.Priority:
				old = priorityMixed
			}
			if err := t.setPriority(c, by, p); err != nil {
				return nil, res, err
			}
		}
		if old == "" {
			old = p // nothing affected: nothing changed
		}
		res.OldPriority = old
		return map[string]any{
			"group_id": g, "old_priority": old, "new_priority": p,
			"affected_workspaces": res.Affected, "skipped_workspaces": res.Skipped,
		}, res, nil
	})
}

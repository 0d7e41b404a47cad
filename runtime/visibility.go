package runtime

import (
	"context"
	"errors"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// GrantVisibility adds target to the visibility set of workspace id, for
// the agent of actor (WACP Workspace §8, Visibility §4): the coordinator
// on any workspace, a delegate on its subtree (authorize). The grantee
// must be active or blocked; the target may be in any state. The grant is
// scoped to the grantor's own visibility (VI-4) and keeps the grantee
// within its parent's (VI-3): both must see the target (a workspace sees
// its visibility set and its subtree; the coordinator sees all). It writes
// visibility_granted {workspace_id, target, reason} in the grantee's
// trail; from that commit on the grantee reads the target's checkpoints,
// trail and record. Nothing revokes a grant.
//
// A target the grantor may not see is refused as one that does not exist
// (not_found, the same message), so a grant does not reveal which ids
// exist.
func (e *Engine) GrantVisibility(ctx context.Context, actor, id, target, reason string) (*workspace.Workspace, error) {
	if reason == "" {
		return nil, Refuse(wire.CodeInvalidStructure, "reason is required: it is recorded in visibility_granted")
	}
	if target == "" {
		return nil, Refuse(wire.CodeInvalidStructure, "target is required")
	}
	return e.coordinate(ctx, actor, id, func(w *workspace.Workspace) error {
		if e.get(target) == nil || !e.canSee(actor, target) {
			return Refuse(wire.CodeNotFound, "workspace %s does not exist", target)
		}
		if p := w.ParentID(); p != "" && !e.canSee(p, target) {
			return Refuse(wire.CodePermissionDenied, "%s's parent %s does not see %s: a child sees no more than its parent", id, p, target)
		}
		return grantError(workspace.Grant(w.Clone(), target))
	}, func(t *tx, a, c *workspace.Workspace) error {
		if err := workspace.Grant(c, target); err != nil {
			return grantError(err)
		}
		_, err := t.append(id, e.actorOf(a), trail.EventVisibilityGranted, map[string]any{
			"workspace_id": id, "target": target, "reason": reason,
		})
		if err != nil {
			return err
		}
		return t.put(c)
	})
}

// grantError maps workspace.Grant's errors to the wire's codes.
func grantError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workspace.ErrInvalidTransition):
		return Refuse(wire.CodeInvalidTransition, "%v", err)
	default:
		return Refuse(wire.CodeInvalidStructure, "%v", err)
	}
}

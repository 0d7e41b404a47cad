package runtime

import (
	"context"
	"fmt"

	"github.com/wacpd/wacpd/integrity"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// ReadTrail returns the trail entries the agent of actor may read (WACP
// Trail §5): the coordinator reads the global trail with any filter; any
// other agent reads its own trail, and the trail of a workspace it can see
// (its visibility set and its subtree) when it names one. A query outside
// the caller's scope returns no entries, not an error, and records
// trail_access_denied.
func (e *Engine) ReadTrail(ctx context.Context, actor string, q trail.Query) ([]trail.Entry, string, error) {
	e.mu.Lock()
	a := e.get(actor)
	denied := a != nil && !a.IsRoot() && q.Workspace != "" && (e.get(q.Workspace) == nil || !e.canSee(actor, q.Workspace))
	e.mu.Unlock()
	switch {
	case a == nil:
		return nil, "", Refuse(wire.CodeNotFound, "workspace %s does not exist", actor)
	case a.IsRoot():
		return e.Trail().Read(ctx, q)
	case denied:
		err := e.run(ctx, 0, func() error {
			return e.commit(func(t *tx) error {
				_, err := t.append(actor, e.actorOf(a), trail.EventTrailAccessDenied, map[string]any{
					"requester": actor, "role": a.Role, "target": q.Workspace, "reason": "out_of_scope",
				})
				return err
			})
		})
		return nil, "", err
	}
	if q.Workspace == "" {
		q.Workspace = actor
	}
	return e.Trail().Read(ctx, q)
}

// VerifyTrail verifies the stored database with integrity.Check, every
// structure read (the recovery check's full form, against the latest signed
// tree head), or only workspace ws's chain when set (traillog.Log.Verify).
// A full verify that passes moves the running check's mark (mark.go).
func (e *Engine) VerifyTrail(ctx context.Context, ws string) (trail.VerifyResult, error) {
	if err := e.settle(ctx); err != nil {
		return trail.VerifyResult{}, err
	}
	if ws != "" {
		return e.log.Verify(ctx, ws)
	}
	opts := integrity.Options{Full: true, Seg: e.seg, Opened: e.opened}
	th, err := e.TreeHead()
	switch {
	case err == nil:
		root, err := trail.HashBytes(th.Root)
		if err != nil {
			return trail.VerifyResult{FirstBad: string(keySTH), Violation: trail.ViolationRootMismatch,
				Detail: fmt.Sprintf("the signed tree head has no valid root: %v", err)}, nil
		}
		opts.SignedSize, opts.SignedRoot = th.Size, root
	case Code(err) != wire.CodeNotFound:
		return trail.VerifyResult{}, err
	}
	rep, moved, err := e.marker.Verify(ctx, opts)
	switch {
	case err != nil && !rep.OK: // the check could not run
		return trail.VerifyResult{}, fmt.Errorf("verify: %w", err)
	case err != nil:
		e.lg.Warn("verify: move the trail's mark", "err", err)
	case moved:
		e.marks.Add(1)
	}
	return rep.Verdict(), nil
}

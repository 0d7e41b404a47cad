package runtime

import (
	"context"

	"github.com/wacpd/wacpd/trail"
)

// ReadTrail returns the trail entries the agent of actor may read (WACP
// Trail §5): the coordinator reads the global trail with any filter; any
// other agent reads its own trail, and the trail of a workspace it can see
// (its visibility set and its subtree) when it names one. A query outside
// the caller's scope returns no entries, not an error, and records
// trail_access_denied.
func (e *Engine) ReadTrail(ctx context.Context, actor string, q trail.Query) ([]trail.Entry, string, error) {
	e.mu.Lock()
	a := e.ws[actor]
	if a == nil {
		e.mu.Unlock()
		return nil, "", refuse(CodeNotFound, "workspace %s does not exist", actor)
	}
	if a.IsRoot() {
		e.mu.Unlock()
		return e.log.Read(ctx, q)
	}
	if q.Workspace != "" && (e.ws[q.Workspace] == nil || !e.canSee(actor, q.Workspace)) {
		err := e.commit(func(t *tx) error {
			_, err := t.append(actor, e.actorOf(a), trail.EventTrailAccessDenied, map[string]any{
				"requester": actor, "role": a.Role, "target": q.Workspace, "reason": "out_of_scope",
			})
			return err
		})
		e.mu.Unlock()
		return nil, "", err
	}
	e.mu.Unlock()
	if q.Workspace == "" {
		q.Workspace = actor
	}
	return e.log.Read(ctx, q)
}

// VerifyTrail checks the trail's hash chains: the global chain and every
// workspace chain, or only workspace ws's when set.
func (e *Engine) VerifyTrail(ctx context.Context, ws string) (trail.VerifyResult, error) {
	return e.log.Verify(ctx, ws)
}

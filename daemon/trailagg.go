package daemon

import (
	"context"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// auditAggregate answers audit.trail.aggregate: count, group and sum over
// the entries audit.trail.read's filters select, scoped as audit.trail.read
// is (a user's view_trail scope; a workspace not the user's is refused and
// recorded the same way).
func (r *Daemon) auditAggregate(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TrailAggregateRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if err := checkFilters(req.EventType, &req.Since, &req.Until); err != nil {
		return nil, err
	}
	a, err := trail.ParseAggregation(req.GroupBy, req.Sum)
	if err != nil {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "%v", err)
	}
	keep, err := r.userScope(ctx, c, req.Workspace, false)
	if err != nil {
		return nil, err
	}
	return r.eng.AggregateTrail(ctx, trail.Query{
		Workspace: req.Workspace, EventType: req.EventType, Actor: req.Actor,
		Since: req.Since, Until: req.Until, Body: req.Body, Keep: keep,
	}, a)
}

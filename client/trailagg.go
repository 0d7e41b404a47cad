package client

import (
	"context"

	"github.com/wacpd/wacpd/wire"
)

type (
	// TrailAggregateRequest selects entries as TrailQuery does and says
	// what to compute over them (audit.trail.aggregate).
	TrailAggregateRequest = wire.TrailAggregateRequest
	// TrailAggregate is its answer: the count, the sum, the groups.
	TrailAggregate = wire.TrailAggregate
)

// AggregateTrail counts, groups and sums the trail entries q selects
// (audit.trail.aggregate; coordinator, user or auditor token, a user's
// answer over what it may read).
func (c *Client) AggregateTrail(ctx context.Context, q TrailAggregateRequest) (TrailAggregate, error) {
	var out TrailAggregate
	err := c.call(ctx, wire.Subject("audit.trail.aggregate"), q, &out, 0)
	return out, err
}

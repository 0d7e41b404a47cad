package wire

import "github.com/wacpd/wacpd/trail"

// TrailAggregateRequest is the body of audit.trail.aggregate (WACP Trail §5
// aggregate queries): the filters of audit.trail.read, AND-combined, and
// what to compute over the entries they select besides their count: the
// field to group them by (event_type, workspace, actor or body.<path>) and
// the numeric body field to sum (body.<path>).
type TrailAggregateRequest struct {
	Workspace string            `json:"workspace,omitempty"`
	EventType trail.EventType   `json:"event_type,omitempty"`
	Actor     string            `json:"actor,omitempty"`
	Since     string            `json:"since,omitempty"` // RFC 3339, inclusive
	Until     string            `json:"until,omitempty"` // RFC 3339, exclusive
	Body      map[string]string `json:"body,omitempty"`
	GroupBy   string            `json:"group_by,omitempty"`
	Sum       string            `json:"sum,omitempty"`
}

// TrailAggregate is the reply of audit.trail.aggregate.
type TrailAggregate = trail.AggregateResult

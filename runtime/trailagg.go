package runtime

import (
	"context"
	"errors"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// AggregateTrail counts, groups and sums the entries q selects (WACP Trail
// §5 aggregate queries): its filters AND-combined, q.Keep the reader's
// scope as for a read; q.After, Limit and MaxBytes do not apply. It reads
// the trail once, in one snapshot that holds every entry answered before
// it began (real-time: what a run has committed so far), the whole trail
// or, with q.Workspace, that workspace's entries. Past
// trail.MaxAggregateScan entries read or trail.MaxAggregateGroups groups it
// is refused too_large, with nothing returned.
func (e *Engine) AggregateTrail(ctx context.Context, q trail.Query, a trail.Aggregation) (trail.AggregateResult, error) {
	agg := trail.NewAggregator(a)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		scanned int
		stop    error
	)
	// The scan's query has only the workspace, which picks the index it
	// walks; Keep sees every entry of it, counts it, folds those q
	// matches and takes none (the read returns no entries).
	scan := trail.Query{Workspace: q.Workspace, Limit: 1, Keep: func(en trail.Entry) bool {
		if stop != nil {
			return false
		}
		if scanned++; scanned > trail.MaxAggregateScan {
			stop = &trail.LimitError{What: "entries scanned", Limit: trail.MaxAggregateScan}
		} else if q.Match(en) {
			stop = agg.Add(en)
		}
		if stop != nil {
			cancel(stop)
		}
		return false
	}}
	_, _, err := e.Trail().Read(ctx, scan)
	var le *trail.LimitError
	switch {
	case errors.As(stop, &le):
		return trail.AggregateResult{}, &Error{Code: wire.CodeTooLarge, Err: le,
			Message: le.Error() + ": narrow it with workspace, event_type, since or until, or a group_by with fewer values"}
	case stop != nil:
		return trail.AggregateResult{}, stop
	case err != nil:
		return trail.AggregateResult{}, err
	}
	return agg.Result(), nil
}

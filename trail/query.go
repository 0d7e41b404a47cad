package trail

import "encoding/json"

// DefaultLimit and MaxLimit bound the entries one Read returns.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Query selects entries of the global  Zero fields do not filter; set
// fields are AND-combined.
type Query struct {
	After     string    // entry id; return entries after it
	Limit     int       // 0 = DefaultLimit; capped at MaxLimit
	Workspace string    // only this workspace's entries
	EventType EventType // only this event type
	Actor     string    // only this actor
	Since     string    // timestamp, inclusive
	Until     string    // timestamp, exclusive
	// Body selects entries whose body has each of these top-level fields
	// with this value (a string field equal to it, or any other JSON value
	// whose text equals it).
	Body map[string]string
	// MaxBytes, if positive, ends a page before the entry that would take
	// the page's JSON past it (estimated by the reader); the first entry is
	// always taken.
	MaxBytes int
	// Keep, if set, selects entries besides the filters above (a reader's
	// scope: what a user may see).
	Keep func(Entry) bool
}

// Match reports whether q selects e.
func (q Query) Match(e Entry) bool {
	return (q.Workspace == "" || e.Workspace == q.Workspace) &&
		(q.EventType == "" || e.EventType == q.EventType) &&
		(q.Actor == "" || e.Actor == q.Actor) &&
		(q.Since == "" || e.Timestamp >= q.Since) &&
		(q.Until == "" || e.Timestamp < q.Until) &&
		q.matchBody(e.Body) && (q.Keep == nil || q.Keep(e))
}

func (q Query) matchBody(body json.RawMessage) bool {
	if len(q.Body) == 0 {
		return true
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return false
	}
	for k, want := range q.Body {
		v, ok := fields[k]
		if !ok {
			return false
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			if s != want {
				return false
			}
		} else if string(v) != want {
			return false
		}
	}
	return true
}

// PageSize returns the most entries a page for q holds.
func (q Query) PageSize() int {
	switch {
	case q.Limit <= 0:
		return DefaultLimit
	case q.Limit > MaxLimit:
		return MaxLimit
	}
	return q.Limit
}

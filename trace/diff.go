package trace

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Kinds of Change.
const (
	Changed = "changed" // the path has different values in a and b
	Added   = "added"   // the path, or the whole event, is only in b
	Removed = "removed" // the path, or the whole event, is only in a
)

// Change is one difference between two sessions' events (Diff).
type Change struct {
	Index int    `json:"index"` // the event's index, from 0, in both sessions
	Path  string `json:"path"`  // what differs: "event_type", "payload.decision.type", "payload.actions[1]"; "" for a whole event
	Kind  string `json:"kind"`  // Changed, Added or Removed
	// A and B are the values in a and in b, as JSON decodes them (a
	// number is a float64); nil where Kind says the value is absent. For a
	// whole event, the value is its event_type.
	A any `json:"a"`
	B any `json:"b"`
}

// String returns the change on one line:
//
//	event 3: payload.decision.type: "allow" -> "deny"
//	event 3: payload.reason: (none) -> "quota"
//	event 7: only in a (action.executed)
func (c Change) String() string {
	if c.Path == "" {
		side, typ := "a", c.A
		if c.Kind == Added {
			side, typ = "b", c.B
		}
		return fmt.Sprintf("event %d: only in %s (%v)", c.Index, side, typ)
	}
	show := func(v any, present bool) string {
		if !present {
			return "(none)"
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
	return fmt.Sprintf("event %d: %s: %s -> %s", c.Index, c.Path, show(c.A, c.Kind != Added), show(c.B, c.Kind != Removed))
}

// Diff compares two sessions event by event, in order, and returns what
// differs: the fields of the i-th event of a against those of the i-th of
// b, then each event one of them has beyond the other's end (Path "",
// Added or Removed). It ignores what differs between any two runs of the
// same session: the event's event_id, trace_id, span_id, parent_span_id,
// session_id, timestamp, previous_event_hash and event_hash, and, at any
// depth of the payload, every member named timestamp, duration_ms or
// evaluation_time_ms, every id a run makes anew (event, request,
// resolution, execution, trace, span, session, evidence, agent and
// checkpoint instance ids),
// and every member whose name ends in _hash or _at. What names what the
// atlas holds (action_id, policy_id, block_id, atlas_id) is compared. It
// compares trace_version, sequence,
// event_type and every other member of the payloads, reporting each path
// that differs. Numbers compare as JSON numbers (1 and 1.0 are equal); a
// payload that is not JSON is compared byte for byte.
func Diff(a, b []Event) []Change {
	d := &differ{}
	for i := range min(len(a), len(b)) {
		d.event(i, a[i], b[i])
	}
	for i := len(b); i < len(a); i++ {
		d.out = append(d.out, Change{Index: i, Kind: Removed, A: a[i].EventType})
	}
	for i := len(a); i < len(b); i++ {
		d.out = append(d.out, Change{Index: i, Kind: Added, B: b[i].EventType})
	}
	return d.out
}

// dynamic reports whether a payload member named name is left out of
// Diff's comparison: a value that differs between runs of one session.
func dynamic(name string) bool {
	switch name {
	case "timestamp", "duration_ms", "evaluation_time_ms",
		"event_id", "request_id", "resolution_id", "execution_id", "trace_id", "span_id", "parent_span_id",
		"session_id", "evidence_id", "agent_id", "workspace", "instance_id":
		return true
	}
	return strings.HasSuffix(name, "_hash") || strings.HasSuffix(name, "_at")
}

// differ collects the changes of one Diff.
type differ struct {
	index int // the events being compared
	out   []Change
}

func (d *differ) add(path, kind string, a, b any) {
	d.out = append(d.out, Change{Index: d.index, Path: path, Kind: kind, A: a, B: b})
}

func (d *differ) event(i int, a, b Event) {
	d.index = i
	if a.TraceVersion != b.TraceVersion {
		d.add("trace_version", Changed, a.TraceVersion, b.TraceVersion)
	}
	if a.Sequence != b.Sequence {
		d.add("sequence", Changed, a.Sequence, b.Sequence)
	}
	if a.EventType != b.EventType {
		d.add("event_type", Changed, a.EventType, b.EventType)
	}
	var x, y any
	if json.Unmarshal(a.Payload, &x) != nil || json.Unmarshal(b.Payload, &y) != nil {
		if string(a.Payload) != string(b.Payload) {
			d.add("payload", Changed, string(a.Payload), string(b.Payload))
		}
		return
	}
	d.value("payload", x, y)
}

// value compares x and y, decoded JSON values at path.
func (d *differ) value(path string, x, y any) {
	switch xv := x.(type) {
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok {
			break
		}
		for _, k := range slices.Sorted(maps.Keys(union(xv, yv))) {
			if dynamic(k) {
				continue
			}
			p := path + member(k)
			xe, inX := xv[k]
			ye, inY := yv[k]
			switch {
			case !inY:
				d.add(p, Removed, xe, nil)
			case !inX:
				d.add(p, Added, nil, ye)
			default:
				d.value(p, xe, ye)
			}
		}
		return
	case []any:
		yv, ok := y.([]any)
		if !ok {
			break
		}
		for i := range max(len(xv), len(yv)) {
			p := path + "[" + strconv.Itoa(i) + "]"
			switch {
			case i >= len(yv):
				d.add(p, Removed, xv[i], nil)
			case i >= len(xv):
				d.add(p, Added, nil, yv[i])
			default:
				d.value(p, xv[i], yv[i])
			}
		}
		return
	}
	if !reflect.DeepEqual(x, y) {
		d.add(path, Changed, x, y)
	}
}

func union(a, b map[string]any) map[string]any {
	u := maps.Clone(a)
	maps.Copy(u, b)
	return u
}

// member returns the path step of member k: .k for a name of letters,
// digits and underscores, else ["k"].
func member(k string) string {
	plain := k != ""
	for i, r := range k {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

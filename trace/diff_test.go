package trace_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/wacpd/wacpd/trace"
)

// session returns a sealed session of events with the given types and
// payloads (type, payload, type, payload, ...), under session id sess.
func session(t testing.TB, sess string, typesAndPayloads ...string) []trace.Event {
	t.Helper()
	var out []trace.Event
	for i := 0; i+1 < len(typesAndPayloads); i += 2 {
		parent := fmt.Sprint(sess, "-parent")
		e := trace.Event{EventID: fmt.Sprint(sess, "-e", i), TraceID: sess + "-t", SpanID: fmt.Sprint(sess, "-s", i), ParentSpanID: &parent,
			SessionID: sess, Timestamp: fmt.Sprintf("2024-12-28T12:00:%02d.000000Z", i), EventType: typesAndPayloads[i],
			Payload: json.RawMessage(typesAndPayloads[i+1])}
		var prev *trace.Event
		if len(out) > 0 {
			prev = &out[len(out)-1]
		}
		sealed, err := trace.Seal(e, prev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sealed)
	}
	return out
}

func TestDiff(t *testing.T) {
	const (
		req = "carp.request.received"
		res = "carp.resolution.completed"
		exe = "action.executed"
	)
	tests := []struct {
		name string
		a, b []string // types and payloads
		want []trace.Change
	}{
		{"same", []string{req, `{"goal":"x"}`, res, `{"decision":{"type":"allow"}}`}, []string{req, `{"goal":"x"}`, res, `{"decision":{"type":"allow"}}`}, nil},
		{"empty", nil, nil, nil},
		{"dynamic members at any depth", []string{res, `{"request_id":"r1","goal_hash":"h1","expires_at":"t1","timestamp":"t1","duration_ms":3,` +
			`"evaluation_time_ms":1.5,"decision":{"resolution_id":"x1","type":"allow"},"actions":[{"action_id":"a1","ok":true}]}`},
			[]string{res, `{"request_id":"r2","goal_hash":"h2","expires_at":"t2","timestamp":"t2","duration_ms":9,` +
				`"decision":{"resolution_id":"x2","type":"allow"},"actions":[{"action_id":"a1","ok":true}],"created_at":"now"}`}, nil},
		{"an atlas's ids are compared", []string{res, `{"actions":[{"action_id":"a1"}]}`}, []string{res, `{"actions":[{"action_id":"a2"}]}`},
			[]trace.Change{{Path: "payload.actions[0].action_id", Kind: trace.Changed, A: "a1", B: "a2"}}},
		{"formatting and number spelling", []string{req, `{"n":1,"m":[1,2]}`}, []string{req, `{ "m": [1.0, 2e0], "n": 1.00 }`}, nil},
		{"event type", []string{req, `{}`, res, `{}`}, []string{req, `{}`, exe, `{}`},
			[]trace.Change{{Index: 1, Path: "event_type", Kind: trace.Changed, A: res, B: exe}}},
		{"nested member", []string{res, `{"decision":{"type":"allow","reason":"ok"}}`}, []string{res, `{"decision":{"type":"deny","reason":"ok"}}`},
			[]trace.Change{{Path: "payload.decision.type", Kind: trace.Changed, A: "allow", B: "deny"}}},
		{"array element", []string{res, `{"actions":["ticket.get","ticket.list"]}`}, []string{res, `{"actions":["ticket.get","ticket.delete"]}`},
			[]trace.Change{{Path: "payload.actions[1]", Kind: trace.Changed, A: "ticket.list", B: "ticket.delete"}}},
		{"array longer and shorter", []string{res, `{"x":[1],"y":[1,2,3]}`}, []string{res, `{"x":[1,2],"y":[1]}`},
			[]trace.Change{{Path: "payload.x[1]", Kind: trace.Added, B: 2.0},
				{Path: "payload.y[1]", Kind: trace.Removed, A: 2.0}, {Path: "payload.y[2]", Kind: trace.Removed, A: 3.0}}},
		{"member added and removed", []string{res, `{"gone":true,"same":1}`}, []string{res, `{"new":null,"same":1}`},
			[]trace.Change{{Path: "payload.gone", Kind: trace.Removed, A: true}, {Path: "payload.new", Kind: trace.Added}}},
		{"kind of value", []string{res, `{"v":{"a":1},"w":[1],"z":null}`}, []string{res, `{"v":[1],"w":"1","z":0}`},
			[]trace.Change{{Path: "payload.v", Kind: trace.Changed, A: map[string]any{"a": 1.0}, B: []any{1.0}},
				{Path: "payload.w", Kind: trace.Changed, A: []any{1.0}, B: "1"}, {Path: "payload.z", Kind: trace.Changed, A: nil, B: 0.0}}},
		{"member names that are not words", []string{res, `{"a.b":1,"":2,"1x":3,"é":4}`}, []string{res, `{"a.b":5,"":6,"1x":7,"é":8}`},
			[]trace.Change{{Path: `payload[""]`, Kind: trace.Changed, A: 2.0, B: 6.0}, {Path: `payload["1x"]`, Kind: trace.Changed, A: 3.0, B: 7.0},
				{Path: `payload["a.b"]`, Kind: trace.Changed, A: 1.0, B: 5.0}, {Path: `payload["é"]`, Kind: trace.Changed, A: 4.0, B: 8.0}}},
		{"changes of several events, in order", []string{req, `{"goal":"a"}`, res, `{"n":1}`}, []string{req, `{"goal":"b"}`, exe, `{"n":2}`},
			[]trace.Change{{Index: 0, Path: "payload.goal", Kind: trace.Changed, A: "a", B: "b"},
				{Index: 1, Path: "event_type", Kind: trace.Changed, A: res, B: exe}, {Index: 1, Path: "payload.n", Kind: trace.Changed, A: 1.0, B: 2.0}}},
		{"events missing at the end", []string{req, `{}`, res, `{}`, exe, `{}`}, []string{req, `{}`},
			[]trace.Change{{Index: 1, Kind: trace.Removed, A: res}, {Index: 2, Kind: trace.Removed, A: exe}}},
		{"events extra at the end", []string{req, `{}`}, []string{req, `{}`, exe, `{}`},
			[]trace.Change{{Index: 1, Kind: trace.Added, B: exe}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := session(t, "one", tt.a...), session(t, "two", tt.b...)
			if got := trace.Diff(a, b); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Diff(a, b) = %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// TestDiffEnvelope: the envelope's dynamic fields are ignored, the others
// compared; a payload that is not JSON is compared as bytes.
func TestDiffEnvelope(t *testing.T) {
	a := session(t, "one", "x", `{}`)
	b := session(t, "two", "x", `{}`)
	if got := trace.Diff(a, b); got != nil {
		t.Fatalf("sessions differing in ids, times and hashes: Diff = %v, want none", got)
	}
	b[0].TraceVersion, b[0].Sequence, b[0].ParentSpanID = "1.1", 4, nil
	want := []trace.Change{{Path: "trace_version", Kind: trace.Changed, A: "1.0", B: "1.1"},
		{Path: "sequence", Kind: trace.Changed, A: uint64(0), B: uint64(4)}}
	if got := trace.Diff(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %#v, want %#v", got, want)
	}
	a[0].Payload, b[0].Payload = json.RawMessage(`{"x":`), json.RawMessage(`{"x":`)
	if got := trace.Diff(a[:1], a[:1]); got != nil {
		t.Errorf("the same malformed payload: Diff = %v, want none", got)
	}
	b[0].TraceVersion, b[0].Sequence, b[0].Payload = "1.0", 0, json.RawMessage(`{"y":1}`)
	want = []trace.Change{{Path: "payload", Kind: trace.Changed, A: `{"x":`, B: `{"y":1}`}}
	if got := trace.Diff(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("a malformed payload against another: Diff = %#v, want %#v", got, want)
	}
}

func TestChangeString(t *testing.T) {
	for _, tt := range []struct {
		c    trace.Change
		want string
	}{
		{trace.Change{Index: 3, Path: "payload.decision.type", Kind: trace.Changed, A: "allow", B: "deny"}, `event 3: payload.decision.type: "allow" -> "deny"`},
		{trace.Change{Index: 0, Path: "payload.reason", Kind: trace.Added, B: "quota"}, `event 0: payload.reason: (none) -> "quota"`},
		{trace.Change{Index: 0, Path: "payload.actions[2]", Kind: trace.Removed, A: map[string]any{"n": 1.0}}, `event 0: payload.actions[2]: {"n":1} -> (none)`},
		{trace.Change{Index: 1, Path: "payload.z", Kind: trace.Changed, A: nil, B: 0.0}, `event 1: payload.z: null -> 0`},
		{trace.Change{Index: 7, Kind: trace.Removed, A: "action.executed"}, `event 7: only in a (action.executed)`},
		{trace.Change{Index: 7, Kind: trace.Added, B: "action.failed"}, `event 7: only in b (action.failed)`},
	} {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.c, got, tt.want)
		}
	}
}

// FuzzDiff: a session against itself has no changes, and Diff(b, a) is
// Diff(a, b) with the sides swapped.
func FuzzDiff(f *testing.F) {
	f.Add(`{"decision":{"type":"allow"},"actions":[1,2]}`, `{"decision":{"type":"deny"},"actions":[1],"request_id":"x"}`)
	f.Add(`{"a":{"b":[{"c":null}]}}`, `{"a":{"b":[{"c":false},2]}}`)
	f.Add(`{"x":1}`, `{"x":`)
	f.Fuzz(func(t *testing.T, pa, pb string) {
		a := []trace.Event{{EventType: "x", Payload: json.RawMessage(pa)}}
		b := []trace.Event{{EventType: "x", Payload: json.RawMessage(pb)}, {EventType: "y", Payload: json.RawMessage(`{}`)}}
		if got := trace.Diff(a, a); got != nil {
			t.Fatalf("Diff(a, a) = %v, want none", got)
		}
		ab, ba := trace.Diff(a, b), trace.Diff(b, a)
		if len(ab) != len(ba) {
			t.Fatalf("Diff(a, b) = %v, Diff(b, a) = %v: not the same changes", ab, ba)
		}
		swap := map[string]string{trace.Changed: trace.Changed, trace.Added: trace.Removed, trace.Removed: trace.Added}
		for i, c := range ab {
			r := ba[i]
			if c.Index != r.Index || c.Path != r.Path || swap[c.Kind] != r.Kind || !reflect.DeepEqual(c.A, r.B) || !reflect.DeepEqual(c.B, r.A) {
				t.Fatalf("change %d: %#v one way, %#v the other", i, c, r)
			}
			_ = c.String()
		}
	})
}

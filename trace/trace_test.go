package trace_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/wacpd/wacpd/trace"
)

// The known vector of the TRACE/1.0 hash (issue 15).
func vector() trace.Event {
	return trace.Event{
		TraceVersion: "1.0",
		EventID:      "01234567-89ab-cdef-0123-456789abcdef",
		TraceID:      "11111111-1111-1111-1111-111111111111",
		SpanID:       "22222222-2222-2222-2222-222222222222",
		SessionID:    "33333333-3333-3333-3333-333333333333",
		Sequence:     0,
		Timestamp:    "2024-12-28T12:00:00.000000Z",
		EventType:    "session.started",
		// Not canonical as given: the hash is over the canonical form.
		Payload:           json.RawMessage(`{ "goal": "Test session",  "agent_id": "test-agent" }`),
		PreviousEventHash: trace.Genesis,
	}
}

func TestHashKnownVector(t *testing.T) {
	got, err := trace.Hash(vector())
	if err != nil {
		t.Fatal(err)
	}
	if want := "f5b4945b0bb5f9adc249a7062a5bf1bbcf6f095edbd8fb1503bbc2d5a05d19c5"; got != want {
		t.Fatalf("Hash(vector) = %s, want %s", got, want)
	}
	// Every field is in the hash.
	parent := "p"
	for name, change := range map[string]func(*trace.Event){
		"trace_version": func(e *trace.Event) { e.TraceVersion = "1.1" },
		"event_id":      func(e *trace.Event) { e.EventID += "0" },
		"trace_id":      func(e *trace.Event) { e.TraceID += "0" },
		"span_id":       func(e *trace.Event) { e.SpanID += "0" },
		"parent":        func(e *trace.Event) { e.ParentSpanID = &parent },
		"session_id":    func(e *trace.Event) { e.SessionID += "0" },
		"sequence":      func(e *trace.Event) { e.Sequence = 1 },
		"timestamp":     func(e *trace.Event) { e.Timestamp = "2024-12-28T12:00:00.000001Z" },
		"event_type":    func(e *trace.Event) { e.EventType = "session.ended" },
		"payload":       func(e *trace.Event) { e.Payload = json.RawMessage(`{"agent_id":"test-agent"}`) },
		"previous":      func(e *trace.Event) { e.PreviousEventHash = "1" + trace.Genesis[1:] },
	} {
		e := vector()
		change(&e)
		if h, _ := trace.Hash(e); h == got {
			t.Errorf("changing %s leaves the hash as it was", name)
		}
	}
	e := vector()
	e.Payload = json.RawMessage(`["not","an","object"]`)
	if _, err := trace.Hash(e); err == nil {
		t.Error("an array payload hashed")
	}
}

func chain(t *testing.T, n int) []trace.Event { return chainOf(t, n) }

func chainOf(t testing.TB, n int) []trace.Event {
	t.Helper()
	var out []trace.Event
	for i := range n {
		e := trace.Event{EventID: fmt.Sprint("e", i), TraceID: "t", SpanID: fmt.Sprint("s", i), SessionID: "sess",
			Timestamp: "2024-12-28T12:00:00.000000Z", EventType: "carp.request.received",
			Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		var prev *trace.Event
		if i > 0 {
			prev = &out[i-1]
		}
		sealed, err := trace.Seal(e, prev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sealed)
	}
	return out
}

// TestVerify: a sealed chain verifies; each kind of damage is reported
// with the index of the first invalid event.
func TestVerify(t *testing.T) {
	if v := trace.Verify(chain(t, 5)); v != nil {
		t.Fatalf("a sealed chain: %v", v)
	}
	if v := trace.Verify(nil); v != nil {
		t.Fatalf("an empty chain: %v", v)
	}
	for _, tt := range []struct {
		name   string
		damage func([]trace.Event) []trace.Event
		kind   string
		index  int
	}{
		{"payload changed", func(es []trace.Event) []trace.Event { es[3].Payload = json.RawMessage(`{"i":30}`); return es }, trace.HashMismatch, 3},
		{"hash rewritten to match, link broken", func(es []trace.Event) []trace.Event {
			es[2].Payload = json.RawMessage(`{"i":20}`)
			es[2].EventHash, _ = trace.Hash(es[2])
			return es
		}, trace.ChainBroken, 3},
		{"event removed", func(es []trace.Event) []trace.Event { return append(es[:2], es[3:]...) }, trace.SequenceGap, 2},
		{"sequence repeated", func(es []trace.Event) []trace.Event { es[4].Sequence = 3; return es }, trace.SequenceGap, 4},
		{"genesis not zero", func(es []trace.Event) []trace.Event { return es[1:] }, trace.InvalidGenesis, 0},
		{"genesis previous hash", func(es []trace.Event) []trace.Event {
			es[0].PreviousEventHash = es[1].EventHash
			return es
		}, trace.InvalidGenesis, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := trace.Verify(tt.damage(chain(t, 5)))
			if v == nil || v.Kind != tt.kind || v.Index != tt.index {
				t.Fatalf("Verify = %v, want %s at %d", v, tt.kind, tt.index)
			}
		})
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/trace"
)

// traceSession returns a sealed session of n events of session sess whose
// payloads say what payload(i) returns.
func traceSession(t *testing.T, sess string, n int, payload func(i int) string) []trace.Event {
	t.Helper()
	var out []trace.Event
	for i := range n {
		e := trace.Event{EventID: fmt.Sprint(sess, "-e", i), TraceID: sess + "-t", SpanID: fmt.Sprint(sess, "-s", i), SessionID: sess,
			Timestamp: fmt.Sprintf("2024-12-28T12:00:%02d.000000Z", i), EventType: "carp.request.received", Payload: json.RawMessage(payload(i))}
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

func writeTrace(t *testing.T, events []trace.Event) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := trace.WriteJSONL(f, events); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// offline are the global flags of a wacp that reaches no daemon: the trace
// commands must not try.
func offline(t *testing.T) []string {
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	return []string{"-data", t.TempDir()}
}

func TestTraceVerify(t *testing.T) {
	global := offline(t)
	good := func() []trace.Event {
		return traceSession(t, "sess-1", 5, func(i int) string { return fmt.Sprintf(`{"i":%d}`, i) })
	}
	if code, out, errs := wacp(t, append(global, "trace", "verify", writeTrace(t, good()))...); code != 0 || out != "ok: 5 events, session sess-1\n" {
		t.Errorf("trace verify (good) = %d, %q, %q; want 0 and ok: 5 events, session sess-1", code, out, errs)
	}
	if code, out, errs := wacp(t, append(global, "trace", "verify", writeTrace(t, nil))...); code != 0 || out != "ok: 0 events, session -\n" {
		t.Errorf("trace verify (empty) = %d, %q, %q; want 0 and ok: 0 events", code, out, errs)
	}
	tests := []struct {
		name   string
		damage func([]trace.Event) []trace.Event
		kind   string
		index  int
	}{
		{"payload changed", func(es []trace.Event) []trace.Event { es[3].Payload = json.RawMessage(`{"i":30}`); return es }, trace.HashMismatch, 3},
		{"hash rewritten, link broken", func(es []trace.Event) []trace.Event {
			es[2].Payload = json.RawMessage(`{"i":20}`)
			es[2].EventHash, _ = trace.Hash(es[2])
			return es
		}, trace.ChainBroken, 3},
		{"event removed", func(es []trace.Event) []trace.Event { return append(es[:2], es[3:]...) }, trace.SequenceGap, 2},
		{"first event removed", func(es []trace.Event) []trace.Event { return es[1:] }, trace.InvalidGenesis, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeTrace(t, tt.damage(good()))
			code, out, errs := wacp(t, append(global, "trace", "verify", file)...)
			if want := fmt.Sprintf("%s at index %d: ", tt.kind, tt.index); code != 2 || !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
				t.Errorf("trace verify = %d, %q, %q; want 2 and one line %q...", code, out, errs, want)
			}
			code, out, errs = wacp(t, append(global, "-o", "json", "trace", "verify", file)...)
			var rep struct {
				OK        bool   `json:"ok"`
				Events    int    `json:"events"`
				SessionID string `json:"session_id"`
				Error     *struct {
					Kind    string `json:"kind"`
					Index   int    `json:"index"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 2 || rep.OK || rep.Error == nil ||
				rep.Error.Kind != tt.kind || rep.Error.Index != tt.index || rep.Error.Message == "" || rep.SessionID != "sess-1" {
				t.Errorf("trace verify -o json = %d, %q (%v), %q; want 2 and %s at %d", code, out, err, errs, tt.kind, tt.index)
			}
		})
	}

	code, out, errs := wacp(t, append(global, "-o", "json", "trace", "verify", writeTrace(t, good()))...)
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep["ok"] != true || rep["events"] != 5.0 || rep["session_id"] != "sess-1" || rep["error"] != nil {
		t.Errorf("trace verify -o json (good) = %d, %q, %q; want 0 and ok, 5 events, sess-1, no error", code, out, errs)
	}

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"trace_version":"1.0","bogus":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		args     []string
		inStderr string
	}{
		{"malformed", []string{"trace", "verify", bad}, "malformed export: line 1"},
		{"no file", []string{"trace", "verify", filepath.Join(t.TempDir(), "none.jsonl")}, "open trace export"},
		{"no argument", []string{"trace", "verify"}, "missing argument"},
		{"two arguments", []string{"trace", "verify", bad, bad}, "unexpected argument"},
		{"no subcommand", []string{"trace"}, "needs a subcommand: diff, export, verify"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errs := wacp(t, append(global, tt.args...)...); code != 1 || !strings.Contains(errs, tt.inStderr) {
				t.Errorf("wacp %v = %d, %q; want 1 and %q", tt.args, code, errs, tt.inStderr)
			}
		})
	}
}

func TestTraceDiff(t *testing.T) {
	global := offline(t)
	payloads := func(decision string) func(int) string {
		return func(i int) string {
			return fmt.Sprintf(`{"request_id":"r-%d-%s","decision":{"type":%q},"actions":["ticket.get","ticket.list"]}`, i, decision, decision)
		}
	}
	one := writeTrace(t, traceSession(t, "sess-1", 3, payloads("allow")))
	again := writeTrace(t, traceSession(t, "sess-2", 3, payloads("allow"))) // other ids, times and hashes
	denied := traceSession(t, "sess-3", 3, payloads("deny"))
	shorter := writeTrace(t, denied[:2])

	if code, out, errs := wacp(t, append(global, "trace", "diff", one, again)...); code != 0 || out != "" {
		t.Errorf("trace diff of two runs of a session = %d, %q, %q; want 0 and nothing", code, out, errs)
	}
	code, out, errs := wacp(t, append(global, "trace", "diff", one, shorter)...)
	want := `event 0: payload.decision.type: "allow" -> "deny"
event 1: payload.decision.type: "allow" -> "deny"
event 2: only in a (carp.request.received)
`
	if code != 1 || out != want {
		t.Errorf("trace diff = %d, %q, %q; want 1 and\n%s", code, out, errs, want)
	}
	code, out, errs = wacp(t, append(global, "-o", "json", "trace", "diff", one, shorter)...)
	var changes []trace.Change
	if err := json.Unmarshal([]byte(out), &changes); err != nil || code != 1 || len(changes) != 3 ||
		changes[0].Path != "payload.decision.type" || changes[2].Kind != trace.Removed || changes[2].Index != 2 {
		t.Errorf("trace diff -o json = %d, %q (%v), %q; want 1 and the 3 changes", code, out, err, errs)
	}
	code, out, errs = wacp(t, append(global, "-o", "json", "trace", "diff", one, again)...)
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("trace diff -o json of two runs = %d, %q, %q; want 0 and []", code, out, errs)
	}
	for _, tt := range []struct {
		name     string
		args     []string
		inStderr string
	}{
		{"one file", []string{"trace", "diff", one}, "missing argument"},
		{"both stdin", []string{"trace", "diff", "-", "-"}, "only one of A and B"},
		{"no file", []string{"trace", "diff", one, filepath.Join(t.TempDir(), "none.jsonl")}, "open trace export"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errs := wacp(t, append(global, tt.args...)...); code != 1 || !strings.Contains(errs, tt.inStderr) {
				t.Errorf("wacp %v = %d, %q; want 1 and %q", tt.args, code, errs, tt.inStderr)
			}
		})
	}
}

// TestTraceUsage: wacp -h lists the trace commands.
func TestTraceUsage(t *testing.T) {
	code, _, errs := wacp(t, "-h")
	for _, want := range []string{"\n  trace verify FILE ", "\n  trace diff A B "} {
		if code != 0 || !strings.Contains(errs, want) {
			t.Errorf("wacp -h = %d, %q; want 0 and %q", code, errs, want)
		}
	}
}

package carp_test

import (
	"encoding/json"
	"testing"

	"github.com/wacpd/wacpd/carp"
)

const goodResolve = `{"carp_version":"1.0","request_id":"0193a5b2-7c4e-7d3a-9f1e-2b6c8d0e4f5a","timestamp":"2026-11-27T12:00:00Z","operation":"resolve","requester":{"agent_id":"a","session_id":"s"},"task":{"goal":"g"}}`

func edit(t *testing.T, doc string, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeRequest: each refusal of §5's request errors, by its code.
func TestDecodeRequest(t *testing.T) {
	if _, err := carp.DecodeRequest([]byte(goodResolve), carp.OpResolve); err != nil {
		t.Fatalf("a good resolve: %v", err)
	}
	task := func(m map[string]any) map[string]any { return m["task"].(map[string]any) }
	for _, tt := range []struct {
		name string
		data []byte
		op   string
		code string
	}{
		{"not json", []byte(`{"carp_version":`), carp.OpResolve, carp.CodeInvalidRequest},
		{"unknown field", edit(t, goodResolve, func(m map[string]any) { m["extra"] = 1 }), carp.OpResolve, carp.CodeInvalidRequest},
		{"version missing", edit(t, goodResolve, func(m map[string]any) { delete(m, "carp_version") }), carp.OpResolve, carp.CodeMissingField},
		{"version 2", edit(t, goodResolve, func(m map[string]any) { m["carp_version"] = "2.0" }), carp.OpResolve, carp.CodeInvalidVersion},
		{"request_id not a uuid", edit(t, goodResolve, func(m map[string]any) { m["request_id"] = "req-1" }), carp.OpResolve, carp.CodeInvalidFormat},
		{"timestamp without zone", edit(t, goodResolve, func(m map[string]any) { m["timestamp"] = "2026-11-27T12:00:00" }), carp.OpResolve, carp.CodeInvalidFormat},
		{"operation mismatch", goodResolveBytes(), carp.OpExecute, carp.CodeInvalidRequest},
		{"agent_id missing", edit(t, goodResolve, func(m map[string]any) { m["requester"] = map[string]any{"session_id": "s"} }), carp.OpResolve, carp.CodeMissingField},
		{"goal missing", edit(t, goodResolve, func(m map[string]any) { m["task"] = map[string]any{} }), carp.OpResolve, carp.CodeMissingField},
		{"bad risk tier", edit(t, goodResolve, func(m map[string]any) { task(m)["risk_tier"] = "extreme" }), carp.OpResolve, carp.CodeInvalidFormat},
		{"goal_hash wrong", edit(t, goodResolve, func(m map[string]any) { task(m)["goal_hash"] = "00" }), carp.OpResolve, carp.CodeInvalidRequest},
		{"bad scope pattern", edit(t, goodResolve, func(m map[string]any) { m["scope"] = map[string]any{"actions": []any{"a..b"}} }), carp.OpResolve, carp.CodeInvalidFormat},
		{"execute without action", edit(t, goodResolve, func(m map[string]any) { m["operation"] = "execute"; delete(m, "task") }), carp.OpExecute, carp.CodeMissingField},
	} {
		_, err := carp.DecodeRequest(tt.data, tt.op)
		if err == nil || err.Code != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
	ok := edit(t, goodResolve, func(m map[string]any) { task(m)["goal_hash"] = carp.GoalHash("g") })
	if _, err := carp.DecodeRequest(ok, carp.OpResolve); err != nil {
		t.Errorf("the right goal_hash: %v", err)
	}
}

func goodResolveBytes() []byte { return []byte(goodResolve) }

// FuzzDecodeRequest: any input is a request or a CARP error with one of
// §5's codes; never a panic.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(goodResolve), "resolve")
	f.Add([]byte(`{"carp_version":"1.0","request_id":"0193a5b2-7c4e-7d3a-9f1e-2b6c8d0e4f5a","timestamp":"2026-11-27T12:00:00Z","operation":"execute","requester":{"agent_id":"a","session_id":"s"},"action":{"action_id":"x","action_type":"x","parameters":{},"resolution_id":"r"},"execution_options":{"timeout_ms":5}}`), "execute")
	f.Add([]byte(`{"carp_version":"1.0","request_id":"0193a5b2-7c4e-7d3a-9f1e-2b6c8d0e4f5a","timestamp":"2026-11-27T12:00:00Z","operation":"respond","requester":{"agent_id":"a","session_id":"s"},"checkpoint_response":{"checkpoint_id":"onboarding","answers":{"agree-terms":true,"why":"because"}}}`), "respond")
	f.Add([]byte(`{"carp_version":"1.0","request_id":"0193a5b2-7c4e-7d3a-9f1e-2b6c8d0e4f5a","timestamp":"2026-11-27T12:00:00Z","operation":"respond","requester":{"agent_id":"a","session_id":"s"},"checkpoint_response":{"checkpoint_id":"c","answers":null}}`), "respond")
	codes := carp.Codes()
	f.Fuzz(func(t *testing.T, data []byte, op string) {
		_, err := carp.DecodeRequest(data, op)
		if err != nil {
			if _, ok := codes[err.Code]; !ok {
				t.Fatalf("code %q is not one of §5's", err.Code)
			}
		}
	})
}

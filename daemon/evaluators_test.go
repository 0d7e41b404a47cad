package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/steward"
)

// TestEvalReply: an evaluator's reply is exactly {"triggered":bool} or
// {"error":"text"}; anything else, a micro error and an oversized reply
// are errors.
func TestEvalReply(t *testing.T) {
	tests := []struct {
		name, data string
		header     string // Nats-Service-Error
		want       bool
		wantErr    string // a part of the error; "" for none
	}{
		{"triggered", `{"triggered":true}`, "", true, ""},
		{"not triggered", ` {"triggered": false} `, "", false, ""},
		{"error", `{"error":"the model is down"}`, "", false, "the evaluator failed: the model is down"},
		{"long error", `{"error":"` + strings.Repeat("é", 300) + `"}`, "", false, strings.Repeat("é", 100) + "…"},
		{"micro error", `{"triggered":true}`, "500 boom", false, "the evaluator failed: 500 boom"},
		{"empty object", `{}`, "", false, "is not"},
		{"both", `{"triggered":true,"error":"x"}`, "", false, "is not"},
		{"a number", `{"triggered":1}`, "", false, "is not"},
		{"null", `{"triggered":null}`, "", false, "is not"},
		{"unknown member", `{"triggered":true,"score":0.9}`, "", false, "is not"},
		{"trailing data", `{"triggered":true} {}`, "", false, "is not"},
		{"not an object", `true`, "", false, "is not"},
		{"nothing", ``, "", false, "is not"},
		{"oversized", `{"error":"` + strings.Repeat("x", maxEvalReply) + `"}`, "", false, "bytes; at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &nats.Msg{Data: []byte(tt.data), Header: nats.Header{}}
			if tt.header != "" {
				m.Header.Set("Nats-Service-Error", tt.header)
			}
			got, err := evalReply(m)
			switch {
			case tt.wantErr == "" && (err != nil || got != tt.want):
				t.Errorf("evalReply(%.40q) = %v, %v; want %v", tt.data, got, err, tt.want)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || got):
				t.Errorf("evalReply(%.40q) = %v, %v; want an error with %q", tt.data, got, err, tt.wantErr)
			}
		})
	}
}

// TestAskEvaluatorOutsideTools: the daemon sends an evaluation only under
// wacp.v1.tool. (atlas.Validate refuses other subjects; this is the
// second line), and not without a connection.
func TestAskEvaluatorOutsideTools(t *testing.T) {
	r := &Daemon{}
	if _, err := r.askEvaluator(context.Background(), "wacp.v1.agent.W.carp.execute", steward.EvalContext{}); err == nil {
		t.Error("askEvaluator asked outside wacp.v1.tool.")
	}
	if _, err := r.askEvaluator(context.Background(), "wacp.v1.tool.eval.x", steward.EvalContext{}); err == nil {
		t.Error("askEvaluator without a connection did not fail")
	}
}

// TestCarpRespondMatchesSchemas: a resolution with a pending steward
// checkpoint and its guidance, the refusal of an answer that does not
// pass, and the CheckpointResult of one that does validate against
// docs/schema/carp.json, and so do the requests.
func TestCarpRespondMatchesSchemas(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	m, err := atlas.Parse("terms.json", []byte(`{
	  "atlas_version": "1.0", "atlas_id": "com.example.terms", "version": "1.0.0", "name": "Terms",
	  "checkpoints": [
	    {"checkpoint_id": "terms", "trigger": {"type": "session_start"}, "mode": "blocking",
	     "questions": [{"question_id": "agree", "question": "Agree?", "response_type": "boolean", "expected": true},
	                   {"question_id": "why", "question": "Why?", "response_type": "text", "required": false, "hint": "a sentence",
	                    "validation": {"min_length": 3, "must_not_contain": ["secret"]}},
	                   {"question_id": "plan", "question": "Which plan?", "response_type": "choice", "options": ["a", "b"], "on_invalid": "warn_and_continue"}],
	     "guidance": {"format": "markdown", "content": "Be brief.", "labels": ["style"]}},
	    {"checkpoint_id": "intro", "trigger": {"type": "session_start"}, "mode": "advisory",
	     "guidance": {"format": "system_instruction", "content": "You answer notes questions."}}
	  ],
	  "policies": [{"policy_id": "allow-notes", "type": "allow", "actions": ["notes.*"]}],
	  "actions": [{"action_id": "notes.read", "name": "Read notes"}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadAtlas(ctx, m, "test"); err != nil {
		t.Fatal(err)
	}
	root, err := e.GetWorkspace(ctx, e.Root(), e.Root())
	if err != nil {
		t.Fatal(err)
	}
	c := schemas(t)
	request := func(op string, mod func(*carp.Request)) []byte {
		r := carp.Request{CARPVersion: carp.Version, RequestID: "0193a5b2-7c4e-7d3a-9f1e-2b6c8d0e4f5a", Timestamp: "2026-11-27T12:00:00Z",
			Operation: op, Requester: carp.Requester{AgentID: runtime.AgentID(root), SessionID: root.ID}}
		mod(&r)
		validate(t, c, "carp."+op, "carp.json#request", r)
		return mustJSON(r)
	}
	res, err := s.call(ctx, "carp.resolve", request(carp.OpResolve, func(r *carp.Request) { r.Task = &carp.Task{Goal: "read the notes"} }))
	if err != nil {
		t.Fatal(err)
	}
	rs := res.(carp.Resolution)
	if len(rs.Checkpoints) != 1 || len(rs.Guidance) != 1 {
		t.Fatalf("resolve: checkpoints %+v, guidance %+v; want terms pending and intro's guidance", rs.Checkpoints, rs.Guidance)
	}
	validate(t, c, "carp.resolve", "carp.json#resolution", rs)

	answer := func(answers string) []byte {
		return request(carp.OpRespond, func(r *carp.Request) {
			r.CheckpointResponse = &carp.CheckpointResponse{CheckpointID: "terms"}
			if err := json.Unmarshal([]byte(answers), &r.CheckpointResponse.Answers); err != nil {
				t.Fatal(err)
			}
		})
	}
	_, err = s.call(ctx, "carp.respond", answer(`{"agree":false,"why":"no"}`))
	f := asCarp(err, nil)
	if f.resp.Error.Code != carp.CodeConstraintViolated {
		t.Fatalf("respond agree=false: %v; want CONSTRAINT_VIOLATED", err)
	}
	validate(t, c, "carp.respond", "carp.json#error", f.resp)

	got, err := s.call(ctx, "carp.respond", answer(`{"agree":true,"why":"to help","plan":"c"}`))
	if err != nil {
		t.Fatal(err)
	}
	cr := got.(carp.CheckpointResult)
	if cr.Outcome != steward.OutcomeWarned || len(cr.Warnings) != 1 || len(cr.Results) != 3 {
		t.Errorf("respond with an invalid warn_and_continue answer = %+v; want warned with one warning", cr)
	}
	validate(t, c, "carp.respond", "carp.json#checkpoint_result", cr)
}

// FuzzEvalReply: any reply is an answer or an error, never a panic; an
// answer comes only from an object whose one member is a boolean
// "triggered".
func FuzzEvalReply(f *testing.F) {
	for _, s := range []string{`{"triggered":true}`, `{"triggered":false}`, `{"error":"down"}`, `{"triggered":true,"error":"x"}`, `{}`, `true`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := evalReply(&nats.Msg{Data: data, Header: nats.Header{}})
		if err != nil {
			if got {
				t.Fatal("an error with triggered true")
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil || len(m) != 1 {
			t.Fatalf("%q answered without being one member", data)
		}
		var b bool
		if json.Unmarshal(m["triggered"], &b) != nil || b != got {
			t.Fatalf("%q answered %v", data, got)
		}
	})
}

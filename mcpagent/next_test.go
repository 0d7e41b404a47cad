package mcpagent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const onboardingPrompt = `{"checkpoint_id":"onboarding","atlas_ref":"com.test.onboarding@1.0.0","checkpoint_type":"session_start","mode":"blocking","status":"pending","priority":0,"instance_id":"i1","gates":"every action",
 "questions":[{"question_id":"agree-terms","question":"Do you agree to the terms of service?","response_type":"boolean","required":true},
              {"question_id":"purpose","question":"What will you do in this session?","response_type":"text","required":false}]}`

// text returns r's text contents joined by newlines.
func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestResult: a reply is its JSON as text and structured content; a
// refusal is isError with "CODE: message" first and the error body as
// structured content (a body that is not JSON becomes {"error":{code,
// message}}); any other error is isError with its text.
func TestResult(t *testing.T) {
	reply := `{"id":"c1","digest":"blake3:00"}`
	r := result("checkpoint.get", []byte(reply), nil)
	if r.IsError || text(r) != reply || string(r.StructuredContent.(json.RawMessage)) != reply {
		t.Errorf("result(reply) = %+v", r)
	}

	body := `{"error":{"code":"invalid_parent","message":"parent is not the head","details":{"head":"c1"}}}`
	r = result("checkpoint", nil, &Refusal{Code: "invalid_parent", Message: "parent is not the head", Body: json.RawMessage(body)})
	first := r.Content[0].(*mcp.TextContent).Text
	if !r.IsError || first != "invalid_parent: parent is not the head" || string(r.StructuredContent.(json.RawMessage)) != body ||
		!strings.Contains(text(r), body) {
		t.Errorf("result(refusal) = %+v, text %q", r, text(r))
	}

	r = result("checkpoint", nil, &Refusal{Code: "permission_denied", Message: "no"})
	var b struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(r.StructuredContent.(json.RawMessage), &b); err != nil || !r.IsError || b.Error.Code != "permission_denied" || b.Error.Message != "no" {
		t.Errorf("result(refusal without a body) = %+v (%v)", r, err)
	}

	r = result("checkpoint", nil, errors.New("client: daemon unreachable"))
	if !r.IsError || text(r) != "error: client: daemon unreachable" || r.StructuredContent != nil {
		t.Errorf("result(transport error) = %+v", r)
	}
}

// TestNext: what a result says to do next.
func TestNext(t *testing.T) {
	tests := []struct {
		name, op, reply string
		refusal         *Refusal
		want            []string // in the text, in this order
		none            bool
	}{
		{name: "pending steward checkpoint in a resolution", op: "carp.resolve",
			reply: `{"resolution_id":"r1","checkpoints":[` + onboardingPrompt + `]}`,
			want:  []string{"Next:", `steward checkpoint "onboarding"`, "com.test.onboarding@1.0.0", "pending", "holds back every action", "carp_respond", `"checkpoint_id": "onboarding"`, `"agree-terms" (boolean, required)`, `"purpose" (text)`}},
		{name: "blocked steward checkpoint", op: "carp.resolve",
			reply: `{"checkpoints":[{"checkpoint_id":"kyc","status":"blocked","questions":[]}]}`,
			want:  []string{`steward checkpoint "kyc"`, "blocked for this session", "do not retry"}},
		{name: "checkpoint waiting for its evaluator", op: "carp.resolve",
			reply: `{"checkpoints":[{"checkpoint_id":"fraud","status":"pending","waiting_for":"evaluator","questions":[]}]}`,
			want:  []string{`"fraud"`, "waiting for its evaluator", "takes no answers"}},
		{name: "resolution without checkpoints", op: "carp.resolve", reply: `{"resolution_id":"r1","allowed_actions":[]}`, none: true},
		{name: "respond leaves another pending", op: "carp.respond",
			reply: `{"outcome":"passed","pending":[` + onboardingPrompt + `]}`, want: []string{"carp_respond", `"onboarding"`}},
		{name: "execution held for approval", op: "carp.execute",
			reply: `{"status":"pending_approval","execution_id":"e1","approval":{"approval_id":"01APPROVAL","status":"pending"}}`,
			want:  []string{"held for an operator's approval", "01APPROVAL", "carp_approval", `"wait": "5m"`, "carp_execute again", `"approval_id": "01APPROVAL"`}},
		{name: "execution done", op: "carp.execute", reply: `{"status":"success"}`, none: true},
		{name: "approval still pending", op: "carp.approval", reply: `{"approval_id":"a1","status":"pending"}`, want: []string{"still pending", "carp_approval again"}},
		{name: "approval approved", op: "carp.approval", reply: `{"approval_id":"a1","status":"approved"}`, want: []string{"approved", "carp_execute again", `"approval_id": "a1"`}},
		{name: "approval denied", op: "carp.approval", reply: `{"approval_id":"a1","status":"denied","reason":"not today"}`, want: []string{"denied (not today)", "do not run"}},
		{name: "CHECKPOINT_REQUIRED", op: "carp.execute",
			refusal: &Refusal{Code: "CHECKPOINT_REQUIRED", Message: "answer first", Body: json.RawMessage(`{"carp_version":"1.0","error":{"code":"CHECKPOINT_REQUIRED","message":"answer first","details":{"checkpoint":` + onboardingPrompt + `}}}`)},
			want:    []string{"A blocking steward checkpoint holds this action back", `"onboarding"`, "carp_respond", `"agree-terms"`, "Then call carp_execute again"}},
		{name: "answers to give again", op: "carp.respond",
			refusal: &Refusal{Code: "CONSTRAINT_VIOLATED", Message: "no", Body: json.RawMessage(`{"error":{"code":"CONSTRAINT_VIOLATED","message":"no","details":{"checkpoint_id":"onboarding","outcome":"retry","results":[]}}}`)},
			want:    []string{"did not pass", `"onboarding" again with carp_respond`}},
		{name: "another refusal", op: "carp.execute",
			refusal: &Refusal{Code: "RATE_LIMITED", Message: "slow down", Body: json.RawMessage(`{"error":{"code":"RATE_LIMITED","message":"slow down"}}`)}, none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *mcp.CallToolResult
			if tt.refusal != nil {
				r = result(tt.op, nil, tt.refusal)
			} else {
				r = result(tt.op, []byte(tt.reply), nil)
			}
			got := text(r)
			if tt.none {
				if strings.Contains(got, "Next:") {
					t.Errorf("result(%s) = %q, want no next step", tt.op, got)
				}
				return
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("result(%s) = %q, want %q (after the ones before it)", tt.op, got, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

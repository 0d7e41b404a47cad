package steward_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/steward"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// base is a small atlas; checkpoints and more are added per test.
const base = `{"atlas_version":"1.0","atlas_id":"com.test","version":"1.0.0","name":"Test",
 "capabilities":[{"capability_id":"basic","actions":["ticket.get","ticket.comment"]},{"capability_id":"admin","actions":["ticket.delete","user.delete"]}],
 "context_blocks":[{"context_id":"intro","content":"You are a support agent.","inject_mode":"on_demand"},{"context_id":"care","content":"Deleting is forever.","inject_mode":"on_demand"}],
 "policies":[{"policy_id":"allow","type":"allow","actions":["ticket.*","user.*"]}],
 "actions":[{"action_id":"ticket.get"},{"action_id":"ticket.comment","risk_tier":"medium"},{"action_id":"ticket.delete","risk_tier":"high"},{"action_id":"user.delete","risk_tier":"critical"}]}`

// manifest returns base with the members of extra (a JSON object) set.
func manifest(t *testing.T, extra string) *atlas.Manifest {
	t.Helper()
	var m, x map[string]any
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(extra), &x); err != nil {
		t.Fatalf("extra: %v", err)
	}
	for k, v := range x {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	man, err := atlas.Parse("test.json", b)
	if err != nil {
		t.Fatal(err)
	}
	return man
}

func compile(t *testing.T, ms ...*atlas.Manifest) *steward.Set {
	t.Helper()
	set, err := steward.Compile(ms)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

var ids int

func newID() string { ids++; return "i" + string(rune('0'+ids%10)) }

func ev(kind string, at time.Time, mod func(*steward.Event)) steward.Event {
	e := steward.Event{Kind: kind, Now: at, NewID: newID}
	if mod != nil {
		mod(&e)
	}
	return e
}

func act(id, tier string) []steward.ActionRef {
	return []steward.ActionRef{{AtlasID: "com.test", ActionID: id, Tier: tier}}
}

func types(steps []steward.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Type)
	}
	return out
}

func respond(t *testing.T, set *steward.Set, s *steward.Session, id string, answers map[string]string) steward.RespondResult {
	t.Helper()
	a := map[string]json.RawMessage{}
	for k, v := range answers {
		a[k] = json.RawMessage(v)
	}
	r, err := steward.Respond(set, s, steward.Response{CheckpointID: id, Answers: a}, t0.Add(time.Minute))
	if err != nil {
		t.Fatalf("respond %s: %v", id, err)
	}
	return r
}

func acme(t *testing.T) *atlas.Manifest {
	t.Helper()
	b, err := os.ReadFile("../atlas/testdata/acme.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := atlas.Parse("acme.json", b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOrder: the built-in checkpoints have their type's priority, a
// steward checkpoint its own (500 when it names none, 0 when it says 0),
// and ties keep manifest order.
func TestOrder(t *testing.T) {
	m := manifest(t, `{"checkpoints":[
	  {"checkpoint_id":"b","trigger":{"type":"explicit_request"}},
	  {"checkpoint_id":"zero","trigger":{"type":"session_end"},"priority":0},
	  {"checkpoint_id":"a","trigger":{"type":"explicit_request"}},
	  {"checkpoint_id":"top","trigger":{"type":"session_end"},"priority":2000}],
	 "checkpoint_config":{"session_start":{"enabled":true},"count_interval":{"enabled":true,"actions":5},
	  "action_pre":{"enabled":true,"mappings":{"ticket.delete":{"require_policy_check":true},"ticket.get":{}}}}}`)
	set := compile(t, m)
	var got []string
	for _, d := range set.Defs() {
		got = append(got, d.CP.CheckpointID+"@"+itoa(d.Priority))
	}
	want := []string{"top@2000", "builtin:session_start@1000", "builtin:action_pre/ticket.delete@800", "builtin:action_pre/ticket.get@700",
		"b@500", "a@500", "builtin:count_interval@400", "zero@0"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	p := steward.TypePriorities()
	for typ, want := range map[string]int{"session_start": 1000, "interactive": 950, "capability_gate": 920, "risk_threshold": 900,
		"action_pre": 800, "keyword_match": 600, "time_interval": 500, "count_interval": 400, "explicit_request": 300,
		"custom": 200, "action_post": 100, "error_occurred": 50, "session_end": 0} {
		if p[typ] != want {
			t.Errorf("%s priority %d, want %d", typ, p[typ], want)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestSessionStartBlocks: a pending blocking session_start holds every
// action of its atlas back until its answers validate; a wrong answer
// is refused and may be retried; then its capability is unlocked.
func TestSessionStartBlocks(t *testing.T) {
	m := acme(t)
	set := compile(t, m)
	s := &steward.Session{}
	r := steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	if !slices.Contains(types(r.Steps), steward.TraceTriggered) || !slices.Contains(types(r.Steps), steward.TraceQuestionPresented) {
		t.Fatalf("session start steps %v", types(r.Steps))
	}
	aid := m.AtlasID
	if b := set.Gate(s, aid, "ticket.get", "low"); b == nil || b.Def.CP.CheckpointID != "onboarding" || b.Status != steward.StatusPending {
		t.Fatalf("a pending onboarding does not hold ticket.get: %+v", b)
	}
	// An execute now: held.
	steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) {
		e.Actions = []steward.ActionRef{{AtlasID: aid, ActionID: "ticket.get", Tier: "low"}}
	}))
	if set.Gate(s, aid, "ticket.get", "low") == nil {
		t.Fatal("execute of ticket.get not held")
	}
	// A wrong answer: retry, still pending.
	if r := respond(t, set, s, "onboarding", map[string]string{"agree-terms": `"maybe"`}); r.Outcome != steward.OutcomeRetry || r.Passed() {
		t.Fatalf("a non-boolean answer: %+v", r)
	}
	if set.Gate(s, aid, "ticket.get", "low") == nil {
		t.Fatal("a wrong answer lifted the gate")
	}
	if r := respond(t, set, s, "onboarding", map[string]string{"agree-terms": `true`}); r.Outcome != steward.OutcomePassed {
		t.Fatalf("true: %+v", r)
	}
	if b := set.Gate(s, aid, "ticket.get", "low"); b != nil {
		t.Fatalf("still held after the answer: %+v", b)
	}
	if d, _ := set.Deny(s, m, "ticket.get", "low"); d != nil {
		t.Fatalf("basic-support still locked after onboarding unlocked it: %+v", d)
	}
	if d, _ := set.Deny(s, m, "ticket.delete", "high"); d == nil || !strings.Contains(d.Reason, "admin-support") {
		t.Fatalf("admin-support unlocked without its gate: %+v", d)
	}
	in := set.Inject(s, nil)
	if !slices.Equal(in.Contexts[aid], []string{"intro-context", "policy-summary"}) || len(in.Guidance) != 1 {
		t.Fatalf("onboarding's contexts and guidance not injected: %+v", in)
	}
}

// TestOnInvalid: warn_and_continue and log_and_continue pass (a warning,
// a TRACE record); block blocks for the session; retry keeps it pending.
func TestOnInvalid(t *testing.T) {
	for _, tt := range []struct {
		onInvalid, outcome string
		passes, warns      bool
	}{
		{"warn_and_continue", steward.OutcomeWarned, true, true},
		{"log_and_continue", steward.OutcomeLogged, true, false},
		{"retry", steward.OutcomeRetry, false, false},
		{"", steward.OutcomeRetry, false, false},
		{"block", steward.OutcomeBlocked, false, false},
	} {
		t.Run(tt.onInvalid, func(t *testing.T) {
			m := manifest(t, `{"checkpoints":[{"checkpoint_id":"why","mode":"blocking","trigger":{"type":"session_start"},
			  "questions":[{"question_id":"reason","question":"Why?","response_type":"text","validation":{"min_length":3},"on_invalid":"`+tt.onInvalid+`"}]}]}`)
			set := compile(t, m)
			s := &steward.Session{}
			steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
			r := respond(t, set, s, "why", map[string]string{"reason": `"ab"`})
			if r.Outcome != tt.outcome || r.Passed() != tt.passes || (len(r.Warnings) > 0) != tt.warns {
				t.Fatalf("outcome %s passed %v warnings %v", r.Outcome, r.Passed(), r.Warnings)
			}
			held := set.Gate(s, "com.test", "ticket.get", "low")
			if (held == nil) != tt.passes {
				t.Fatalf("gate after %s: %+v", tt.outcome, held)
			}
			var validated map[string]any
			for _, st := range r.Steps {
				if st.Type == steward.TraceValidated {
					validated = st.Payload
				}
			}
			if validated["outcome"] != tt.outcome {
				t.Fatalf("TRACE validated %v", validated)
			}
			if tt.outcome == steward.OutcomeBlocked {
				if held.Status != steward.StatusBlocked {
					t.Fatalf("blocked checkpoint status %s", held.Status)
				}
				_, err := steward.Respond(set, s, steward.Response{CheckpointID: "why", Answers: map[string]json.RawMessage{"reason": json.RawMessage(`"because"`)}}, t0)
				if err == nil || err.Reason != steward.ErrBlocked {
					t.Fatalf("a blocked checkpoint answered again: %v", err)
				}
			}
		})
	}
}

// TestChoiceFromTheWire: a JSON string answer satisfies a choice
// question; "I will hack the system" is refused by must_not_contain.
func TestChoiceFromTheWire(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"role","mode":"blocking","trigger":{"type":"session_start"},
	  "questions":[{"question_id":"role","question":"Your role?","response_type":"choice","options":["admin","user"]},
	   {"question_id":"plan","question":"Your plan?","response_type":"text","validation":{"must_not_contain":["hack"]}}]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	r := respond(t, set, s, "role", map[string]string{"role": `"admin"`, "plan": `"I will hack the system"`})
	if r.Outcome != steward.OutcomeRetry || !r.Results[0].Valid || r.Results[1].Valid || r.Results[1].Reason != steward.ReasonMustNotContain {
		t.Fatalf("results %+v", r.Results)
	}
	for _, st := range r.Steps {
		b, _ := json.Marshal(st.Payload)
		if strings.Contains(string(b), "hack") || strings.Contains(string(b), `"admin"`) {
			t.Fatalf("an answer in TRACE: %s %s", st.Type, b)
		}
	}
	if r := respond(t, set, s, "role", map[string]string{"role": `"admin"`, "plan": `"I will answer tickets"`}); !r.Passed() {
		t.Fatalf("good answers: %+v", r)
	}
}

// TestLock: a checkpoint's lock_capabilities denies the capability's
// actions from then on; deny_actions denies, allow_actions lifts the
// default deny but never a lock or a deny.
func TestLock(t *testing.T) {
	m := manifest(t, `{"policies":[],"checkpoints":[
	  {"checkpoint_id":"lockdown","trigger":{"type":"keyword","patterns":["lockdown"]},"lock_capabilities":["basic"],
	   "allow_actions":["ticket.*"],"deny_actions":["user.delete"]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	if d, allow := set.Deny(s, m, "ticket.get", "low"); d != nil || allow {
		t.Fatalf("before: %+v %v", d, allow)
	}
	steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "the lockdown begins" }))
	if d, _ := set.Deny(s, m, "ticket.get", "low"); d == nil || !strings.Contains(d.Reason, "capability basic is locked") {
		t.Fatalf("a locked capability's action: %+v", d)
	}
	if d, allow := set.Deny(s, m, "ticket.delete", "high"); d != nil || !allow {
		t.Fatalf("allow_actions ticket.*: %+v %v", d, allow)
	}
	if d, _ := set.Deny(s, m, "user.delete", "critical"); d == nil || !d.Permanent {
		t.Fatalf("deny_actions user.delete: %+v", d)
	}
}

// TestGuidance: append and replace, system instructions first, expiry
// when the named checkpoint fires, observational injects nothing.
func TestGuidance(t *testing.T) {
	m := manifest(t, `{"checkpoints":[
	  {"checkpoint_id":"a","trigger":{"type":"session_start"},"guidance":{"content":"A","priority":1,"expires_after":"c"}},
	  {"checkpoint_id":"b","trigger":{"type":"session_start"},"guidance":{"content":"B","format":"system_instruction"}},
	  {"checkpoint_id":"c","trigger":{"type":"explicit_request"}},
	  {"checkpoint_id":"d","trigger":{"type":"explicit_request"},"guidance":{"content":"D","append":false}},
	  {"checkpoint_id":"o","mode":"observational","trigger":{"type":"explicit_request"}}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	r := steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	if n := strings.Count(strings.Join(types(r.Steps), " "), steward.TraceGuidanceInjected); n != 2 {
		t.Fatalf("guidance_injected %d times", n)
	}
	contents := func() string {
		var out []string
		for _, g := range set.Inject(s, nil).Guidance {
			out = append(out, g.Content)
		}
		return strings.Join(out, ",")
	}
	if got := contents(); got != "B,A" {
		t.Fatalf("guidance %s, want B,A (system instruction first)", got)
	}
	ask := func(id string) {
		steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal, e.Hints = "x", []string{id} }))
	}
	ask("c")
	if got := contents(); got != "B" {
		t.Fatalf("after c: %s, want B (A expires after c)", got)
	}
	before := s.Clone()
	r = steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal, e.Hints = "x", []string{"o"} }))
	if !slices.Equal(types(r.Steps), []string{steward.TraceTriggered}) || contents() != "B" || len(set.Prompts(s)) != len(set.Prompts(before)) {
		t.Fatalf("an observational checkpoint did more than record: %v", types(r.Steps))
	}
	ask("d")
	if got := contents(); got != "D" {
		t.Fatalf("after d (replace): %s, want D", got)
	}
}

// TestBudget: beyond max_checkpoints_per_input the lower-priority
// advisory checkpoints are skipped (recorded), a blocking one never.
func TestBudget(t *testing.T) {
	m := manifest(t, `{"checkpoint_config":{"budget":{"max_checkpoints_per_input":1}},"checkpoints":[
	  {"checkpoint_id":"one","priority":3,"trigger":{"type":"keyword","patterns":["x"]}},
	  {"checkpoint_id":"two","priority":2,"trigger":{"type":"keyword","patterns":["x"]}},
	  {"checkpoint_id":"gate","priority":1,"mode":"blocking","trigger":{"type":"keyword","patterns":["x"]},
	   "questions":[{"question_id":"q","question":"?","response_type":"boolean"}]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	r := steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "x" }))
	if !slices.Equal(r.Triggered, []string{"com.test/one", "com.test/gate"}) {
		t.Fatalf("triggered %v", r.Triggered)
	}
	skipped := 0
	for _, st := range r.Steps {
		if st.Type == steward.TraceSkipped && st.Payload["checkpoint_id"] == "two" && st.Payload["reason"] == "budget" {
			skipped++
		}
	}
	if skipped != 1 {
		t.Fatalf("the skipped checkpoint is not recorded: %v", types(r.Steps))
	}
}

// TestSessionEnd: pending checkpoints are skipped, session_end fires,
// nothing fires after.
func TestSessionEnd(t *testing.T) {
	m := manifest(t, `{"checkpoints":[
	  {"checkpoint_id":"start","mode":"blocking","trigger":{"type":"session_start"},"questions":[{"question_id":"q","question":"?","response_type":"boolean"}]},
	  {"checkpoint_id":"end","trigger":{"type":"session_end"}}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	r := steward.Evaluate(set, s, ev(steward.EventSessionEnd, t0, nil))
	if !slices.Equal(r.Triggered, []string{"com.test/end"}) || !slices.Contains(types(r.Steps), steward.TraceSkipped) || !s.Ended {
		t.Fatalf("end: %v %v", r.Triggered, types(r.Steps))
	}
	if r := steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "x" })); len(r.Steps) != 0 {
		t.Fatalf("an ended session evaluated: %v", types(r.Steps))
	}
}

// TestRespondRefusals: unknown checkpoint, not pending, unknown question
// change nothing.
func TestRespondRefusals(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"c","mode":"blocking","trigger":{"type":"session_start"},
	  "questions":[{"question_id":"q","question":"?","response_type":"boolean"}]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	for _, tt := range []struct {
		id, q, reason string
	}{{"nope", "q", steward.ErrNotFound}, {"c", "q", steward.ErrNotPending}} {
		if _, err := steward.Respond(set, s, steward.Response{CheckpointID: tt.id, Answers: map[string]json.RawMessage{tt.q: json.RawMessage("true")}}, t0); err == nil || err.Reason != tt.reason {
			t.Fatalf("%s: %v", tt.id, err)
		}
	}
	steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	v := s.Version
	if _, err := steward.Respond(set, s, steward.Response{CheckpointID: "c", Answers: map[string]json.RawMessage{"x": json.RawMessage("true")}}, t0); err == nil || err.Reason != steward.ErrUnknownQuestion {
		t.Fatalf("unknown question: %v", err)
	}
	if s.Version != v {
		t.Fatal("a refused response changed the session")
	}
}

// TestAtlasChange: a new version of an atlas starts its checkpoints
// again in a session: what they did under the old one is forgotten.
func TestAtlasChange(t *testing.T) {
	m := acme(t)
	set := compile(t, m)
	s := &steward.Session{}
	steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	respond(t, set, s, "onboarding", map[string]string{"agree-terms": "true"})
	steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "x" }))
	if set.Gate(s, m.AtlasID, "ticket.get", "low") != nil {
		t.Fatal("held after the answer")
	}
	m2 := acme(t)
	m2.Version = "2.2.0"
	m2.Checkpoints[0].Questions[0].Question = "Do you agree to the new terms?"
	set2 := compile(t, m2)
	steward.Evaluate(set2, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "x" }))
	if b := set2.Gate(s, m2.AtlasID, "ticket.get", "low"); b == nil || b.Def.CP.CheckpointID != "onboarding" {
		t.Fatalf("the new version's onboarding is not asked: %+v", b)
	}
	if d, _ := set2.Deny(s, m2, "ticket.get", "low"); d == nil {
		t.Fatal("the old version's unlock survived")
	}
	// The same version again changes nothing.
	v := s.Version
	steward.Evaluate(set2, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "x" }))
	if s.Version != v {
		t.Fatal("an unchanged atlas reset the session")
	}
}

// TestInjectionBudget: guidance and injected contexts beyond
// max_context_injection_size are left out, lowest priority first, with
// a warning.
func TestInjectionBudget(t *testing.T) {
	m := manifest(t, `{"checkpoint_config":{"budget":{"max_context_injection_size":40}},"checkpoints":[
	  {"checkpoint_id":"hi","trigger":{"type":"session_start"},"guidance":{"content":"important guidance..","priority":9}},
	  {"checkpoint_id":"lo","trigger":{"type":"session_start"},"guidance":{"content":"less important guidance","priority":1},"inject_contexts":["intro"]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	in := set.Inject(s, nil)
	if len(in.Guidance) != 1 || in.Guidance[0].CheckpointID != "hi" || len(in.Contexts["com.test"]) != 0 || len(in.Warnings) != 2 {
		t.Fatalf("guidance %+v contexts %v warnings %v", in.Guidance, in.Contexts, in.Warnings)
	}
}

// TestUnlockThenLock: a checkpoint that unlocks and locks one capability
// leaves it locked; a later unlock opens it.
func TestUnlockThenLock(t *testing.T) {
	m := manifest(t, `{"checkpoints":[
	  {"checkpoint_id":"both","trigger":{"type":"session_start"},"unlock_capabilities":["basic"],"lock_capabilities":["basic"]},
	  {"checkpoint_id":"open","trigger":{"type":"explicit_request"},"unlock_capabilities":["basic"]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	if d, _ := set.Deny(s, m, "ticket.get", "low"); d == nil {
		t.Fatal("unlocked and locked at once: open")
	}
	steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal, e.Hints = "x", []string{"open"} }))
	if d, _ := set.Deny(s, m, "ticket.get", "low"); d != nil {
		t.Fatalf("a later unlock: %+v", d)
	}
}

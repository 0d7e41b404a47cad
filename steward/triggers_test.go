package steward_test

// The triggers, one by one, through the pure core: when each fires,
// what it holds back and how it starts again.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/steward"
)

// TestCountInterval: every 3 actions: the 3rd and the 6th, not the 4th.
func TestCountInterval(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"every3","trigger":{"type":"count_interval","actions":3}}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	var fired []int
	for i := 1; i <= 7; i++ {
		r, _ := steward.Admit(set, s, act("ticket.get", "low")[0], t0, newID)
		if slices.Contains(r.Triggered, "com.test/every3") {
			fired = append(fired, i)
		}
	}
	if !slices.Equal(fired, []int{3, 6}) {
		t.Fatalf("fired on actions %v, want [3 6]", fired)
	}
}

// TestTimeInterval fires when its seconds have passed since the session
// began or it last fired, and resets.
func TestTimeInterval(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"refresh","trigger":{"type":"time_interval","seconds":60},"inject_contexts":["intro"]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	var fired []int
	for _, sec := range []int{0, 59, 60, 100, 119, 120} {
		r := steward.Evaluate(set, s, ev(steward.EventResolve, t0.Add(time.Duration(sec)*time.Second), func(e *steward.Event) { e.Goal = "x" }))
		if len(r.Triggered) > 0 {
			fired = append(fired, sec)
		}
	}
	if !slices.Equal(fired, []int{60, 120}) {
		t.Fatalf("fired at %v, want [60 120]", fired)
	}
}

// TestKeywords: a keyword checkpoint fires on a matching goal, not twice
// on one goal, and once a session when it says so.
func TestKeywords(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"refund","trigger":{"type":"keyword","patterns":["refund"]},"inject_contexts":["intro"]},
	  {"checkpoint_id":"once","trigger":{"type":"keyword","patterns":["refund"],"once_per_session":true}}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	count := func(goal string) []string {
		return steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = goal })).Triggered
	}
	if got := count("REFUND the order"); len(got) != 2 {
		t.Fatalf("first: %v", got)
	}
	if got := count("REFUND the order"); len(got) != 0 {
		t.Fatalf("same goal again: %v", got)
	}
	if got := count("another refund"); !slices.Equal(got, []string{"com.test/refund"}) {
		t.Fatalf("new goal: %v", got)
	}
	if got := count("close the ticket"); len(got) != 0 {
		t.Fatalf("no keyword: %v", got)
	}
}

// TestRiskThreshold holds actions at or above its tier only.
func TestRiskThreshold(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"risk","mode":"blocking","trigger":{"type":"risk_threshold","min_tier":"high"},
	  "questions":[{"question_id":"why","question":"Why?","response_type":"text","validation":{"min_length":20}}]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	if r := steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("ticket.comment", "medium") })); len(r.Triggered) != 0 {
		t.Fatal("a medium action fired a high threshold")
	}
	steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("ticket.delete", "high") }))
	if set.Gate(s, "com.test", "ticket.delete", "high") == nil || set.Gate(s, "com.test", "ticket.comment", "medium") != nil {
		t.Fatal("risk threshold gates the wrong actions")
	}
	// Declared at resolve: presented ahead.
	s2 := &steward.Session{}
	steward.Evaluate(set, s2, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal, e.Tier = "x", "critical" }))
	if len(set.Prompts(s2)) != 1 {
		t.Fatal("a declared critical task does not present the high threshold")
	}
}

// TestRiskThresholdAtResolve: a declared tier at or above min_tier fires
// a blocking risk_threshold at resolve once per goal and tier: answered,
// the same goal does not bring it back, another goal does, and so does
// another tier at or above it.
func TestRiskThresholdAtResolve(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"risk","mode":"blocking","trigger":{"type":"risk_threshold","min_tier":"high"},
	  "questions":[{"question_id":"ok","question":"Sure?","response_type":"boolean"}]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	resolve := func(goal, tier string) int {
		return len(steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal, e.Tier = goal, tier })).Triggered)
	}
	if resolve("a", "medium") != 0 || resolve("a", "high") != 1 {
		t.Fatal("medium fired, or high did not")
	}
	respond(t, set, s, "risk", map[string]string{"ok": "true"})
	if resolve("a", "high") != 0 {
		t.Fatal("the same goal and tier fired again")
	}
	if resolve("b", "high") != 1 {
		t.Fatal("another goal did not fire it")
	}
	respond(t, set, s, "risk", map[string]string{"ok": "true"})
	if resolve("b", "critical") != 1 {
		t.Fatal("another tier did not fire it")
	}
}

// TestRequireSync: seed 001's require_sync (and seed 000's
// require_sync_trace) are accepted; TRACE is synchronous regardless.
func TestRequireSync(t *testing.T) {
	m := manifest(t, `{"checkpoint_config":{"risk_threshold":{"enabled":true,"min_tier":"high","require_sync":true,"require_sync_trace":true}}}`)
	if !m.CheckpointConfig.RiskThreshold.RequireSync || !m.CheckpointConfig.RiskThreshold.RequireSyncTrace {
		t.Fatal("require_sync not read")
	}
	set := compile(t, m)
	s := &steward.Session{}
	if r := steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("ticket.delete", "high") })); len(r.Triggered) != 1 {
		t.Fatalf("triggered %v", r.Triggered)
	}
}

// TestActionPre: "*.delete" matches user.delete; an answer covers one
// execute.
func TestActionPre(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"delete-confirm","mode":"blocking","trigger":{"type":"action_pre","patterns":["*.delete"]},
	  "questions":[{"question_id":"c","question":"This cannot be undone","response_type":"acknowledgment"}]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	r := steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("ticket.get", "low") }))
	if len(r.Triggered) != 0 {
		t.Fatalf("ticket.get fired *.delete: %v", r.Triggered)
	}
	steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("user.delete", "critical") }))
	if set.Gate(s, "com.test", "user.delete", "critical") == nil {
		t.Fatal("*.delete does not hold user.delete")
	}
	respond(t, set, s, "delete-confirm", map[string]string{"c": `"acknowledged"`})
	// The answer is user.delete's: another delete is asked anew.
	other := s.Clone()
	steward.Evaluate(set, other, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("ticket.delete", "high") }))
	if set.Gate(other, "com.test", "ticket.delete", "high") == nil {
		t.Fatal("an answer for user.delete let ticket.delete through")
	}
	if _, used := steward.Admit(set, s.Clone(), act("ticket.delete", "high")[0], t0, newID); len(used) != 0 {
		t.Fatalf("ticket.delete used user.delete's answer: %v", used)
	}
	r = steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("user.delete", "critical") }))
	if len(r.Triggered) != 0 || set.Gate(s, "com.test", "user.delete", "critical") != nil {
		t.Fatal("the answer does not cover the next execute")
	}
	_, used := steward.Admit(set, s, act("user.delete", "critical")[0], t0, newID)
	if !slices.Equal(used, []string{"delete-confirm"}) {
		t.Fatalf("answers used %v", used)
	}
	steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("ticket.delete", "high") }))
	if set.Gate(s, "com.test", "ticket.delete", "high") == nil {
		t.Fatal("one answer covered two executes")
	}
}

// TestInteractive: an interactive checkpoint fires at the session's
// first CARP operation, not at its start, and once.
func TestInteractive(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"hello","mode":"blocking","trigger":{"type":"interactive"},
	  "questions":[{"question_id":"q","question":"Ready?","response_type":"boolean"}]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	if r := steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil)); len(r.Triggered) != 0 {
		t.Fatalf("fired at the session's start: %v", r.Triggered)
	}
	if r := steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "x" })); len(r.Triggered) != 1 {
		t.Fatalf("not fired at the first resolve: %v", r.Triggered)
	}
	respond(t, set, s, "hello", map[string]string{"q": "true"})
	if r := steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "y" })); len(r.Triggered) != 0 {
		t.Fatalf("fired twice: %v", r.Triggered)
	}
}

// TestCustom: a Go evaluator decides; answers are cached; a blocking
// checkpoint nothing evaluates fails closed, an advisory one is skipped.
func TestCustom(t *testing.T) {
	m := manifest(t, `{"checkpoints":[
	  {"checkpoint_id":"mood","mode":"blocking","trigger":{"type":"custom","trigger_id":"sentiment"},"questions":[{"question_id":"q","question":"?","response_type":"boolean"}]},
	  {"checkpoint_id":"nobody","trigger":{"type":"custom","trigger_id":"unregistered"}},
	  {"checkpoint_id":"strict","mode":"blocking","trigger":{"type":"custom","trigger_id":"unregistered"}}]}`)
	set := compile(t, m)
	var reg steward.Registry
	calls := 0
	if err := reg.Register("sentiment", func(_ context.Context, ec steward.EvalContext) (bool, error) {
		calls++
		return strings.Contains(ec.Goal, "angry"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("sentiment", func(context.Context, steward.EvalContext) (bool, error) { return false, nil }); err == nil {
		t.Fatal("a second evaluator for one trigger")
	}
	ec := steward.EvalContext{SessionID: "w", Operation: "resolve", Goal: "an angry customer"}
	got, failed := steward.EvaluateCustom(context.Background(), set, &reg, nil, ec, nil, t0)
	if !got["com.test/mood"] || !strings.Contains(failed["com.test/nobody"], steward.ErrNoEvaluator.Error()) {
		t.Fatalf("answers %v failures %v", got, failed)
	}
	steward.EvaluateCustom(context.Background(), set, &reg, nil, ec, nil, t0.Add(time.Second))
	if calls != 1 {
		t.Fatalf("evaluator called %d times: not cached", calls)
	}
	s := &steward.Session{}
	r := steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal, e.Custom, e.CustomErr = ec.Goal, got, failed }))
	if !slices.Equal(r.Triggered, []string{"com.test/mood", "com.test/strict"}) {
		t.Fatalf("triggered %v (strict fails closed, nobody is skipped)", r.Triggered)
	}
	// The failing evaluator holds strict's actions (fail closed) and it
	// takes no answers, even without questions of its own to pass it.
	if b := set.Gate(s, "com.test", "ticket.get", "low"); b == nil || b.Def.CP.CheckpointID != "mood" {
		t.Fatalf("gate %+v", b)
	}
	respond(t, set, s, "mood", map[string]string{"q": "true"})
	if b := set.Gate(s, "com.test", "ticket.get", "low"); b == nil || b.Def.CP.CheckpointID != "strict" {
		t.Fatalf("an evaluator's failure did not hold: %+v", b)
	}
	if _, err := steward.Respond(set, s, steward.Response{CheckpointID: "strict", Answers: map[string]json.RawMessage{}}, t0); err == nil {
		t.Fatal("a checkpoint held for its evaluator took an answer")
	}
	if ps := set.Prompts(s); len(ps) != 1 || ps[0].CheckpointID != "strict" || ps[0].WaitingFor != "evaluator" {
		t.Fatalf("prompts while held: %+v", ps)
	}
	if d, _ := set.Deny(s, m, "ticket.get", "low"); d == nil {
		t.Fatal("held, and no denial")
	}
	// An evaluation that did not ask its evaluator (another atlas's
	// action, a resolve out of its scope) does not release it.
	steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) {
		e.Actions = []steward.ActionRef{{AtlasID: "com.other", ActionID: "x.y", Tier: "low"}}
	}))
	if ps := set.Prompts(s); !slices.ContainsFunc(ps, func(p steward.Prompt) bool { return p.CheckpointID == "strict" }) {
		t.Fatal("released without its evaluator's answer")
	}
	// Answered, the same input does not bring mood back; a new one does;
	// strict stays held while its evaluator fails, and is released when
	// it answers no.
	r = steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal, e.Custom, e.CustomErr = ec.Goal, got, failed }))
	if len(r.Triggered) != 0 {
		t.Fatalf("the same input fired %v again", r.Triggered)
	}
	r = steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal, e.Custom, e.CustomErr = "still angry", got, failed }))
	if !slices.Equal(r.Triggered, []string{"com.test/mood"}) {
		t.Fatalf("a new input: %v", r.Triggered)
	}
	r = steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) {
		e.Goal, e.Custom = "calm now", map[string]bool{"com.test/strict": false}
	}))
	for _, p := range set.Prompts(s) {
		if p.CheckpointID == "strict" {
			t.Fatalf("strict not released when its evaluator answered no: %+v", p)
		}
	}
}

// TestCacheExpiry: a custom evaluator's answer is cached for the atlas's
// policy_ttl_seconds, and dropped with its Set when the atlases change.
func TestCacheExpiry(t *testing.T) {
	m := manifest(t, `{"cache_config":{"policy_ttl_seconds":5},"checkpoints":[{"checkpoint_id":"c","trigger":{"type":"custom","trigger_id":"count"}}]}`)
	var reg steward.Registry
	calls := 0
	reg.Register("count", func(context.Context, steward.EvalContext) (bool, error) { calls++; return true, nil })
	ec := steward.EvalContext{Operation: "resolve", Goal: "g"}
	set := compile(t, m)
	for _, sec := range []int{0, 4, 5, 6} {
		steward.EvaluateCustom(context.Background(), set, &reg, nil, ec, nil, t0.Add(time.Duration(sec)*time.Second))
	}
	if calls != 2 {
		t.Fatalf("asked %d times at 0, 4, 5, 6 s with a 5 s TTL, want 2", calls)
	}
	steward.EvaluateCustom(context.Background(), compile(t, m), &reg, nil, ec, nil, t0.Add(6*time.Second))
	if calls != 3 {
		t.Fatalf("a new Set (the atlases changed) used the old answers: %d calls", calls)
	}
}

// TestBuiltins: checkpoint_config's built-in checkpoints: session_start
// and keyword mappings inject their contexts, an action_pre mapping
// with require_confirmation blocks until acknowledged, risk_threshold
// fires on its tier.
func TestBuiltins(t *testing.T) {
	m := manifest(t, `{"checkpoint_config":{
	  "session_start":{"enabled":true,"inject_contexts":["intro"]},
	  "keyword_match":{"enabled":true,"mappings":{"delete|remove":["care"]}},
	  "action_pre":{"enabled":true,"mappings":{"*.delete":{"require_confirmation":true,"require_policy_check":true}}},
	  "risk_threshold":{"enabled":true,"min_tier":"critical","require_sync_trace":true},
	  "count_interval":{"enabled":false,"actions":1}}}`)
	set := compile(t, m)
	s := &steward.Session{}
	steward.Evaluate(set, s, ev(steward.EventSessionStart, t0, nil))
	if got := set.Inject(s, nil).Contexts["com.test"]; !slices.Equal(got, []string{"intro"}) {
		t.Fatalf("session_start contexts %v", got)
	}
	steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) { e.Goal = "please remove ticket 4" }))
	if got := set.Inject(s, nil).Contexts["com.test"]; !slices.Equal(got, []string{"intro", "care"}) {
		t.Fatalf("keyword mapping contexts %v", got)
	}
	r := steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("user.delete", "critical") }))
	if !slices.Equal(r.Triggered, []string{"com.test/builtin:risk_threshold", "com.test/builtin:action_pre/*.delete"}) {
		t.Fatalf("triggered %v", r.Triggered)
	}
	b := set.Gate(s, "com.test", "user.delete", "critical")
	if b == nil || b.Def.CP.CheckpointID != "builtin:action_pre/*.delete" || !b.Def.Builtin {
		t.Fatalf("require_confirmation does not hold: %+v", b)
	}
	respond(t, set, s, "builtin:action_pre/*.delete", map[string]string{"confirm": `"understood"`})
	if set.Gate(s, "com.test", "user.delete", "critical") != nil {
		t.Fatal("held after the confirmation")
	}
	if _, ok := set.Def("com.test/builtin:count_interval"); ok {
		t.Fatal("a disabled built-in is in effect")
	}
}

// TestCapabilityGate: a capability gate at priority 900 requires a
// response, holds only its capability's actions, and unlocks it.
func TestCapabilityGate(t *testing.T) {
	m := manifest(t, `{"checkpoints":[{"checkpoint_id":"admin-gate","priority":900,"mode":"blocking",
	  "trigger":{"type":"capability_access","capability_ids":["admin"]},
	  "questions":[{"question_id":"ack","question":"I am authorized","response_type":"acknowledgment"}],
	  "unlock_capabilities":["admin"]}]}`)
	set := compile(t, m)
	s := &steward.Session{}
	if d, _ := set.Deny(s, m, "ticket.delete", "high"); d == nil {
		t.Fatal("a gated capability is open before its gate")
	}
	steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) {
		e.Goal, e.Actions = "delete a ticket", act("ticket.delete", "high")
	}))
	if len(set.Prompts(s)) != 0 {
		t.Fatal("a resolve of everything knocked on the capability gate")
	}
	steward.Evaluate(set, s, ev(steward.EventResolve, t0, func(e *steward.Event) {
		e.Goal, e.Actions, e.Explicit = "delete a ticket", act("ticket.delete", "high"), true
	}))
	ps := set.Prompts(s)
	if len(ps) != 1 || ps[0].CheckpointID != "admin-gate" || ps[0].Priority != 900 || ps[0].Type != steward.TypeCapabilityGate {
		t.Fatalf("prompts %+v", ps)
	}
	if set.Gate(s, "com.test", "ticket.delete", "high") == nil || set.Gate(s, "com.test", "ticket.get", "low") != nil {
		t.Fatal("a capability gate holds what is not its capability's, or not what is")
	}
	if r := respond(t, set, s, "admin-gate", map[string]string{}); r.Outcome != steward.OutcomeRetry || r.Results[0].Reason != steward.ReasonRequired {
		t.Fatalf("no answer: %+v", r)
	}
	respond(t, set, s, "admin-gate", map[string]string{"ack": `"Understood."`})
	if d, _ := set.Deny(s, m, "ticket.delete", "high"); d != nil {
		t.Fatalf("still locked after the gate: %+v", d)
	}
	// Passed once a session: not again.
	r := steward.Evaluate(set, s, ev(steward.EventExecute, t0, func(e *steward.Event) { e.Actions = act("user.delete", "critical") }))
	if len(r.Triggered) != 0 {
		t.Fatalf("a passed gate fired again: %v", r.Triggered)
	}
}

package runtime

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/steward"
)

func respondReq(t testing.TB, e *Engine, ws, checkpoint string, answers map[string]string) carp.Request {
	t.Helper()
	w, err := e.GetWorkspace(ctx, ws, ws)
	if err != nil {
		t.Fatal(err)
	}
	return carpReq(t, w, carp.OpRespond, func(r *carp.Request) {
		a := map[string]json.RawMessage{}
		for k, v := range answers {
			a[k] = json.RawMessage(v)
		}
		r.CheckpointResponse = &carp.CheckpointResponse{CheckpointID: checkpoint, Answers: a}
	})
}

func allowed(res carp.Resolution, action string) bool {
	return slices.ContainsFunc(res.AllowedActions, func(a carp.ActionPermission) bool { return a.ActionID == action })
}

func stewardDenial(res carp.Resolution, action string) *carp.ActionDenial {
	i := slices.IndexFunc(res.DeniedActions, func(d carp.ActionDenial) bool { return d.ActionType == action })
	if i < 0 {
		return nil
	}
	return &res.DeniedActions[i]
}

// TestSteward_SessionStartBlocks: the seed atlas's blocking onboarding
// fires as the workspace becomes active; until its answer validates the
// resolution denies the atlas's actions and lists the checkpoint, an
// execute is refused CHECKPOINT_REQUIRED, a wrong answer is refused and
// may be retried; then the capability it unlocks, its contexts and its
// guidance are in the next resolution (not the cached one), the execute
// goes through, the state survives a restart, and TRACE verifies with
// answers only as hashes.
func TestSteward_SessionStartBlocks(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	loadAcmeWith(t, e, nil)
	w := activeWorkspace(t, e, "worker")

	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Checkpoints) != 1 || res.Checkpoints[0].CheckpointID != "onboarding" || res.Checkpoints[0].Status != steward.StatusPending ||
		len(res.Checkpoints[0].Questions) != 1 {
		t.Fatalf("checkpoints %+v", res.Checkpoints)
	}
	if d := stewardDenial(res, "ticket.get"); d == nil || !slices.Equal(d.PolicyRefs, []string{"checkpoint:onboarding"}) || d.Permanent {
		t.Fatalf("ticket.get while onboarding is pending: %+v", d)
	}
	if len(res.AllowedActions) != 0 {
		t.Fatalf("allowed while pending: %+v", res.AllowedActions)
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
	carpCode(t, "execute while onboarding is pending", err, carp.CodeCheckpointRequired)
	var ce *CarpError
	errors.As(err, &ce)
	if p, ok := ce.Err.Details["checkpoint"].(steward.Prompt); !ok || p.CheckpointID != "onboarding" {
		t.Fatalf("details %+v", ce.Err.Details)
	}
	v, err := e.CarpValidate(ctx, w.ID, carpReq(t, w, carp.OpValidate, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
	if err != nil || v.Valid || len(v.Violations) != 1 || v.Violations[0].Code != carp.CodeCheckpointRequired {
		t.Fatalf("validate while onboarding is pending: %+v %v", v, err)
	}

	_, err = e.CarpRespond(ctx, w.ID, respondReq(t, e, w.ID, "onboarding", map[string]string{"agree-terms": `"maybe"`}))
	carpCode(t, "a non-boolean answer", err, carp.CodeConstraintViolated)
	errors.As(err, &ce)
	if ce.Err.Details["outcome"] != steward.OutcomeRetry {
		t.Fatalf("details %+v", ce.Err.Details)
	}
	_, err = e.CarpRespond(ctx, w.ID, respondReq(t, e, w.ID, "onboarding", map[string]string{"nope": `true`}))
	carpCode(t, "an unknown question", err, carp.CodeInvalidRequest)
	out, err := e.CarpRespond(ctx, w.ID, respondReq(t, e, w.ID, "onboarding", map[string]string{"agree-terms": `true`}))
	if err != nil || out.Outcome != steward.OutcomePassed || !slices.Equal(out.Effects.UnlockedCapabilities, []string{"basic-support"}) {
		t.Fatalf("respond: %+v %v", out, err)
	}
	_, err = e.CarpRespond(ctx, w.ID, respondReq(t, e, w.ID, "onboarding", map[string]string{"agree-terms": `true`}))
	carpCode(t, "answered twice", err, carp.CodeInvalidRequest)

	// The same request again: a new resolution, not the cached one.
	res2, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res2.ResolutionID == res.ResolutionID || !allowed(res2, "ticket.get") || len(res2.Checkpoints) != 0 {
		t.Fatalf("after the answer: %s allowed %v checkpoints %+v", res2.ResolutionID, res2.AllowedActions, res2.Checkpoints)
	}
	if d := stewardDenial(res2, "ticket.delete"); d == nil || !strings.Contains(d.Reason, "admin-support is locked") {
		t.Fatalf("ticket.delete before its capability gate: %+v", d)
	}
	var blocks []string
	for _, b := range res2.ContextBlocks {
		blocks = append(blocks, b.BlockID)
	}
	if !slices.Contains(blocks, "intro-context") || !slices.Contains(blocks, "policy-summary") {
		t.Fatalf("injected contexts missing: %v", blocks)
	}
	if len(res2.Guidance) != 1 || !strings.Contains(res2.Guidance[0].Content, "Welcome") || res2.Guidance[0].Format != "markdown" {
		t.Fatalf("guidance %+v", res2.Guidance)
	}
	_, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res2.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
	if err != nil || in == nil {
		t.Fatalf("execute after the answer: %v", err)
	}
	if _, err := e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusSuccess}}); err != nil {
		t.Fatal(err)
	}

	evs := sessionTrace(t, e, w.ID)
	n := countTypes(evs)
	for typ, want := range map[string]int{steward.TraceTriggered: 1, steward.TraceQuestionPresented: 1, steward.TraceResponseReceived: 2,
		steward.TraceValidated: 2, steward.TraceFailed: 1, steward.TracePassed: 1, steward.TraceGuidanceInjected: 1} {
		if n[typ] != want {
			t.Errorf("%s %d times, want %d (%v)", typ, n[typ], want, n)
		}
	}
	for _, ev := range evs {
		if strings.Contains(string(ev.Payload), "maybe") {
			t.Fatalf("an answer in TRACE: %s %s", ev.EventType, ev.Payload)
		}
	}

	// Restart: the session's checkpoint state is durable.
	e.Close()
	e2 := openEngineAt(t, dir)
	w2, err := e2.GetWorkspace(ctx, w.ID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	res3, err := e2.CarpResolve(ctx, w.ID, carpReq(t, w2, carp.OpResolve, func(r *carp.Request) { r.Task.Goal = "after a restart" }))
	if err != nil || !allowed(res3, "ticket.get") || len(res3.Checkpoints) != 0 {
		t.Fatalf("after a restart: %v %+v", err, res3.Checkpoints)
	}
}

// stewardAtlas is the seed's atlas with its checkpoints replaced by cps
// (JSON).
func stewardAtlas(t testing.TB, cps string) func(*atlas.Manifest) {
	return func(m *atlas.Manifest) {
		m.Checkpoints = nil
		if err := json.Unmarshal([]byte(cps), &m.Checkpoints); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSteward_LockRemovesActions: a checkpoint that locks a capability
// removes its actions from the next resolution, and an execute under an
// earlier resolution is refused.
func TestSteward_LockRemovesActions(t *testing.T) {
	e := openVerified(t)
	loadAcmeWith(t, e, stewardAtlas(t, `[{"checkpoint_id":"lockdown","trigger":{"type":"keyword","patterns":["lockdown"]},"lock_capabilities":["basic-support"]}]`))
	w := activeWorkspace(t, e, "worker")
	before, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil || !allowed(before, "ticket.get") {
		t.Fatalf("before: %v %v", err, before.AllowedActions)
	}
	after, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, func(r *carp.Request) { r.Task.Goal = "begin the lockdown" }))
	if err != nil {
		t.Fatal(err)
	}
	if allowed(after, "ticket.get") || stewardDenial(after, "ticket.get") == nil || !allowed(after, "ticket.delete") {
		t.Fatalf("after the lock: allowed %v denied %v", after.AllowedActions, after.DeniedActions)
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(before.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
	carpCode(t, "execute of a locked capability's action", err, carp.CodeActionDenied)
}

// TestSteward_CountIntervalBlocks: a blocking count_interval of 3 fires
// on the 3rd execute; the 4th waits for the answer; after it, the
// count starts again.
func TestSteward_CountIntervalBlocks(t *testing.T) {
	e := openVerified(t)
	loadAcmeWith(t, e, stewardAtlas(t, `[{"checkpoint_id":"every3","mode":"blocking","trigger":{"type":"count_interval","actions":3},
	  "questions":[{"question_id":"ok","question":"Still on task?","response_type":"boolean","expected":true,"on_invalid":"block"}]}]`))
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	exec := func() error {
		_, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
		if err == nil {
			_, err = e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusSuccess}})
		}
		return err
	}
	for i := 1; i <= 3; i++ {
		if err := exec(); err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
	}
	carpCode(t, "the 4th execute", exec(), carp.CodeCheckpointRequired)
	if _, err := e.CarpRespond(ctx, w.ID, respondReq(t, e, w.ID, "every3", map[string]string{"ok": "true"})); err != nil {
		t.Fatal(err)
	}
	for i := 4; i <= 6; i++ {
		if err := exec(); err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
	}
	// The 6th fired it again; a wrong answer blocks for good.
	_, err = e.CarpRespond(ctx, w.ID, respondReq(t, e, w.ID, "every3", map[string]string{"ok": "false"}))
	carpCode(t, "false to expected true with on_invalid block", err, carp.CodeActionDenied)
	carpCode(t, "execute after the block", exec(), carp.CodeActionDenied)
}

// TestSteward_SessionEndAndErrors: an execution's failure fires
// error_occurred and its outcome action_post; the workspace's end skips
// what is pending and fires session_end, in the session's TRACE, and
// the workspace's end is not held by a pending checkpoint.
func TestSteward_SessionEndAndErrors(t *testing.T) {
	e := openVerified(t)
	loadAcmeWith(t, e, stewardAtlas(t, `[
	  {"checkpoint_id":"after","mode":"observational","trigger":{"type":"action_post","patterns":["ticket.*"]}},
	  {"checkpoint_id":"oops","trigger":{"type":"error_occurred"},"guidance":{"content":"Check the ticket id."}},
	  {"checkpoint_id":"ask","mode":"blocking","trigger":{"type":"explicit_request"},"questions":[{"question_id":"q","question":"?","response_type":"text"}]},
	  {"checkpoint_id":"bye","trigger":{"type":"session_end"}}]`))
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	_, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-9"})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusFailed,
		Error: &carp.ExecutionError{Code: "TICKET_NOT_FOUND", Message: "no T-9"}}}); err != nil {
		t.Fatal(err)
	}
	res, err = e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, func(r *carp.Request) { r.Task.ContextHints = []string{"ask"} }))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Guidance) != 1 || res.Guidance[0].CheckpointID != "oops" || len(res.Checkpoints) != 1 || res.Checkpoints[0].CheckpointID != "ask" {
		t.Fatalf("after the failure and the request: guidance %+v checkpoints %+v", res.Guidance, res.Checkpoints)
	}
	if res.Decision.Type == carp.DecisionInsufficientContext {
		t.Fatalf("a hint naming a checkpoint is a missing domain: %+v", res.Decision)
	}
	if _, err := e.Abort(ctx, e.Root(), w.ID, "done"); err != nil {
		t.Fatal(err)
	}
	var fired, skipped []string
	for _, ev := range sessionTrace(t, e, w.ID) {
		var p map[string]any
		json.Unmarshal(ev.Payload, &p)
		switch ev.EventType {
		case steward.TraceTriggered:
			fired = append(fired, p["checkpoint_id"].(string))
		case steward.TraceSkipped:
			skipped = append(skipped, p["checkpoint_id"].(string)+":"+p["reason"].(string))
		}
	}
	if !slices.Equal(fired, []string{"after", "oops", "ask", "bye"}) || !slices.Equal(skipped, []string{"ask:session_ended"}) {
		t.Fatalf("fired %v, skipped %v", fired, skipped)
	}
}

// TestSteward_AtlasLoadedLater: a session active before its atlas was
// loaded meets the atlas's session_start checkpoint at its next
// operation.
func TestSteward_AtlasLoadedLater(t *testing.T) {
	e := openVerified(t)
	w := activeWorkspace(t, e, "worker")
	loadAcmeWith(t, e, nil)
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Checkpoints) != 1 || res.Checkpoints[0].CheckpointID != "onboarding" || len(res.AllowedActions) != 0 {
		t.Fatalf("checkpoints %+v allowed %v", res.Checkpoints, res.AllowedActions)
	}
}

// TestSteward_AllowOverlayUnderDenyPolicy: a checkpoint's allow_actions
// lifts the default deny, never a deny policy.
func TestSteward_AllowOverlayUnderDenyPolicy(t *testing.T) {
	e := openVerified(t)
	loadAcmeWith(t, e, func(m *atlas.Manifest) {
		stewardAtlas(t, `[{"checkpoint_id":"open-users","trigger":{"type":"session_start"},"allow_actions":["user.*","ticket.*"]}]`)(m)
		m.Policies = slices.DeleteFunc(m.Policies, func(p atlas.Policy) bool { return p.PolicyID == "allow-support" })
	})
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !allowed(res, "ticket.get") {
		t.Fatalf("allow_actions did not lift the default deny: %+v", res.DeniedActions)
	}
	if d := stewardDenial(res, "user.ban"); d == nil || !slices.Contains(d.PolicyRefs, "no-bans-on-weekends") {
		t.Fatalf("allow_actions overrode a deny policy: %+v", d)
	}
	if d := stewardDenial(res, "billing.refund"); d == nil {
		t.Fatal("an action neither allowed nor overlaid is not denied")
	}
}

// TestSteward_TraceOrderAndScope: a checkpoint's events follow the
// request's carp.request.received; a resolve refused records none of
// them and changes nothing; a checkpoint of an atlas the resolution is
// not made from (context_hints narrow it) does not fire.
func TestSteward_TraceOrderAndScope(t *testing.T) {
	e := openVerified(t)
	loadAcmeWith(t, e, stewardAtlas(t, `[{"checkpoint_id":"refund-talk","trigger":{"type":"keyword","patterns":["refund"]},"guidance":{"content":"Mind the window."}}]`))
	other := loadAcmeWith(t, e, func(m *atlas.Manifest) {
		m.AtlasID, m.Domains = "com.other", []string{"elsewhere"}
		for i := range m.ContextBlocks {
			m.ContextBlocks[i].ContextID, m.ContextBlocks[i].Domain, m.ContextBlocks[i].Tags = "other-"+m.ContextBlocks[i].ContextID, "elsewhere", nil
		}
		m.Checkpoints = nil
		stewardAtlas(t, `[{"checkpoint_id":"other-talk","trigger":{"type":"keyword","patterns":["refund"]},"guidance":{"content":"Not for you."}}]`)(m)
		m.Capabilities, m.Policies = nil, []atlas.Policy{{PolicyID: "allow", Type: atlas.PolicyAllow, Actions: []string{"ticket.*"}}}
	})
	w := activeWorkspace(t, e, "worker")
	_, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, func(r *carp.Request) {
		r.Task.Goal = "a refund"
		r.Scope = &carp.Scope{Atlases: []string{"com.nowhere"}}
	}))
	carpCode(t, "an atlas not loaded", err, carp.CodeAtlasNotFound)
	if n := countTypes(sessionTrace(t, e, w.ID))[steward.TraceTriggered]; n != 0 {
		t.Fatalf("a refused resolve fired %d checkpoints", n)
	}
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, func(r *carp.Request) {
		r.Task.Goal, r.Task.ContextHints = "a refund", []string{"refunds"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Guidance) != 1 || res.Guidance[0].CheckpointID != "refund-talk" {
		t.Fatalf("guidance %+v (the other atlas %s is not in scope)", res.Guidance, other.AtlasID)
	}
	evs := sessionTrace(t, e, w.ID)
	received := -1
	for i, ev := range evs {
		switch ev.EventType {
		case carp.TraceRequestReceived:
			received = i
		case steward.TraceTriggered:
			if received < 0 || received != i-1 {
				t.Fatalf("checkpoint.triggered at %d, the request received at %d", i, received)
			}
		}
	}
}

// TestSteward_InterruptedExecution: an execution the daemon stopped
// during, marked failed at the next start, fires the session's
// action_post and error_occurred checkpoints.
func TestSteward_InterruptedExecution(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	loadAcmeWith(t, e, stewardAtlas(t, `[
	  {"checkpoint_id":"after","mode":"observational","trigger":{"type":"action_post","patterns":["ticket.get"]}},
	  {"checkpoint_id":"oops","trigger":{"type":"error_occurred"},"guidance":{"content":"It may have run: check before retrying."}}]`))
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"}))); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = openEngineAt(t, dir)
	var fired []string
	for _, ev := range sessionTrace(t, e, w.ID) {
		if ev.EventType == steward.TraceTriggered {
			var p map[string]any
			json.Unmarshal(ev.Payload, &p)
			fired = append(fired, p["checkpoint_id"].(string))
		}
	}
	if !slices.Equal(fired, []string{"after", "oops"}) {
		t.Fatalf("fired %v at restart, want after and oops", fired)
	}
}

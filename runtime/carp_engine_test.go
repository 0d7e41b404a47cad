package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/trace"
	"github.com/wacpd/wacpd/workspace"
)

// loadAcme loads the seed's atlas without its steward checkpoints (the
// CARP tests; steward_engine_test.go loads them with loadAcmeCheckpoints).
func loadAcme(t testing.TB, e *Engine) *atlas.Manifest {
	t.Helper()
	return loadAcmeWith(t, e, func(m *atlas.Manifest) { m.Checkpoints = nil })
}

func loadAcmeWith(t testing.TB, e *Engine, mod func(*atlas.Manifest)) *atlas.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "atlas", "testdata", "acme.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := atlas.Parse("acme.json", b)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(m)
	}
	if err := atlas.Validate("acme.json", m); err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadAtlas(ctx, m, "test"); err != nil {
		t.Fatal(err)
	}
	return m
}

func carpReq(t testing.TB, w *workspace.Workspace, op string, mod func(*carp.Request)) carp.Request {
	t.Helper()
	r := carp.Request{CARPVersion: carp.Version, RequestID: uuid.Must(uuid.NewV7()).String(), Timestamp: "2026-11-27T12:00:00Z",
		Operation: op, Requester: carp.Requester{AgentID: AgentID(w), SessionID: w.ID}}
	if op == carp.OpResolve {
		r.Task = &carp.Task{Goal: "answer ticket T-1"}
	}
	if mod != nil {
		mod(&r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	d, ce := carp.DecodeRequest(b, op)
	if ce != nil {
		t.Fatalf("request %s: %v", b, ce)
	}
	return d
}

func action(res string, id string, params map[string]any) func(*carp.Request) {
	return func(r *carp.Request) {
		r.Action = &carp.ActionSpec{ActionID: id, ActionType: id, ResolutionID: res, Parameters: params}
	}
}

func carpCode(t testing.TB, what string, err error, want string) {
	t.Helper()
	var ce *CarpError
	if !errors.As(err, &ce) || ce.Err.Code != want {
		t.Fatalf("%s: %v, want CARP %s", what, err, want)
	}
}

func sessionTrace(t testing.TB, e *Engine, session string) []trace.Event {
	t.Helper()
	evs, next, err := e.TraceEvents(ctx, session, 0, 100000)
	if err != nil || next != 0 {
		t.Fatalf("TraceEvents: %v (next %d)", err, next)
	}
	if v := trace.Verify(evs); v != nil {
		t.Fatalf("session %s: %v", session, v)
	}
	return evs
}

func countTypes(evs []trace.Event) map[string]int {
	m := map[string]int{}
	for _, ev := range evs {
		m[ev.EventType]++
	}
	return m
}

// TestCarp_ResolveExecuteFinish: a resolve keeps its grant; an execute
// records its intent before anything is forwarded, counts its limits on
// execute (the rate limit of 2 per 60 s refuses the third execute, not
// the third resolve), and its outcome is recorded with the output's hash;
// every step is a TRACE event of the workspace's session, chained and in
// the log's tree.
func TestCarp_ResolveExecuteFinish(t *testing.T) {
	e := openVerified(t)
	loadAcme(t, e)
	w := activeWorkspace(t, e, "worker")

	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Type == carp.DecisionDeny || len(res.AllowedActions) == 0 {
		t.Fatalf("resolution: %+v", res.Decision)
	}
	for range 3 { // resolving counts nothing
		if _, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, func(r *carp.Request) { r.Task.Goal = "another" })); err != nil {
			t.Fatal(err)
		}
	}
	comment := map[string]any{"ticket_id": "T-1", "body": "hello"}
	for i := range 2 {
		done, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.comment", comment)))
		if err != nil || done != nil || in == nil {
			t.Fatalf("execute %d: %v %v %v", i, done, in, err)
		}
		if in.Tool.ActionID != "ticket.comment" || in.Tool.SessionID != w.ID || in.Execution.Status != execRunning {
			t.Fatalf("intent %+v", in)
		}
		if x := e.Executions(w.ID); x[len(x)-1].Status != execRunning {
			t.Fatalf("the intent is not recorded before the forward: %+v", x)
		}
		r, err := e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusSuccess, Output: json.RawMessage(`{"ok":true}`)}})
		if err != nil || r.Status != carp.StatusSuccess || r.Result.OutputHash != carp.ContentHash([]byte(`{"ok":true}`)) {
			t.Fatalf("finish %d: %+v %v", i, r, err)
		}
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.comment", comment)))
	carpCode(t, "the third comment in 60 s", err, carp.CodeRateLimited)

	evs := sessionTrace(t, e, w.ID)
	n := countTypes(evs)
	if n[carp.TraceSessionStarted] != 1 || n[carp.TraceResolutionComplete] != 2 || n[carp.TraceResolutionCached] != 2 || n[carp.TraceActionExecuted] != 2 ||
		n[carp.TraceActionApproved] != 2 || n[carp.TracePolicyViolated] != 1 {
		t.Errorf("TRACE of the session: %v", n)
	}
	for _, ev := range evs {
		if bytes.Contains(ev.Payload, []byte("hello")) || bytes.Contains(ev.Payload, []byte(`"ok":true`)) {
			t.Errorf("TRACE event %s carries content: %s", ev.EventType, ev.Payload)
		}
	}
	all, _, err := e.TraceEvents(ctx, "", 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	root, err := trace.Root(all)
	if err != nil {
		t.Fatal(err)
	}
	if size, r := e.TraceSize(); size != uint64(len(all)) || !bytes.Equal(r, root) {
		t.Errorf("the log's tree: size %d root %x; the events give %d, %x", size, r, len(all), root)
	}

	// The session ends with its workspace.
	if _, err := e.Abort(ctx, e.Root(), w.ID, "done"); err != nil {
		t.Fatal(err)
	}
	evs = sessionTrace(t, e, w.ID)
	if last := evs[len(evs)-1]; last.EventType != carp.TraceSessionEnded || !bytes.Contains(last.Payload, []byte(`"state":"failed"`)) {
		t.Errorf("the session's last event after its workspace failed: %s %s", last.EventType, last.Payload)
	}
}

// TestCarp_Refusals: the session is the workspace's agent; an unknown or
// unloaded atlas; a resolution not found, expired by an unload, an
// action it does not permit, parameters failing the schema; each refusal
// is recorded in TRACE and changes nothing else.
func TestCarp_Refusals(t *testing.T) {
	e := openVerified(t)
	m := loadAcme(t, e)
	w := activeWorkspace(t, e, "worker")
	other := activeWorkspace(t, e, "worker")

	_, err := e.CarpResolve(ctx, w.ID, carpReq(t, other, carp.OpResolve, nil))
	carpCode(t, "another workspace's session", err, carp.CodeForbidden)
	_, err = e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, func(r *carp.Request) { r.Requester.AgentID = "someone" }))
	carpCode(t, "another agent_id", err, carp.CodeForbidden)
	_, err = e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, func(r *carp.Request) { r.Scope = &carp.Scope{Atlases: []string{"com.nope"}} }))
	carpCode(t, "an unknown atlas", err, carp.CodeAtlasNotFound)

	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(uuid.NewString(), "ticket.get", map[string]any{"ticket_id": "T-1"})))
	carpCode(t, "an unknown resolution", err, carp.CodeResolutionNotFound)
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "user.ban", map[string]any{})))
	carpCode(t, "a denied action", err, carp.CodeActionNotPermitted)
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": 7})))
	carpCode(t, "parameters failing the schema", err, carp.CodeConstraintViolated)
	v, err := e.CarpValidate(ctx, w.ID, carpReq(t, w, carp.OpValidate, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": 7})))
	if err != nil || v.Valid || len(v.Violations) == 0 {
		t.Fatalf("validate of bad parameters: %+v %v", v, err)
	}
	v, err = e.CarpValidate(ctx, w.ID, carpReq(t, w, carp.OpValidate, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
	if err != nil || !v.Valid {
		t.Fatalf("validate of good parameters: %+v %v", v, err)
	}
	if len(e.Executions("")) != 0 {
		t.Fatalf("refusals and validations recorded executions: %+v", e.Executions(""))
	}
	if _, err := e.UnloadAtlas(ctx, m.AtlasID, "test"); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
	carpCode(t, "a resolution made under an unloaded atlas", err, carp.CodeResolutionExpired)
	n := countTypes(sessionTrace(t, e, w.ID))
	// error.occurred: the two sessions refused (recorded in w's own) and the unknown atlas.
	if n[carp.TraceErrorOccurred] != 3 || n[carp.TraceActionDenied] < 3 {
		t.Errorf("refusals in TRACE: %v", n)
	}
	run := countTypes(sessionTrace(t, e, e.Root()))
	if run["atlas.loaded"] != 1 || run["atlas.unloaded"] != 1 {
		t.Errorf("the run's session: %v", run)
	}
}

// TestCarp_HeldDryRunIdempotentCached: an action that requires approval
// is held (pending_approval, not forwarded); a dry run checks without an
// intent; an execute repeated with its idempotency_key answers the first
// one's result; a second identical resolve is answered from the cache
// until an atlas changes.
func TestCarp_HeldDryRunIdempotentCached(t *testing.T) {
	e := openVerified(t)
	m := loadAcme(t, e)
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	done, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.delete", map[string]any{"ticket_id": "T-1"})))
	if err != nil || in != nil || done == nil || done.Status != carp.StatusPendingApproval {
		t.Fatalf("an action requiring approval: %+v %+v %v", done, in, err)
	}
	done, in, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, func(r *carp.Request) {
		action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})(r)
		r.ExecutionOptions = &carp.ExecutionOptions{DryRun: true}
	}))
	if err != nil || in != nil || done == nil || done.Status != carp.StatusSuccess {
		t.Fatalf("a dry run: %+v %+v %v", done, in, err)
	}
	idem := func(r *carp.Request) {
		action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})(r)
		r.IdempotencyKey = "k1"
	}
	_, in, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, idem))
	if err != nil || in == nil {
		t.Fatal(err)
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, idem))
	carpCode(t, "the same key while running", err, carp.CodeServiceUnavailable)
	first, err := e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusSuccess, Output: json.RawMessage(`1`)}})
	if err != nil {
		t.Fatal(err)
	}
	again, in2, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, idem))
	if err != nil || in2 != nil || again == nil || again.ExecutionID != first.ExecutionID || again.Status != carp.StatusSuccess {
		t.Fatalf("the same key again: %+v %+v %v", again, in2, err)
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, func(r *carp.Request) {
		action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-2"})(r)
		r.IdempotencyKey = "k1"
	}))
	carpCode(t, "the same key for another request", err, carp.CodeInvalidRequest)
	// A dry run takes no key: the execute it rehearses runs with it.
	rehearse := func(dry bool) func(*carp.Request) {
		return func(r *carp.Request) {
			action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-3"})(r)
			r.IdempotencyKey = "k2"
			r.ExecutionOptions = &carp.ExecutionOptions{DryRun: dry}
		}
	}
	if _, _, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, rehearse(true))); err != nil {
		t.Fatal(err)
	}
	if done, in3, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, rehearse(false))); err != nil || done != nil || in3 == nil {
		t.Fatalf("the execute after its dry run with its key: %+v %+v %v", done, in3, err)
	}

	c1, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil || c1.ResolutionID != res.ResolutionID {
		t.Fatalf("a repeated resolve was not answered from the cache: %s vs %s (%v)", c1.ResolutionID, res.ResolutionID, err)
	}
	m2 := *m
	m2.Version = "2.1.1"
	if _, err := e.LoadAtlas(ctx, &m2, "test"); err != nil {
		t.Fatal(err)
	}
	c2, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil || c2.ResolutionID == res.ResolutionID {
		t.Fatalf("the cache outlived an atlas change: %v", err)
	}
	if n := countTypes(sessionTrace(t, e, w.ID)); n[carp.TraceResolutionCached] != 1 {
		t.Errorf("cached resolutions in TRACE: %v", n)
	}
}

// TestCarp_InterruptedAndLate: an execution whose intent is recorded and
// whose outcome is not when the engine stops is, after reopening, failed
// and not completed (never success); a tool's answer after a timeout is
// recorded as late, and the timeout stands.
func TestCarp_InterruptedAndLate(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	loadAcme(t, e)
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	get := action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})
	_, slow, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, get))
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.CarpFinish(ctx, slow.Execution.ID, Outcome{Failure: "timeout"})
	if err != nil || r.Status != carp.StatusTimeout {
		t.Fatalf("timeout: %+v %v", r, err)
	}
	if err := e.CarpLate(ctx, slow.Execution.ID, carp.ToolReply{Status: carp.StatusSuccess, Output: json.RawMessage(`"late"`)}); err != nil {
		t.Fatal(err)
	}
	if err := e.CarpLate(ctx, slow.Execution.ID, carp.ToolReply{Status: carp.StatusSuccess}); err == nil {
		t.Error("a second late answer was recorded")
	}
	_, lost, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, func(r *carp.Request) { get(r); r.IdempotencyKey = "lost" }))
	if err != nil {
		t.Fatal(err)
	}
	e.Close()

	e = openEngineAt(t, dir)
	var got Execution
	for _, x := range e.Executions(w.ID) {
		switch x.ID {
		case lost.Execution.ID:
			got = x
		case slow.Execution.ID:
			if x.Status != carp.StatusTimeout || x.Late != carp.StatusSuccess || x.LateOutputHash != carp.ContentHash([]byte(`"late"`)) {
				t.Errorf("the late answer: %+v", x)
			}
		}
	}
	if got.Status != carp.StatusFailed {
		t.Fatalf("the interrupted execution after reopening: %+v", got)
	}
	again, _, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, func(r *carp.Request) { get(r); r.IdempotencyKey = "lost" }))
	if err != nil || again.Status != carp.StatusFailed || again.Error == nil || again.Error.Details["completed"] != false {
		t.Fatalf("asked again: %+v %v", again, err)
	}
	evs := sessionTrace(t, e, w.ID)
	last := evs[len(evs)-2] // the asked-again request.received follows it
	if last.EventType != carp.TraceActionFailed || !bytes.Contains(last.Payload, []byte(`"completed":false`)) {
		t.Errorf("the interruption in TRACE: %s %s", last.EventType, last.Payload)
	}
	if n := countTypes(evs); n[carp.TraceActionExecuted] != 1 { // the late answer
		t.Errorf("TRACE: %v", n)
	}
	// The log's tree, reloaded and grown after reopening, is the events'.
	all, _, err := e.TraceEvents(ctx, "", 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if root, err := trace.Root(all); err != nil {
		t.Fatal(err)
	} else if size, r := e.TraceSize(); size != uint64(len(all)) || !bytes.Equal(r, root) {
		t.Errorf("the log's tree after reopening: size %d, root %x; the events give %d, %x", size, r, len(all), root)
	}
	verify(t, e)
}

// TestCarp_ReplayDiff: the same requests against the same atlas give the
// same TRACE but for the dynamic fields (trace.Diff finds nothing); against
// an atlas that denies one more action, the diff names what changed.
func TestCarp_ReplayDiff(t *testing.T) {
	session := func(deny bool) []trace.Event {
		e := openVerified(t)
		m := loadAcme(t, e)
		if deny {
			m2 := *m
			m2.Version = "2.2.0"
			m2.Policies = append(slices.Clone(m.Policies), atlas.Policy{PolicyID: "no-comments", Type: "deny", Actions: []string{"ticket.comment"}, Priority: 200})
			if _, err := e.LoadAtlas(ctx, &m2, "test"); err != nil {
				t.Fatal(err)
			}
		}
		w := activeWorkspace(t, e, "worker")
		res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = e.CarpValidate(ctx, w.ID, carpReq(t, w, carp.OpValidate, action(res.ResolutionID, "ticket.comment", map[string]any{"ticket_id": "T-1", "body": "x"})))
		return sessionTrace(t, e, w.ID)
	}
	a, b := session(false), session(false)
	if d := trace.Diff(a, b); len(d) != 0 {
		t.Fatalf("a replay differs: %v", d)
	}
	c := session(true)
	d := trace.Diff(a, c)
	if len(d) == 0 {
		t.Fatal("a replay under an atlas that denies ticket.comment shows no difference")
	}
	var paths []string
	for _, ch := range d {
		paths = append(paths, ch.String())
	}
	if !slices.ContainsFunc(paths, func(s string) bool { return strings.Contains(s, "denied_actions") || strings.Contains(s, "valid") }) {
		t.Errorf("the diff does not name the changed decisions: %v", paths)
	}
}

// TestCarp_NoToolIsNotCounted: an execution no tool service got does not
// count against the action's rate limit (in the batch, after it, and after
// reopening); one that timed out does.
func TestCarp_NoToolIsNotCounted(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	loadAcme(t, e)
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	comment := action(res.ResolutionID, "ticket.comment", map[string]any{"ticket_id": "T-1", "body": "x"})
	for i := range 3 { // the limit is 2 per 60 s
		_, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, comment))
		if err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
		if r, err := e.CarpFinish(ctx, in.Execution.ID, Outcome{Failure: "no_responders"}); err != nil || r.Error.Code != carp.CodeServiceUnavailable {
			t.Fatalf("finish %d: %+v %v", i, r, err)
		}
	}
	e.Close()
	e = openEngineAt(t, dir)
	for i := range 2 {
		_, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, comment))
		if err != nil {
			t.Fatalf("execute %d after reopening: %v", i, err)
		}
		if _, err := e.CarpFinish(ctx, in.Execution.ID, Outcome{Failure: "timeout"}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, comment))
	carpCode(t, "a third after two timeouts", err, carp.CodeRateLimited)
}

// TestCarp_TraceHoldsNoContent: a schema violation's message quotes the
// value it refused; TRACE gets its hash, not the value. And output_hash is
// the SHA-256 of the output as the agent receives it.
func TestCarp_TraceHoldsNoContent(t *testing.T) {
	e := openVerified(t)
	m := loadAcme(t, e)
	m2 := *m
	m2.Version = "2.1.9"
	m2.Actions = slices.Clone(m.Actions)
	for i, a := range m2.Actions {
		if a.ActionID == "ticket.get" {
			m2.Actions[i].ParametersSchema = json.RawMessage(`{"type":"object","properties":{"ticket_id":{"type":"string","pattern":"^T-[0-9]+$"}}}`)
		}
	}
	if _, err := e.LoadAtlas(ctx, &m2, "test"); err != nil {
		t.Fatal(err)
	}
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "SECRET-4111"})))
	carpCode(t, "a parameter against the pattern", err, carp.CodeConstraintViolated)
	var ce *CarpError
	if errors.As(err, &ce) && !strings.Contains(ce.Err.Message, "SECRET") {
		t.Logf("the refusal's message does not quote the value (%s): the test shows less than it could", ce.Err.Message)
	}
	for _, ev := range sessionTrace(t, e, w.ID) {
		if bytes.Contains(ev.Payload, []byte("SECRET")) {
			t.Errorf("TRACE %s holds the parameter's value: %s", ev.EventType, ev.Payload)
		}
	}

	_, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusSuccess, Output: json.RawMessage(`{ "a": "<b>&" }`)}})
	if err != nil {
		t.Fatal(err)
	}
	wireForm, _ := json.Marshal(r)
	var got carp.ExecutionResult
	if err := json.Unmarshal(wireForm, &got); err != nil {
		t.Fatal(err)
	}
	if carp.ContentHash(got.Result.Output) != got.Result.OutputHash {
		t.Errorf("output_hash %s is not the SHA-256 of the output received, %s", got.Result.OutputHash, got.Result.Output)
	}
}

// TestCarp_IntentFailsNothingForwarded: audit before effect — when the
// intent's commit fails, CarpExecute returns no intent (the daemon
// forwards nothing) and nothing of it is recorded, in TRACE or elsewhere.
func TestCarp_IntentFailsNothingForwarded(t *testing.T) {
	e := openVerified(t)
	loadAcme(t, e)
	w := activeWorkspace(t, e, "worker")
	res, err := e.CarpResolve(ctx, w.ID, carpReq(t, w, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	before := e.TraceLen()
	settled(t, e) // no batch in flight reads failAt while it is set
	e.cfg.failAt = func(step string) error {
		if step == "execution" {
			return errors.New("disk gone")
		}
		return nil
	}
	done, in, err := e.CarpExecute(ctx, w.ID, carpReq(t, w, carp.OpExecute, action(res.ResolutionID, "ticket.get", map[string]any{"ticket_id": "T-1"})))
	// failAt stays: the degraded engine's probes read it from the committer.
	if err == nil || done != nil || in != nil {
		t.Fatalf("a failed intent: %+v %+v %v", done, in, err)
	}
	if len(e.Executions("")) != 0 || e.TraceLen() != before {
		t.Fatalf("a failed intent left %d executions, TRACE %d -> %d", len(e.Executions("")), before, e.TraceLen())
	}
	// (The engine is in degraded mode now, as after any failed write.)
}

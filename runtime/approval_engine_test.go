package runtime

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// codeAtlas is an atlas of file operations with an approval policy: up to
// medium risk without a checkpoint, docs/** and the local provider
// approved from the start.
const codeAtlas = `{"atlas_version":"1.0","atlas_id":"com.acme.code","version":"1.0.0","name":"Code",
 "policies":[{"policy_id":"allow","type":"allow","actions":["file.*","agent.*","web.*"]},
  {"policy_id":"approve-deletes","type":"requires_approval","actions":["file.delete"],"reason":"deletes are final","approval_timeout_seconds":900}],
 "actions":[
  {"action_id":"file.write","risk_tier":"medium","side_effect_class":"reversible","provider_class":"local","path_parameters":["path","paths"]},
  {"action_id":"file.delete","risk_tier":"high","side_effect_class":"irreversible","provider_class":"local","path_parameters":["path"]},
  {"action_id":"file.read","risk_tier":"low","side_effect_class":"read_only","provider_class":"local","path_parameters":["path"]},
  {"action_id":"agent.spawn","risk_tier":"low","side_effect_class":"reversible","delegation":true},
  {"action_id":"web.fetch","risk_tier":"low","side_effect_class":"read_only","provider_class":"external_api"}],
 "approvals":{"baseline_risk_tier":"medium","approved_paths":["docs/**"],"provider_classes":["local"],%s
   "permit_ttl_seconds":600}}`

func loadCode(t testing.TB, e *Engine, extra string) {
	t.Helper()
	m, err := atlas.Parse("code.json", []byte(strings.Replace(codeAtlas, "%s", extra, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := atlas.Validate("code.json", m); err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadAtlas(ctx, m, "test"); err != nil {
		t.Fatal(err)
	}
}

// rig is an engine with the code atlas, an operator, and a worker with a
// resolution.
type rig struct {
	t   *testing.T
	e   *Engine
	w   *workspace.Workspace
	res string
}

func newRig(t *testing.T, extra string, mod ...func(*Config)) *rig {
	e := openVerified(t, mod...)
	loadCode(t, e, extra)
	mkUser(t, e, "op", user.InjectDirectiveAny)
	r := &rig{t: t, e: e, w: activeWorkspace(t, e, "worker")}
	r.resolve()
	return r
}

func (r *rig) resolve() {
	res, err := r.e.CarpResolve(ctx, r.w.ID, carpReq(r.t, r.w, carp.OpResolve, nil))
	if err != nil {
		r.t.Fatal(err)
	}
	r.res = res.ResolutionID
}

func (r *rig) exec(id string, params map[string]any, approvalID string) (*carp.ExecutionResult, *Intent, error) {
	r.t.Helper()
	return r.e.CarpExecute(ctx, r.w.ID, carpReq(r.t, r.w, carp.OpExecute, func(q *carp.Request) {
		action(r.res, id, params)(q)
		q.ApprovalID = approvalID
	}))
}

// held executes and wants it held at a checkpoint of kind; it returns the
// result (with its approval).
func (r *rig) held(id string, params map[string]any, kind string) *carp.ExecutionResult {
	r.t.Helper()
	res, in, err := r.exec(id, params, "")
	if err != nil || in != nil || res == nil || res.Status != carp.StatusPendingApproval || res.Approval == nil {
		r.t.Fatalf("%s %v: want pending_approval, got %+v %+v %v", id, params, res, in, err)
	}
	if got := res.Approval.CheckpointPending.CheckpointType; got != kind {
		r.t.Fatalf("%s: checkpoint_type %s, want %s (%s)", id, got, kind, res.Approval.CheckpointPending.TriggerDescription)
	}
	return res
}

// runs executes and wants the intent (the tool gets it), then finishes it.
func (r *rig) runs(id string, params map[string]any, approvalID string) Execution {
	r.t.Helper()
	res, in, err := r.exec(id, params, approvalID)
	if err != nil || in == nil {
		r.t.Fatalf("%s %v: want it forwarded, got %+v %v", id, params, res, err)
	}
	if _, err := r.e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusSuccess, Output: json.RawMessage(`{}`)}}); err != nil {
		r.t.Fatal(err)
	}
	return in.Execution
}

func (r *rig) answer(gate string, body map[string]any) (highway.Gate, error) {
	body["gate_id"] = gate
	return r.e.ResolveGate(ctx, "op", mustJSON(body))
}

func denial(t testing.TB, err error, reason string) map[string]any {
	t.Helper()
	var ce *CarpError
	if !errors.As(err, &ce) || ce.Err.Code != carp.CodeActionDenied {
		t.Fatalf("want ACTION_DENIED, got %v", err)
	}
	d, _ := ce.Err.Details["denial"].(map[string]any)
	if d == nil || !strings.Contains(d["reason"].(string), reason) {
		t.Fatalf("denial %v, want reason %s", ce.Err.Details, reason)
	}
	return d
}

// TestApproval_HeldApprovedRunsOnce: an action that requires approval is
// held at a gate of type envelope_delivery whose subject carries the nine
// fields; its irreversible approval needs confirm; the approved request
// runs once, as the held execution, under a permit used once.
func TestApproval_HeldApprovedRunsOnce(t *testing.T) {
	r := newRig(t, "")
	p := map[string]any{"path": "src/a.go"}
	res := r.held("file.delete", p, approval.TriggerHighRisk)
	g, err := r.e.Gate(ctx, res.Approval.ApprovalID)
	if err != nil || g.Type != highway.EnvelopeDelivery || !g.Pending() || !g.Irreversible || g.SubjectID != res.ExecutionID {
		t.Fatalf("gate %+v %v", g, err)
	}
	if g.Timeout == nil || *g.Timeout != "15m0s" || g.Fallback == nil || *g.Fallback != highway.FallbackReject {
		t.Fatalf("the checkpoint's timeout is the requires_approval policy's (900 s), falling back to reject: %v %v", g.Timeout, g.Fallback)
	}
	var subj struct {
		Pending map[string]string `json:"checkpoint_pending"`
	}
	if err := json.Unmarshal(g.Subject, &subj); err != nil || len(subj.Pending) != 9 {
		t.Fatalf("subject %s: %v", g.Subject, err)
	}
	for k, v := range subj.Pending {
		if v == "" {
			t.Errorf("checkpoint_pending.%s is empty", k)
		}
	}
	if len(trailWhere(t, r.e, trail.EventGateTriggered, map[string]string{"gate_id": g.ID, "gate_type": "envelope_delivery"})) != 1 {
		t.Error("no gate_triggered in the trail")
	}
	// Asked again before the decision: still pending, the same execution.
	again, _, err := r.exec("file.delete", p, g.ID)
	if err != nil || again.Status != carp.StatusPendingApproval || again.ExecutionID != res.ExecutionID {
		t.Fatalf("asked again while pending: %+v %v", again, err)
	}
	if _, err := r.answer(g.ID, map[string]any{"action": "approve"}); Code(err) != wire.CodeInvalidStructure || !strings.Contains(err.Error(), "second confirmation") {
		t.Fatalf("a single approve of an irreversible action: %v", err)
	}
	if _, err := r.answer(g.ID, map[string]any{"action": "approve", "confirm": true}); err != nil {
		t.Fatal(err)
	}
	ref, err := r.e.ApprovalStatus(ctx, r.w.ID, g.ID, 0)
	if err != nil || ref.Status != approval.StatusApproved || ref.PermitID == "" || ref.Outcome != approval.OutcomeContinue {
		t.Fatalf("status %+v %v", ref, err)
	}
	x := r.runs("file.delete", p, g.ID)
	if x.ID != res.ExecutionID || x.PermitID != ref.PermitID {
		t.Fatalf("the approved request ran as %s under %s, want the held %s under %s", x.ID, x.PermitID, res.ExecutionID, ref.PermitID)
	}
	_, _, err = r.exec("file.delete", p, g.ID)
	denial(t, err, approval.PermitUsed)
	r.held("file.delete", p, approval.TriggerHighRisk) // without the approval: a new checkpoint
	types := countTypes(sessionTrace(t, r.e, r.w.ID))
	for _, ty := range []string{approval.TraceCheckpointOpened, approval.TraceDecided, approval.TracePermitIssued, approval.TracePermitUsed} {
		if types[ty] == 0 {
			t.Errorf("no %s in TRACE: %v", ty, types)
		}
	}
}

// TestApproval_ArgumentsMutated: an execute under an approval with one
// argument changed is refused, the approval cancelled, and the tool's
// boundary untrusted: its next request needs its own approval.
func TestApproval_ArgumentsMutated(t *testing.T) {
	r := newRig(t, "")
	res := r.held("file.delete", map[string]any{"path": "src/a.go"}, approval.TriggerHighRisk)
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "approve", "confirm": true}); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.exec("file.delete", map[string]any{"path": "src/b.go"}, res.Approval.ApprovalID)
	d := denial(t, err, approval.ReasonArgumentsMutated)
	if d["approved_digest"] == d["request_digest"] {
		t.Fatalf("denial %v", d)
	}
	_, _, err = r.exec("file.delete", map[string]any{"path": "src/a.go"}, res.Approval.ApprovalID)
	denial(t, err, approval.ReasonArgumentsMutated) // cancelled: not even the original runs
	st := r.e.Approvals(ctx, r.w.ID)[0]
	if len(st.Permits) != 1 || st.Permits[0].Status != approval.PermitCancelled {
		t.Fatalf("permits %+v", st.Permits)
	}
	if len(st.Trust) != 1 || st.Trust[0].Boundary != "tool:file.delete" || st.Trust[0].State != approval.Untrusted {
		t.Fatalf("trust %+v", st.Trust)
	}
	// Another tool's boundary is untouched: a write within docs/ runs.
	r.runs("file.write", map[string]any{"path": "docs/a.md"}, "")
}

// TestApproval_ScopeGrowth: approve a write of src/a.go; a write of
// src/b.go opens a new checkpoint whose scope_delta names it; src/a.go
// with other arguments needs its own approval too (an approval does not
// widen the scope beyond its permit); a modified envelope covers what it
// names while its permit lasts.
func TestApproval_ScopeGrowth(t *testing.T) {
	r := newRig(t, "")
	r.runs("file.write", map[string]any{"path": "docs/x.md"}, "") // approved from the start
	res := r.held("file.write", map[string]any{"path": "src/a.go", "body": "1"}, approval.TriggerPathScope)
	if res.Approval.CheckpointPending.ScopeDelta != "+path src/a.go" {
		t.Fatalf("scope_delta %q", res.Approval.CheckpointPending.ScopeDelta)
	}
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "approve"}); err != nil {
		t.Fatal(err) // reversible: one approve is enough
	}
	r.runs("file.write", map[string]any{"path": "src/a.go", "body": "1"}, res.Approval.ApprovalID)
	b := r.held("file.write", map[string]any{"path": "src/b.go", "body": "1"}, approval.TriggerPathScope)
	if b.Approval.CheckpointPending.ScopeDelta != "+path src/b.go" {
		t.Fatalf("scope_delta %q", b.Approval.CheckpointPending.ScopeDelta)
	}
	r.held("file.write", map[string]any{"path": "src/a.go", "body": "2"}, approval.TriggerPathScope)
	// A modified envelope: src/** for three uses.
	if _, err := r.answer(b.Approval.ApprovalID, map[string]any{"action": "modify",
		"modifications": map[string]any{"payload": map[string]any{"paths": []string{"lib/**"}, "uses": 3, "ttl_seconds": 60}}}); Code(err) != wire.CodeInvalidStructure {
		t.Fatalf("an envelope that does not cover the held request: %v", err)
	}
	if _, err := r.answer(b.Approval.ApprovalID, map[string]any{"action": "modify",
		"modifications": map[string]any{"payload": map[string]any{"paths": []string{"src/**"}, "uses": 3, "ttl_seconds": 60}}}); err != nil {
		t.Fatal(err)
	}
	r.runs("file.write", map[string]any{"path": "src/b.go", "body": "1"}, b.Approval.ApprovalID)
	r.runs("file.write", map[string]any{"path": "src/deep/c.go"}, "")
}

// TestApproval_DenyHaltHeadless: a denial cancels the held execution
// (the tool never had it); halt suspends the workspace; with no operator
// the protocol denies; a timeout denies, never approves.
func TestApproval_DenyHaltHeadless(t *testing.T) {
	clk := newFakeClock()
	r := newRig(t, `"timeout_seconds":60,`, withFakeClock(clk))
	deny := r.held("file.delete", map[string]any{"path": "a"}, approval.TriggerHighRisk)
	if _, err := r.answer(deny.Approval.ApprovalID, map[string]any{"action": "reject"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.exec("file.delete", map[string]any{"path": "a"}, deny.Approval.ApprovalID)
	denial(t, err, "deny")
	x := r.e.Executions(r.w.ID)
	if x[0].ID != deny.ExecutionID || x[0].Status != carp.StatusCancelled {
		t.Fatalf("the denied execution: %+v", x[0])
	}

	headless := r.held("file.delete", map[string]any{"path": "b"}, approval.TriggerHighRisk)
	g, err := r.answer(headless.Approval.ApprovalID, map[string]any{"action": "deny"})
	if err != nil || g.Resolution.Actor != highway.ActorProtocol || g.Resolution.Reason != highway.ReasonNoOperator {
		t.Fatalf("headless: %+v %v", g.Resolution, err)
	}
	if ref, _ := r.e.ApprovalStatus(ctx, r.w.ID, headless.Approval.ApprovalID, 0); ref.Status != approval.StatusDenied {
		t.Fatalf("headless denial: %+v", ref)
	}
	_, _, err = r.exec("file.delete", map[string]any{"path": "b"}, headless.Approval.ApprovalID)
	denial(t, err, highway.ReasonNoOperator)

	timed := r.held("file.delete", map[string]any{"path": "c"}, approval.TriggerHighRisk)
	clk.Advance(61 * time.Second)
	if n, err := r.e.ExpireGates(ctx, clk.Now()); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	if ref, _ := r.e.ApprovalStatus(ctx, r.w.ID, timed.Approval.ApprovalID, 0); ref.Status != approval.StatusDenied || ref.DecidedBy != highway.ActorFallback {
		t.Fatalf("a timed-out checkpoint: %+v", ref)
	}

	halt := r.held("file.delete", map[string]any{"path": "d"}, approval.TriggerHighRisk)
	if _, err := r.answer(halt.Approval.ApprovalID, map[string]any{"action": "reject", "outcome": "halt"}); err != nil {
		t.Fatal(err)
	}
	if got := wsState(t, r.e, r.w.ID); got != workspace.Suspended {
		t.Fatalf("after halt the workspace is %s", got)
	}
	_, _, err = r.exec("file.read", map[string]any{"path": "docs/a"}, "")
	carpCode(t, "an execute of a halted workflow", err, carp.CodeForbidden)
	if _, err := r.answer(halt.Approval.ApprovalID, map[string]any{"action": "approve"}); Code(err) != wire.CodeInvalidTransition {
		t.Fatalf("answering twice: %v", err)
	}
}

// TestApproval_PerStepAndModes: per_step holds every later step; an
// outcome that does not go with the answer is refused; the modes.
func TestApproval_PerStepAndModes(t *testing.T) {
	r := newRig(t, "")
	res := r.held("file.write", map[string]any{"path": "src/a.go"}, approval.TriggerPathScope)
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "approve", "outcome": "halt"}); Code(err) != wire.CodeInvalidStructure {
		t.Fatalf("approve with halt: %v", err)
	}
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "approve", "outcome": "per_step"}); err != nil {
		t.Fatal(err)
	}
	r.runs("file.write", map[string]any{"path": "src/a.go"}, res.Approval.ApprovalID)
	r.held("file.read", map[string]any{"path": "docs/a"}, approval.TriggerPerStep)
	if _, err := r.e.SetApprovalMode(ctx, "op", wire.ApprovalModeRequest{Workspace: r.w.ID, Mode: "policy"}); err != nil {
		t.Fatal(err)
	}
	r.runs("file.read", map[string]any{"path": "docs/a"}, "") // setting a mode ends per-step

	// Modes: never is refused by this policy; always checkpoints a read.
	r2 := newRig(t, "")
	if _, err := r2.e.SetApprovalMode(ctx, "op", wire.ApprovalModeRequest{Workspace: r2.w.ID, Mode: "never"}); Code(err) != wire.CodePermissionDenied {
		t.Fatalf("never refused by policy: %v", err)
	}
	if _, err := r2.e.SetApprovalMode(ctx, "op", wire.ApprovalModeRequest{Workspace: r2.w.ID, Mode: "sometimes"}); Code(err) != wire.CodeInvalidStructure {
		t.Fatalf("a bad mode: %v", err)
	}
	if _, err := r2.e.SetApprovalMode(ctx, "op", wire.ApprovalModeRequest{Workspace: r2.w.ID, Mode: "always"}); err != nil {
		t.Fatal(err)
	}
	r2.held("file.read", map[string]any{"path": "docs/a"}, approval.TriggerAlways)

	// never, allowed: a provider-class change still fires.
	r3 := newRig(t, `"allow_never":true,`)
	if _, err := r3.e.SetApprovalMode(ctx, "op", wire.ApprovalModeRequest{Workspace: r3.w.ID, Mode: "never"}); err != nil {
		t.Fatal(err)
	}
	r3.runs("file.read", map[string]any{"path": "docs/a"}, "")
	r3.held("web.fetch", map[string]any{"url": "https://example.com"}, approval.TriggerProvider)
	r3.held("agent.spawn", map[string]any{}, approval.TriggerDelegation)
	if _, err := r3.e.SetApprovalMode(ctx, "nobody", wire.ApprovalModeRequest{Workspace: r3.w.ID, Mode: "always"}); err == nil {
		t.Fatal("a user without a record set the mode")
	}
}

// TestApproval_ExpiryRevocation: a permit covers nothing after its expiry
// or its revocation (effective at once).
func TestApproval_ExpiryRevocation(t *testing.T) {
	clk := newFakeClock()
	r := newRig(t, "", withFakeClock(clk))
	res := r.held("file.delete", map[string]any{"path": "a"}, approval.TriggerHighRisk)
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "approve", "confirm": true}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(601 * time.Second)
	r.resolve() // the resolution's own TTL passed too
	_, _, err := r.exec("file.delete", map[string]any{"path": "a"}, res.Approval.ApprovalID)
	denial(t, err, approval.PermitExpired)

	res = r.held("file.delete", map[string]any{"path": "b"}, approval.TriggerHighRisk)
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "modify", "confirm": true,
		"modifications": map[string]any{"payload": map[string]any{"paths": []string{"b", "c"}, "uses": 5, "ttl_seconds": 600}}}); err != nil {
		t.Fatal(err)
	}
	ref, _ := r.e.ApprovalStatus(ctx, r.w.ID, res.Approval.ApprovalID, 0)
	r.runs("file.delete", map[string]any{"path": "c"}, "") // within the envelope
	if _, err := r.e.RevokePermit(ctx, "op", wire.PermitRevokeRequest{PermitID: ref.PermitID}); err != nil {
		t.Fatal(err)
	}
	r.held("file.delete", map[string]any{"path": "b"}, approval.TriggerHighRisk)
	if _, err := r.e.RevokePermit(ctx, "op", wire.PermitRevokeRequest{PermitID: ref.PermitID}); Code(err) != wire.CodeInvalidTransition {
		t.Fatalf("revoking twice: %v", err)
	}
}

// TestApproval_TrustReset: the first violation resets the boundary to
// untrusted at once; halt suspends; invalidate revokes the session's
// permits on the boundary; a restore trusts it again.
func TestApproval_TrustReset(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{"per_step", "per_step"}, {"halt", "halt"}, {"invalidate_envelope", "invalidate"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			r := newRig(t, `"on_violation":"`+tc.policy+`",`)
			// An envelope permit for file.write on src/**.
			res := r.held("file.write", map[string]any{"path": "src/a.go"}, approval.TriggerPathScope)
			if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "modify",
				"modifications": map[string]any{"payload": map[string]any{"paths": []string{"src/**"}, "uses": 5, "ttl_seconds": 600}}}); err != nil {
				t.Fatal(err)
			}
			r.runs("file.write", map[string]any{"path": "src/a.go"}, res.Approval.ApprovalID)
			// The violation: a mutated request under a second approval.
			del := r.held("file.delete", map[string]any{"path": "src/x"}, approval.TriggerHighRisk)
			if _, err := r.answer(del.Approval.ApprovalID, map[string]any{"action": "approve", "confirm": true}); err != nil {
				t.Fatal(err)
			}
			_, _, err := r.exec("file.delete", map[string]any{"path": "src/y"}, del.Approval.ApprovalID)
			denial(t, err, approval.ReasonArgumentsMutated)
			st := r.e.Approvals(ctx, r.w.ID)[0]
			switch tc.want {
			case "halt":
				if got := wsState(t, r.e, r.w.ID); got != workspace.Suspended {
					t.Fatalf("halt: %s", got)
				}
				return
			case "invalidate":
				// file.delete's own permits are revoked; file.write's stays.
				for _, p := range st.Permits {
					if p.Tool == "file.write" && p.Status != approval.PermitActive {
						t.Fatalf("another boundary's permit: %+v", p)
					}
				}
				if st.Envelope.PolicyVersions != nil {
					t.Fatalf("the envelope was not invalidated: %+v", st.Envelope)
				}
			}
			// The untrusted tool needs per-step approval; the other tool's
			// boundary keeps its permit.
			r.held("file.delete", map[string]any{"path": "docs/z"}, approval.TriggerHighRisk)
			if _, err := r.e.RestoreTrust(ctx, "op", wire.TrustRestoreRequest{Workspace: r.w.ID, Boundary: "tool:file.delete"}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.e.RestoreTrust(ctx, "op", wire.TrustRestoreRequest{Workspace: r.w.ID, Boundary: "tool:file.delete"}); Code(err) != wire.CodeInvalidTransition {
				t.Fatalf("restoring a trusted boundary: %v", err)
			}
		})
	}
}

// TestApproval_WaitAndReopen: an agent waiting on its checkpoint is told
// when it is decided; checkpoints and permits survive a reopen.
func TestApproval_WaitAndReopen(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	loadCode(t, e, "")
	mkUser(t, e, "op", user.InjectDirectiveAny)
	r := &rig{t: t, e: e, w: activeWorkspace(t, e, "worker")}
	r.resolve()
	res := r.held("file.delete", map[string]any{"path": "a"}, approval.TriggerHighRisk)
	done := make(chan approval.Ref, 1)
	go func() {
		ref, _ := e.ApprovalStatus(ctx, r.w.ID, res.Approval.ApprovalID, time.Minute)
		done <- ref
	}()
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "approve", "confirm": true}); err != nil {
		t.Fatal(err)
	}
	if ref := <-done; ref.Status != approval.StatusApproved {
		t.Fatalf("the waiter was told %+v", ref)
	}
	if _, err := e.ApprovalStatus(ctx, "other", res.Approval.ApprovalID, 0); Code(err) != wire.CodeNotFound {
		t.Fatalf("another session's approval: %v", err)
	}
	e.Close()
	e = openEngineAt(t, dir)
	r.e = e
	r.runs("file.delete", map[string]any{"path": "a"}, res.Approval.ApprovalID)
}

// TestApproval_SideEffectViolations: a tool that reports a side effect on
// a path the request did not name resets that path's boundary; a read-only
// action that reports any side effect resets its tool's boundary.
func TestApproval_SideEffectViolations(t *testing.T) {
	r := newRig(t, "")
	res, in, err := r.exec("file.write", map[string]any{"path": "docs/a.md"}, "")
	if err != nil || in == nil {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := r.e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusSuccess,
		SideEffects: []carp.SideEffect{{Type: "file_written", Target: "docs/a.md"}, {Type: "file_written", Target: "docs/b.md"}}}}); err != nil {
		t.Fatal(err)
	}
	_, in, err = r.exec("file.read", map[string]any{"path": "docs/c.md"}, "")
	if err != nil || in == nil {
		t.Fatal(err)
	}
	if _, err := r.e.CarpFinish(ctx, in.Execution.ID, Outcome{Reply: &carp.ToolReply{Status: carp.StatusSuccess,
		SideEffects: []carp.SideEffect{{Type: "file_written", Target: "docs/c.md"}}}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, b := range r.e.Approvals(ctx, r.w.ID)[0].Trust {
		got[b.Boundary] = b.State + " " + b.Reason
	}
	want := map[string]string{"path:docs/b.md": "untrusted side_effect_outside_scope", "tool:file.read": "untrusted side_effect_of_read_only_action"}
	if len(got) != len(want) || got["path:docs/b.md"] != want["path:docs/b.md"] || got["tool:file.read"] != want["tool:file.read"] {
		t.Fatalf("trust %v, want %v", got, want)
	}
	// The untrusted path needs an approval now, the others do not.
	r.held("file.write", map[string]any{"path": "docs/b.md"}, approval.TriggerTrust)
	r.runs("file.write", map[string]any{"path": "docs/a.md"}, "")
}

// TestApproval_AuditBeforeEffect: when the commit of an approved
// execute's intent (its permit's use) fails, nothing is forwarded and the
// permit is not used.
func TestApproval_AuditBeforeEffect(t *testing.T) {
	r := newRig(t, "")
	res := r.held("file.delete", map[string]any{"path": "a"}, approval.TriggerHighRisk)
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "approve", "confirm": true}); err != nil {
		t.Fatal(err)
	}
	before := r.e.TraceLen()
	settled(t, r.e)
	r.e.cfg.failAt = func(step string) error {
		if step == "permit" {
			return errors.New("disk gone")
		}
		return nil
	}
	done, in, err := r.exec("file.delete", map[string]any{"path": "a"}, res.Approval.ApprovalID)
	if err == nil || done != nil || in != nil {
		t.Fatalf("a failed intent: %+v %+v %v", done, in, err)
	}
	st := r.e.Approvals(ctx, r.w.ID)[0]
	if len(st.Permits) != 1 || len(st.Permits[0].Uses) != 0 || r.e.TraceLen() != before {
		t.Fatalf("a failed intent used the permit: %+v (TRACE %d -> %d)", st.Permits, before, r.e.TraceLen())
	}
}

// TestApproval_ModePerRun: a mode set on the root workspace is the run's:
// every session without its own mode follows it; a session's own mode
// wins.
func TestApproval_ModePerRun(t *testing.T) {
	r := newRig(t, "")
	if _, err := r.e.SetApprovalMode(ctx, "op", wire.ApprovalModeRequest{Workspace: r.e.Root(), Mode: "always"}); err != nil {
		t.Fatal(err)
	}
	r.held("file.read", map[string]any{"path": "docs/a"}, approval.TriggerAlways)
	if _, err := r.e.SetApprovalMode(ctx, "op", wire.ApprovalModeRequest{Workspace: r.w.ID, Mode: "policy"}); err != nil {
		t.Fatal(err)
	}
	r.runs("file.read", map[string]any{"path": "docs/a"}, "")
}

// TestApproval_OutlivesResolution: an approved request runs under its
// permit after its resolution's TTL (an operator may take longer than a
// resolution lives); without the approval the expired resolution is
// refused. TRACE holds no path in clear.
func TestApproval_OutlivesResolution(t *testing.T) {
	clk := newFakeClock()
	r := newRig(t, "", withFakeClock(clk))
	p := map[string]any{"path": "src/secret-name.go"}
	res := r.held("file.delete", p, approval.TriggerHighRisk)
	clk.Advance(10 * time.Minute) // the resolution (300 s) has expired; the permit (600 s) is issued now
	if _, err := r.answer(res.Approval.ApprovalID, map[string]any{"action": "approve", "confirm": true}); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.exec("file.read", map[string]any{"path": "docs/a"}, "")
	carpCode(t, "an expired resolution without an approval", err, carp.CodeResolutionExpired)
	r.runs("file.delete", p, res.Approval.ApprovalID)
	for _, ev := range sessionTrace(t, r.e, r.w.ID) {
		if strings.Contains(string(ev.Payload), "secret-name") {
			t.Errorf("TRACE %s holds a path: %s", ev.EventType, ev.Payload)
		}
	}
}

// TestApproval_OutcomeOnlyOnCheckpoints: an outcome on a gate that is not
// a checkpoint is refused, and the gate stays pending.
func TestApproval_OutcomeOnlyOnCheckpoints(t *testing.T) {
	cfg := highway.Default()
	cfg.Gates[highway.EnvelopeDelivery] = true
	cfg.Gates[highway.TaskApproval] = false
	e := openVerified(t, withHighway(cfg))
	mkUser(t, e, "op", user.InjectDirectiveAny)
	w := idleWorker(t, e, e.Root())
	id := sendHeld(t, e, w.ID, "directive", "start")
	if _, err := e.ResolveGate(ctx, "op", mustJSON(map[string]any{"gate_id": id, "action": "approve", "outcome": "per_step"})); Code(err) != wire.CodeInvalidStructure {
		t.Fatalf("an outcome on an envelope gate: %v", err)
	}
	if g, _ := e.Gate(ctx, id); !g.Pending() {
		t.Fatal("the refused answer resolved the gate")
	}
}

// TestApproval_WorkspaceEndsCheckpoints: when a workspace ends, its pending
// checkpoints are resolved by the protocol (its gate too) and their held
// executions cancelled: nothing is left for an operator to approve.
func TestApproval_WorkspaceEndsCheckpoints(t *testing.T) {
	r := newRig(t, "")
	res := r.held("file.delete", map[string]any{"path": "a"}, approval.TriggerHighRisk)
	if _, err := r.e.Abort(ctx, r.e.Root(), r.w.ID, "done"); err != nil {
		t.Fatal(err)
	}
	g, err := r.e.Gate(ctx, res.Approval.ApprovalID)
	if err != nil || g.Pending() || g.Resolution.Actor != highway.ActorProtocol {
		t.Fatalf("the checkpoint's gate after the abort: %+v %v", g.Resolution, err)
	}
	ref, _ := r.e.ApprovalStatus(ctx, r.w.ID, res.Approval.ApprovalID, 0)
	if ref.Status != approval.StatusDenied {
		t.Fatalf("the checkpoint after the abort: %+v", ref)
	}
	if x := r.e.Executions(r.w.ID); x[0].Status != carp.StatusCancelled {
		t.Fatalf("the held execution after the abort: %+v", x[0])
	}
}

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/wire"
)

// approvalDaemon is carpDaemon with an operator: the user "operator"
// (inject_directive_any: it answers checkpoints, sets modes, revokes
// permits, restores trust). It returns the worker's and the operator's
// global flags, with -o json, the worker's workspace and a resolution
// permitting ticket.delete, which requires approval and is irreversible
// (its side_effect_class; an action declaring none would be too).
func approvalDaemon(t *testing.T) (worker, op []string, ws, res string) {
	t.Helper()
	admin, worker, ws := carpDaemon(t)
	code, out, errs := wacp(t, append(admin, "-o", "json", "token", "create", "--kind", "user", "--name", "operator",
		"--capabilities", "inject_directive_any")...)
	var tok struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" {
		t.Fatalf("wacp token create --kind user = %d, %q, %q", code, out, errs)
	}
	res = resolve(t, worker, "--goal", "delete T-1", "--actions", "ticket.delete").ResolutionID
	return append(worker, "-o", "json"), []string{"-url", worker[1], "-token", tok.Token, "-o", "json"}, ws, res
}

type result struct {
	code         int
	stdout, errs string
}

// executeAsync runs wacp carp execute with args in a goroutine.
func executeAsync(t *testing.T, worker []string, args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		code, out, errs := wacp(t, append(append(worker, "carp", "execute"), args...)...)
		ch <- result{code, out, errs}
	}()
	return ch
}

func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(40 * time.Second):
		t.Fatal("wacp carp execute --wait did not return")
		return result{}
	}
}

// awaitCheckpoint polls the highway queue until a checkpoint (a gate of
// type envelope_delivery) of workspace ws is pending, and returns its id.
func awaitCheckpoint(t *testing.T, op []string, ws string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out, errs := wacp(t, append(op, "highway", "queue")...)
		var gates []struct {
			ID, Type, Workspace string
		}
		if code != 0 || json.Unmarshal([]byte(out), &gates) != nil {
			t.Fatalf("wacp highway queue = %d, %q, %q", code, out, errs)
		}
		for _, g := range gates {
			if g.Type == "envelope_delivery" && g.Workspace == ws {
				return g.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of %s is pending: %s", ws, out)
		}
		time.Sleep(20 * time.Millisecond) // the poll's interval
	}
}

// approvals returns session ws's approvals (highway approvals -o json).
func approvals(t *testing.T, op []string, ws string) wire.ApprovalState {
	t.Helper()
	code, out, errs := wacp(t, append(op, "highway", "approvals", "--workspace", ws)...)
	var a wire.Approvals
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil || len(a.Sessions) != 1 || a.Sessions[0].Session != ws {
		t.Fatalf("wacp highway approvals --workspace %s = %d, %q, %q; want the session's approvals", ws, code, out, errs)
	}
	return a.Sessions[0]
}

// text returns global flags that end in -o json without them.
func text(global []string) []string {
	return slices.Clone(global[:len(global)-2])
}

// denialOf decodes {"denial": {...}}.
func denialOf(t *testing.T, out string) map[string]any {
	t.Helper()
	var d struct{ Denial map[string]any }
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Denial == nil {
		t.Fatalf("%q is not {\"denial\": {...}} (%v)", out, err)
	}
	return d.Denial
}

// TestCarpExecuteWaitApproved: carp execute --wait holds at the
// checkpoint of ticket.delete, saying so on stderr, while an operator
// answers: an approval of the irreversible action without --confirm is
// refused, with it accepted; the execute is then sent again under the
// approval and reaches the tool stage (no tool service runs:
// failed/SERVICE_UNAVAILABLE, exit 1), as the execution the checkpoint
// held. Its permit is used.
func TestCarpExecuteWaitApproved(t *testing.T) {
	worker, op, ws, res := approvalDaemon(t)
	ch := executeAsync(t, worker, "--resolution", res, "--action", "ticket.delete", "--param", "ticket_id=T-1", "--wait", "30s")
	gate := awaitCheckpoint(t, op, ws)

	code, out, errs := wacp(t, append(op, "highway", "get", gate)...)
	if code != 0 || !strings.Contains(out, `"irreversible": true`) {
		t.Fatalf("wacp highway get %s = %d, %q, %q; want an irreversible checkpoint", gate, code, out, errs)
	}
	code, out, errs = wacp(t, append(op, "highway", "resolve", gate, "--approve")...)
	if code != 2 || !strings.Contains(errs, "second confirmation") {
		t.Fatalf("highway resolve --approve without --confirm = %d, %q, %q; want 2 and the second confirmation asked for", code, out, errs)
	}
	for _, tt := range []struct{ args []string }{
		{[]string{"--outcome", "bogus"}},
		{[]string{"--deny", "--outcome", "halt"}},
		{[]string{"--outcome", "continue_modified"}},
	} {
		if code, _, errs := wacp(t, append(append(op, "highway", "resolve", gate), tt.args...)...); code != 1 || !strings.Contains(errs, `"usage"`) {
			t.Errorf("highway resolve %v = %d, %q; want a usage error", tt.args, code, errs)
		}
	}
	code, out, errs = wacp(t, append(op, "highway", "resolve", gate, "--approve", "--confirm")...)
	if code != 0 || !strings.Contains(out, `"actor": "operator"`) {
		t.Fatalf("highway resolve --approve --confirm = %d, %q, %q", code, out, errs)
	}

	r := await(t, ch)
	var x carp.ExecutionResult
	if err := json.Unmarshal([]byte(r.stdout), &x); err != nil || r.code != 1 || x.Status != carp.StatusFailed ||
		x.Error == nil || x.Error.Code != carp.CodeServiceUnavailable {
		t.Fatalf("carp execute --wait, approved = %d, %q (%v), %q; want 1 and failed/SERVICE_UNAVAILABLE (forwarded, no tool)", r.code, r.stdout, err, r.errs)
	}
	st := approvals(t, op, ws)
	if len(st.Checkpoints) != 1 || st.Checkpoints[0].ApprovalID != gate || st.Checkpoints[0].Status != "approved" {
		t.Fatalf("checkpoints after the approval: %+v", st.Checkpoints)
	}
	cp := st.Checkpoints[0]
	if !strings.Contains(r.errs, gate) || !strings.Contains(r.errs, "("+cp.Pending.CheckpointType+")") || cp.Pending.CheckpointType == "" {
		t.Errorf("carp execute --wait said %q on stderr; want the approval %s and its checkpoint_type %q", r.errs, gate, cp.Pending.CheckpointType)
	}
	if x.ExecutionID != cp.ExecutionID {
		t.Errorf("the execute sent again ran as %s, want the held execution %s", x.ExecutionID, cp.ExecutionID)
	}
	if len(st.Permits) != 1 || st.Permits[0].Status != "used" || len(st.Permits[0].Uses) != 1 {
		t.Errorf("permits after the approved execute: %+v; want one, used once", st.Permits)
	}

	// The table: the session, its checkpoint, its permit.
	code, out, errs = wacp(t, append(text(op), "highway", "approvals", "--workspace", ws)...)
	for _, want := range []string{"session          " + ws + "\n", "mode             policy (default)\n", "policy versions  com.acme.support=com.acme.support@1.0.0#sha256:", "CHECKPOINT", gate + "  ticket.delete  approved  continue  " + cp.Pending.CheckpointType + "  operator",
		"PERMIT", st.Permits[0].ID + "  ticket.delete  used    1/1", "every boundary trusted"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("wacp highway approvals = %d, %q, %q; want %q in it", code, out, errs, want)
		}
	}
}

// TestCarpExecuteWaitDenied: carp execute --wait while wacp highway
// --no-tui denies the checkpoint (no operator present): exit 2 and
// {"denial": ...} from the checkpoint. An execute under the denied
// approval is refused ACTION_DENIED, printed as a denial (exit 2); one
// still pending when --wait ends prints the pending result (exit 2).
func TestCarpExecuteWaitDenied(t *testing.T) {
	worker, op, ws, res := approvalDaemon(t)
	ch := executeAsync(t, worker, "--resolution", res, "--action", "ticket.delete", "--param", "ticket_id=T-1", "--wait", "30s")
	gate := awaitCheckpoint(t, op, ws)
	code, out, errs := wacp(t, append(op, "highway", "--no-tui")...)
	if code != 2 || !strings.Contains(out, `"type":"envelope_delivery"`) {
		t.Fatalf("wacp highway --no-tui = %d, %q, %q; want 2 and the checkpoint denied", code, out, errs)
	}
	r := await(t, ch)
	if r.code != 2 {
		t.Fatalf("carp execute --wait, denied = %d, %q, %q; want 2", r.code, r.stdout, r.errs)
	}
	d := denialOf(t, r.stdout)
	for k, want := range map[string]string{"approval_id": gate, "status": "denied", "outcome": "deny", "reason": "no_operator_present", "decided_by": "protocol"} {
		if d[k] != want {
			t.Errorf("denial %s = %v, want %s (%v)", k, d[k], want, d)
		}
	}
	if d["checkpoint_type"] == "" || d["checkpoint_type"] == nil || d["execution_id"] == "" || d["digest"] == "" {
		t.Errorf("denial %v: want its checkpoint_type, execution_id and digest", d)
	}

	// Under the denied approval: ACTION_DENIED and its details.denial.
	again := []string{"carp", "execute", "--resolution", res, "--action", "ticket.delete", "--param", "ticket_id=T-1", "--approval", gate}
	code, out, errs = wacp(t, append(worker, again...)...)
	if code != 2 || !strings.Contains(errs, `"ACTION_DENIED"`) || denialOf(t, out)["approval_id"] != gate {
		t.Errorf("carp execute --approval (denied) = %d, %q, %q; want 2 and the denial", code, out, errs)
	}
	code, out, errs = wacp(t, append(text(worker), again...)...)
	if code != 2 || !strings.HasPrefix(out, "denied ") || !strings.Contains(out, "\napproval_id      "+gate+"\n") ||
		!strings.HasPrefix(errs, "wacp: ACTION_DENIED: ") {
		t.Errorf("carp execute --approval (denied), as text = %d, %q, %q; want 2 and the denial's fields", code, out, errs)
	}

	// Still pending when the wait ends.
	code, out, errs = wacp(t, append(worker, "carp", "execute", "--resolution", res, "--action", "ticket.delete", "--param", "ticket_id=T-2", "--wait", "300ms")...)
	var x carp.ExecutionResult
	if err := json.Unmarshal([]byte(out), &x); err != nil || code != 2 || x.Status != carp.StatusPendingApproval || x.Approval == nil ||
		x.Approval.Status != "pending" || !strings.Contains(errs, x.Approval.ApprovalID) {
		t.Errorf("carp execute --wait 300ms, nobody answers = %d, %q (%v), %q; want 2 and the pending result", code, out, err, errs)
	}
	if code, _, errs := wacp(t, append(worker, "carp", "execute", "--resolution", res, "--action", "ticket.delete", "--wait", "-1s")...); code != 1 ||
		!strings.Contains(errs, "--wait must not be negative") {
		t.Errorf("carp execute --wait -1s = %d, %q; want a usage error", code, errs)
	}
}

// TestApprovalCommands: highway mode (never refused by the sample atlas's
// policy), an outcome given alone (per_step), permit list and revoke (an
// execute under the revoked permit's approval is denied), a changed
// argument under an approval (arguments_mutated, the tool's boundary
// untrusted), trust restore of it and of a trusted boundary.
func TestApprovalCommands(t *testing.T) {
	worker, op, ws, res := approvalDaemon(t)
	code, out, errs := wacp(t, append(op, "highway", "mode", ws, "never")...)
	if code != 2 || !strings.Contains(errs, "permission_denied") || !strings.Contains(errs, "allow_never") {
		t.Errorf("highway mode never = %d, %q, %q; want 2, refused by the atlas's policy", code, out, errs)
	}
	if code, _, errs := wacp(t, append(op, "highway", "mode", ws, "sometimes")...); code != 1 || !strings.Contains(errs, "always, policy or never") {
		t.Errorf("highway mode sometimes = %d, %q; want a usage error", code, errs)
	}
	code, out, errs = wacp(t, append(op, "highway", "mode", ws, "always", "--reason", "audit week")...)
	if code != 0 || !strings.Contains(out, `"mode": "always"`) {
		t.Fatalf("highway mode always = %d, %q, %q", code, out, errs)
	}
	if env := approvals(t, op, ws).Envelope; env.Mode != "always" {
		t.Errorf("the envelope after mode always: %+v", env)
	}

	held := func(id string) string {
		t.Helper()
		code, out, errs := wacp(t, append(worker, "carp", "execute", "--resolution", res, "--action", "ticket.delete", "--param", "ticket_id="+id)...)
		var x carp.ExecutionResult
		if err := json.Unmarshal([]byte(out), &x); err != nil || code != 2 || x.Status != carp.StatusPendingApproval || x.Approval == nil {
			t.Fatalf("carp execute ticket.delete %s = %d, %q, %q; want it held", id, code, out, errs)
		}
		return x.Approval.ApprovalID
	}
	gate := held("T-1")
	code, out, errs = wacp(t, append(op, "highway", "resolve", gate, "--outcome", "per_step", "--confirm")...)
	if code != 0 || !strings.Contains(out, `"outcome": "per_step"`) || !strings.Contains(out, `"action": "approve"`) {
		t.Fatalf("highway resolve --outcome per_step --confirm = %d, %q, %q; want approved, per_step", code, out, errs)
	}
	st := approvals(t, op, ws)
	if !st.Envelope.PerStep || len(st.Permits) != 1 || st.Permits[0].Status != "active" {
		t.Fatalf("after per_step: envelope %+v, permits %+v; want per_step and one active permit", st.Envelope, st.Permits)
	}
	permit := st.Permits[0].ID

	code, out, errs = wacp(t, append(op, "permit", "list", "--workspace", ws)...)
	var ps []wire.PermitView
	if code != 0 || json.Unmarshal([]byte(out), &ps) != nil || len(ps) != 1 || ps[0].ID != permit || ps[0].Status != "active" || ps[0].Tool != "ticket.delete" {
		t.Errorf("permit list = %d, %q, %q; want the active permit %s", code, out, errs, permit)
	}
	code, out, errs = wacp(t, append(text(op), "permit", "list")...)
	if code != 0 || !strings.Contains(out, "PERMIT") || !strings.Contains(out, permit+"  "+ws+"  ticket.delete  active  0/1") {
		t.Errorf("permit list (table) = %d, %q, %q", code, out, errs)
	}
	code, out, errs = wacp(t, append(op, "permit", "revoke", permit, "--reason", "not today")...)
	if code != 0 || !strings.Contains(out, `"reason": "not today"`) || !strings.Contains(out, `"by": "operator"`) {
		t.Fatalf("permit revoke = %d, %q, %q", code, out, errs)
	}
	if code, _, errs := wacp(t, append(op, "permit", "revoke", permit)...); code != 2 || !strings.Contains(errs, "invalid_transition") {
		t.Errorf("permit revoke again = %d, %q; want 2 invalid_transition", code, errs)
	}
	if code, out, _ := wacp(t, append(op, "permit", "list", "--workspace", ws)...); code != 0 || json.Unmarshal([]byte(out), &ps) != nil || len(ps) != 1 || ps[0].Status != "revoked" {
		t.Errorf("permit list after the revoke = %d, %q; want it revoked", code, out)
	}
	code, out, errs = wacp(t, append(worker, "carp", "execute", "--resolution", res, "--action", "ticket.delete", "--param", "ticket_id=T-1", "--approval", gate)...)
	if code != 2 || denialOf(t, out)["reason"] != "revoked" {
		t.Errorf("carp execute under the revoked permit's approval = %d, %q, %q; want 2 and a denial", code, out, errs)
	}

	// A changed argument under an approval: arguments_mutated.
	gate2 := held("T-3")
	if code, _, errs := wacp(t, append(op, "highway", "resolve", gate2, "--approve", "--confirm")...); code != 0 {
		t.Fatalf("highway resolve --approve --confirm = %d, %q", code, errs)
	}
	code, out, errs = wacp(t, append(worker, "carp", "execute", "--resolution", res, "--action", "ticket.delete", "--param", "ticket_id=T-4", "--approval", gate2)...)
	if d := denialOf(t, out); code != 2 || d["reason"] != "arguments_mutated" || d["approval_id"] != gate2 || d["status"] != "cancelled" {
		t.Errorf("carp execute with a changed argument = %d, %q, %q; want 2 and arguments_mutated", code, out, errs)
	}
	if tr := approvals(t, op, ws).Trust; len(tr) != 1 || tr[0].Boundary != "tool:ticket.delete" || tr[0].State != "untrusted" {
		t.Fatalf("trust after arguments_mutated: %+v; want tool:ticket.delete untrusted", tr)
	}
	code, out, errs = wacp(t, append(op, "trust", "restore", ws, "tool:ticket.delete", "--reason", "checked")...)
	if code != 0 || !strings.Contains(out, `"state": "trusted"`) {
		t.Errorf("trust restore = %d, %q, %q; want it trusted", code, out, errs)
	}
	if code, _, errs := wacp(t, append(op, "trust", "restore", ws, "tool:ticket.delete")...); code != 2 || !strings.Contains(errs, "is trusted") {
		t.Errorf("trust restore of a trusted boundary = %d, %q; want 2", code, errs)
	}
	if code, _, errs := wacp(t, append(op, "trust", "restore", ws, "ticket.delete")...); code != 1 || !strings.Contains(errs, `"usage"`) {
		t.Errorf("trust restore of no boundary = %d, %q; want a usage error", code, errs)
	}
}

// TestApprovalUsage: wacp -h lists the approval commands.
func TestApprovalUsage(t *testing.T) {
	code, _, errs := wacp(t, "-h")
	for _, want := range []string{"[--approval ID] [--wait D]", "\n  highway resolve GATE --approve|--reject|--modify JSON|--deny [--outcome O] [--confirm]",
		"\n  highway approvals [--workspace WS]", "\n  highway mode WS always|policy|never [--reason R]", "\n  permit list [--workspace WS]",
		"\n  permit revoke PERMIT_ID [--reason R]", "\n  trust restore WS BOUNDARY [--reason R]"} {
		if code != 0 || !strings.Contains(errs, want) {
			t.Errorf("wacp -h = %d; want %q in it", code, want)
		}
	}
	for _, tt := range []struct{ args, want string }{
		{"permit", "needs a subcommand: list, revoke"},
		{"trust", "needs a subcommand: restore"},
	} {
		if code, _, errs := wacp(t, tt.args); code != 1 || !strings.Contains(errs, tt.want) {
			t.Errorf("wacp %s = %d, %q; want 1 and %q", tt.args, code, errs, tt.want)
		}
	}
}

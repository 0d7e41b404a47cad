package e2e

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/user"
)

// TestApprovalEndToEnd: the real wacpd with the sample atlas, the real
// example tool service and the real wacp highway in a terminal. An
// agent's execute of ticket.delete (irreversible, approval required) is
// held; the operator's terminal shows the nine fields of checkpoint_pending;
// one y does not approve it, Y does; the agent, told while it waits, runs
// the approved request and the tool runs it once. The same request with no
// operator (wacp highway --no-tui) is denied, exit 2 with .denial, and
// the tool never gets it.
func TestApprovalEndToEnd(t *testing.T) {
	ctx := ctxT(t)
	rig := startToolRig(t, ctx, t.TempDir(), "clean up tickets", "-atlas", filepath.Join("..", "examples", "atlas", "acme-support.json"))
	d, coord, tool, created := rig.d, rig.coord, rig.tool, rig.worker
	opTok, err := coord.CreateToken(ctx, "user", "operator", user.InjectDirective)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := client.Dial(ctx, client.Options{URL: d.url, Token: created.Token, Workspace: created.Workspace.ID, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	req := func(op string, mod func(*carp.Request)) carp.Request {
		r := agent.NewCarpRequest(op, created.Workspace.Agent)
		if op == carp.OpResolve {
			r.Task = &carp.Task{Goal: "delete the spam tickets"}
		}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	res, err := agent.CarpResolve(ctx, req(carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	del := func(ticket, approvalID string) carp.Request {
		return req(carp.OpExecute, func(r *carp.Request) {
			r.Action = &carp.ActionSpec{ActionID: "ticket.delete", ActionType: "ticket.delete", ResolutionID: res.ResolutionID,
				Parameters: map[string]any{"ticket_id": ticket}}
			r.ApprovalID = approvalID
		})
	}

	held, err := agent.CarpExecute(ctx, del("T-1", ""))
	if err != nil || held.Status != carp.StatusPendingApproval || held.Approval == nil {
		t.Fatalf("ticket.delete: %+v %v", held, err)
	}
	id := held.Approval.ApprovalID
	told := make(chan approval.Ref, 1)
	go func() {
		ref, err := agent.CarpApproval(ctx, id, 2*time.Minute)
		if err != nil {
			t.Errorf("waiting for the approval: %v", err)
		}
		told <- ref
	}()

	s := newTmux(t, 200, 60, []string{"WACP_URL=" + d.url, "WACP_TOKEN=" + opTok, "WACP_WORKSPACE="}, bin.wacp, "highway")
	screen := s.waitFor(t, "control-plane checkpoint "+id, tuiWait)
	p := held.Approval.CheckpointPending
	for _, f := range p.Fields() {
		if !strings.Contains(screen, f[0]+":") {
			t.Errorf("the terminal does not show %s:\n%s", f[0], screen)
		}
	}
	for _, v := range []string{p.CheckpointType, p.ScopeDelta} {
		if !strings.Contains(screen, v) {
			t.Errorf("the terminal does not show %q verbatim:\n%s", v, screen)
		}
	}
	if !strings.Contains(screen, "IRREVERSIBLE") {
		t.Errorf("an irreversible action is not marked:\n%s", screen)
	}
	s.send("y")
	s.waitFor(t, "press Y (shift+y) to approve gate "+id, tuiWait)
	if ref, err := agent.CarpApproval(ctx, id, 0); err != nil || ref.Status != approval.StatusPending {
		t.Fatalf("one y approved an irreversible action: %+v %v", ref, err)
	}
	s.send("Y")
	ref := <-told
	if ref.Status != approval.StatusApproved || ref.PermitID == "" {
		t.Fatalf("the waiting agent was told %+v", ref)
	}
	s.waitFor(t, "approved gate "+id, tuiWait)

	ran, err := agent.CarpExecute(ctx, del("T-1", id))
	if err != nil || ran.Status != carp.StatusSuccess || ran.ExecutionID != held.ExecutionID {
		t.Fatalf("the approved request: %+v %v", ran, err)
	}
	if got := <-tool.reqs; got != held.ExecutionID {
		t.Fatalf("the tool ran %s, want the held execution %s", got, held.ExecutionID)
	}
	_, err = agent.CarpExecute(ctx, del("T-1", id))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != carp.CodeActionDenied {
		t.Fatalf("the approval used a second time: %v", err)
	}
	_, err = agent.CarpExecute(ctx, del("T-9", id))
	if !errors.As(err, &ce) || ce.Code != carp.CodeActionDenied {
		t.Fatalf("another ticket under the approval: %v", err)
	}
	s.send("q")
	s.waitExit(t, tuiWait)

	// Headless: no operator, the checkpoint is denied, the tool never runs.
	held2, err := agent.CarpExecute(ctx, del("T-2", ""))
	if err != nil || held2.Status != carp.StatusPendingApproval {
		t.Fatalf("ticket.delete T-2: %+v %v", held2, err)
	}
	r := &hwRig{t: t, d: d, user: opTok}
	out, errOut, code := r.wacp(opTok, "", "highway", "--no-tui")
	if code != 2 || !strings.Contains(out, `"denial"`) || !strings.Contains(out, held2.Approval.ApprovalID) {
		t.Fatalf("wacp highway --no-tui: exit %d\n%s\n%s", code, out, errOut)
	}
	ref2, err := agent.CarpApproval(ctx, held2.Approval.ApprovalID, 0)
	if err != nil || ref2.Status != approval.StatusDenied {
		t.Fatalf("after the headless denial: %+v %v", ref2, err)
	}
	_, err = agent.CarpExecute(ctx, del("T-2", held2.Approval.ApprovalID))
	if !errors.As(err, &ce) || ce.Code != carp.CodeActionDenied || ce.Details["denial"] == nil {
		t.Fatalf("the denied request: %v", err)
	}

	// The agent's command that waits: wacp carp execute --wait, denied by
	// the headless operator, exits 2 with .denial; the tool never ran.
	type exit struct {
		out  string
		code int
	}
	waited := make(chan exit, 1)
	go func() {
		out, _, code := r.wacp(created.Token, "", "-ws", created.Workspace.ID, "carp", "execute", "--resolution", res.ResolutionID,
			"--action", "ticket.delete", "--param", "ticket_id=T-3", "--wait", "2m")
		waited <- exit{out, code}
	}()
	opCl, err := client.Dial(ctx, client.Options{URL: d.url, Token: opTok})
	if err != nil {
		t.Fatal(err)
	}
	defer opCl.Close()
	for {
		q, err := opCl.HighwayQueue(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(q) > 0 {
			break
		}
		select {
		case e := <-waited:
			t.Fatalf("wacp carp execute --wait ended before its checkpoint opened: exit %d\n%s", e.code, e.out)
		case <-time.After(20 * time.Millisecond): // polling the daemon's queue, not standing in for a signal
		}
	}
	if out, errOut, code := r.wacp(opTok, "", "highway", "--no-tui"); code != 2 {
		t.Fatalf("wacp highway --no-tui: exit %d\n%s\n%s", code, out, errOut)
	}
	e := <-waited
	var got struct {
		Denial map[string]any `json:"denial"`
	}
	if e.code != 2 || json.Unmarshal([]byte(e.out), &got) != nil || got.Denial["status"] != approval.StatusDenied || got.Denial["reason"] != "no_operator_present" {
		t.Fatalf("the waiting execute: exit %d\n%s", e.code, e.out)
	}
	select {
	case x := <-tool.reqs:
		t.Fatalf("the tool got %s after the denial", x)
	default:
	}
}

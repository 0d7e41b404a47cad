package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// chromium returns Debian's Chromium, or skips the test: the browser tests
// run where it is installed (.ci/run installs it), never with a
// downloaded browser.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("no Chromium installed (apt-get install chromium); the browser test is skipped")
	return ""
}

// browser starts headless Chromium and returns a tab's context.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // CI containers run as root
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1100, 820),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}

// screenshots writes each view's screenshot under the test's temp dir and,
// when WACP_CONSOLE_SCREENSHOTS names a directory, there too.
type screenshots struct {
	t    *testing.T
	dirs []string
}

func newScreenshots(t *testing.T) *screenshots {
	s := &screenshots{t: t, dirs: []string{t.TempDir()}}
	if d := os.Getenv("WACP_CONSOLE_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		s.dirs = append(s.dirs, d)
	}
	return s
}

func (s *screenshots) take(tab context.Context, name string) {
	s.t.Helper()
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, d := range s.dirs {
		if err := os.WriteFile(filepath.Join(d, "console-"+name+".png"), png, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
}

// TestConsoleBrowser: the real wacpd with -http, the sample atlas and the
// example tool service, and headless Chromium. An operator logs in with a
// user token; a worker's checkpoints, written while the trail page is
// open, appear in the live timeline; the chain and a checkpoint show
// them; an agent's execute of ticket.delete (irreversible) is held, the
// queue shows checkpoint_pending's nine fields as the daemon sent them,
// one approval (by keyboard) only asks again, the confirmation approves
// it, and the agent's execute then goes through the tool.
func TestConsoleBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	dir := t.TempDir()
	rig := startToolRig(t, ctx, dir, "clean up tickets",
		"-atlas", filepath.Join("..", "examples", "atlas", "acme-support.json"), "-http", "127.0.0.1:0")
	var info wire.DaemonFile
	b, _ := os.ReadFile(filepath.Join(dir, "wacpd.json"))
	if err := json.Unmarshal(b, &info); err != nil || info.HTTPURL == "" {
		t.Fatalf("wacpd.json: %s", b)
	}
	base := info.HTTPURL
	opTok, err := rig.coord.CreateToken(ctx, "user", "operator", user.InjectDirective, user.ViewTrailAny)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := client.Dial(ctx, client.Options{URL: rig.d.url, Token: rig.worker.Token, Workspace: rig.worker.Workspace.ID, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	ws := rig.worker.Workspace.ID
	shots := newScreenshots(t)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		wctx, cancel := context.WithTimeout(tab, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(wctx, steps...); err != nil {
			page, _ := chromedp.Run(tab, chromedp.OuterHTML(chromedp.CSS("html")))
			t.Fatalf("%s: %v\npage:\n%s", what, err, page)
		}
	}
	textOf := func(sel string) string {
		t.Helper()
		wctx, cancel := context.WithTimeout(tab, 60*time.Second)
		defer cancel()
		s, err := chromedp.Run(wctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return s
	}
	poll := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }

	// Log in: the token goes into the form, never the URL.
	run("open the login page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	shots.take(tab, "login")
	run("log in", chromedp.SendKeys(chromedp.CSS("#token"), opTok), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("ul.tree")))
	url, err := chromedp.Run(tab, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(url, opTok) {
		t.Fatalf("the token is in the URL %s", url)
	}
	if tree := textOf("ul.tree"); !strings.Contains(tree, ws) || !strings.Contains(tree, "active") {
		t.Fatalf("the tree does not show the active worker %s:\n%s", ws, tree)
	}
	shots.take(tab, "tree")

	// The live trail: checkpoints written while the page is open appear.
	run("open the worker's trail", chromedp.Navigate(base+"/trail?ws="+ws),
		poll(`document.getElementById("live-status").textContent.startsWith("Live")`))
	var cps []checkpointchain.Checkpoint
	var parent *string
	for i, intent := range []string{"read the spam tickets", "list the tickets to delete"} {
		cp, err := agent.CreateCheckpoint(ctx, client.CheckpointRequest{
			Type: taxonomy.CheckpointArtifact, Intent: intent, Parent: parent,
			Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceHigh,
			Payload: checkpointchain.Payload{Content: fmt.Sprintf("step %d: <b>not bold</b>", i+1), FilesChanged: []string{"tickets.txt"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, cp)
		parent = &cps[len(cps)-1].ID
		run("see checkpoint "+cp.ID+" live", poll(fmt.Sprintf(`document.querySelector("#live tbody").textContent.includes(%q)`, cp.ID)))
	}
	if live := textOf("#live tbody"); !strings.Contains(live, "checkpoint_created") {
		t.Fatalf("the live rows lack checkpoint_created:\n%s", live)
	}
	shots.take(tab, "trail")

	// The chain and a checkpoint's payload.
	run("open the chain", chromedp.Navigate(base+"/ws/"+ws), chromedp.WaitVisible(chromedp.CSS("table.chain")))
	chain := textOf("table.chain")
	for _, cp := range cps {
		for _, want := range []string{cp.ID, cp.Intent, cp.Type, cp.Status, cp.Confidence, cp.Timestamp} {
			if !strings.Contains(chain, want) {
				t.Errorf("the chain lacks %q:\n%s", want, chain)
			}
		}
	}
	shots.take(tab, "chain")
	run("open a checkpoint", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="/checkpoint/%s"]`, cps[1].ID))),
		chromedp.WaitVisible(chromedp.CSS("pre.payload")))
	if p := textOf("pre.payload"); p != "step 2: <b>not bold</b>" {
		t.Errorf("the payload reads %q, want the content verbatim", p)
	}
	shots.take(tab, "checkpoint")

	// An irreversible action held for the operator.
	req := func(op string, mod func(*carp.Request)) carp.Request {
		r := agent.NewCarpRequest(op, rig.worker.Workspace.Agent)
		if mod != nil {
			mod(&r)
		}
		return r
	}
	res, err := agent.CarpResolve(ctx, req(carp.OpResolve, func(r *carp.Request) { r.Task = &carp.Task{Goal: "delete the spam tickets"} }))
	if err != nil {
		t.Fatal(err)
	}
	del := func(approvalID string) carp.Request {
		return req(carp.OpExecute, func(r *carp.Request) {
			r.Action = &carp.ActionSpec{ActionID: "ticket.delete", ActionType: "ticket.delete", ResolutionID: res.ResolutionID,
				Parameters: map[string]any{"ticket_id": "T-2"}}
			r.ApprovalID = approvalID
		})
	}
	held, err := agent.CarpExecute(ctx, del(""))
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

	run("open the queue", chromedp.Navigate(base+"/queue"), chromedp.WaitVisible(chromedp.CSS("#g-"+id)))
	gate := textOf("article.gate")
	for _, f := range held.Approval.CheckpointPending.Fields() {
		if !strings.Contains(gate, f[0]) || !strings.Contains(gate, f[1]) {
			t.Errorf("the queue does not show %s = %q verbatim:\n%s", f[0], f[1], gate)
		}
	}
	if !strings.Contains(gate, "IRREVERSIBLE") {
		t.Errorf("the irreversible action is not marked:\n%s", gate)
	}
	shots.take(tab, "queue")
	// At 200% zoom (half the CSS width) the page reflows: nothing is wider
	// than the window.
	run("reflow at 200%", chromedp.EmulateViewport(550, 820),
		poll(`document.documentElement.scrollWidth <= window.innerWidth`), chromedp.EmulateReset())

	// By keyboard: focus Approve, press Enter; a confirmation, nothing sent.
	run("approve by keyboard", chromedp.Focus(chromedp.CSS(`button[name="decision"][value="approve"]`)),
		chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS("#confirm-approve")))
	if ref, err := agent.CarpApproval(ctx, id, 0); err != nil || ref.Status != approval.StatusPending {
		t.Fatalf("one approval approved an irreversible action: %+v %v", ref, err)
	}
	shots.take(tab, "confirm")
	run("confirm by keyboard", chromedp.Focus(chromedp.CSS("#confirm-approve")), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("p.notice")))
	if n := textOf("p.notice"); !strings.Contains(n, id) || !strings.Contains(n, "approve") {
		t.Errorf("the queue's notice reads %q", n)
	}
	select {
	case ref := <-told:
		if ref.Status != approval.StatusApproved || ref.PermitID == "" {
			t.Fatalf("the waiting agent was told %+v", ref)
		}
	case <-ctx.Done():
		t.Fatal("the agent was not told of the approval")
	}
	ran, err := agent.CarpExecute(ctx, del(id))
	if err != nil || ran.Status != carp.StatusSuccess || ran.ExecutionID != held.ExecutionID {
		t.Fatalf("the approved request: %+v %+v %v", ran, ran.Error, err)
	}
	select {
	case got := <-rig.tool.reqs:
		if got != held.ExecutionID {
			t.Fatalf("the tool ran %s, want the held execution %s", got, held.ExecutionID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the tool did not run the approved execution")
	}

	// Verification and the signed tree head.
	run("verify", chromedp.Navigate(base+"/audit"), chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#verify-result")))
	if v := textOf("#verify-result"); !strings.HasPrefix(v, "Verified:") {
		t.Errorf("verification reads %q", v)
	}
	shots.take(tab, "audit")

	// Logout ends the session.
	run("log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.CSS("#token")))
	run("come back", chromedp.Navigate(base+"/queue"), chromedp.WaitVisible(chromedp.CSS("#token")))
}

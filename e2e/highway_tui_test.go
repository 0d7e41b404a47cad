package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/highway"
	// The terminal UI runs in the wacp binary built from this tree;
	// importing it makes go test's cache see changes to it.
	_ "github.com/wacpd/wacpd/internal/hwtui"
)

// tuiWait bounds each wait for the terminal: generous, for a loaded host
// running everything under -race.
const tuiWait = 20 * time.Second

// keyLine is the terminal UI's key line, whole (it fits from 73 columns).
const keyLine = "y approve · n reject · m modify · d detail · i inspect · ? help · q quit"

// hwRig is a daemon under the supervised highway (task_approval and
// integration gated) and an operator's user token.
type hwRig struct {
	t    *testing.T
	d    *daemon
	user string // the token of user "operator", the root workspace's owner
}

// newHWRig starts the daemon and makes the user operator, who owns the
// root workspace (runtime.Config.RootOwner) and so every workspace under
// it: the _own capabilities cover its gates.
func newHWRig(t *testing.T, name string, caps string) *hwRig {
	t.Helper()
	r := &hwRig{t: t, d: startDaemon(t, t.TempDir(), "-highway", "supervised")}
	args := []string{"token", "create", "--kind", "user", "--name", name}
	if caps != "" {
		args = append(args, "--capabilities", caps)
	}
	var tok struct{ Token string }
	r.adminJSON(&tok, "", args...)
	r.user = tok.Token
	return r
}

// wacp runs the wacp binary with token and args, stdin as its input, and
// returns its stdout, stderr and exit code.
func (r *hwRig) wacp(token, stdin string, args ...string) (string, string, int) {
	r.t.Helper()
	cmd := exec.Command(bin.wacp, append([]string{"-url", r.d.url, "-token", token, "-o", "json"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &exit):
		return out.String(), errb.String(), exit.ExitCode()
	}
	r.t.Fatalf("wacp %q: %v", args, err)
	return "", "", 0
}

// adminJSON runs wacp as the coordinator, checks it exits 0 and decodes
// its output into v.
func (r *hwRig) adminJSON(v any, stdin string, args ...string) {
	r.t.Helper()
	r.asJSON(r.d.admin, v, stdin, args...)
}

func (r *hwRig) asJSON(token string, v any, stdin string, args ...string) {
	r.t.Helper()
	out, errOut, code := r.wacp(token, stdin, args...)
	if code != 0 {
		r.t.Fatalf("wacp %q: exit %d\n%s%s", args, code, out, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		r.t.Fatalf("wacp %q printed %q: %v", args, out, err)
	}
}

// createTask creates a task as the coordinator and returns its id; it
// waits at its task_approval gate.
func (r *hwRig) createTask(name, description string) string {
	r.t.Helper()
	body, _ := json.Marshal(map[string]any{"tasks": []map[string]string{{"name": name, "description": description}}})
	var created struct {
		Tasks []struct{ ID string }
	}
	r.adminJSON(&created, string(body), "task", "create", "-")
	if len(created.Tasks) != 1 {
		r.t.Fatalf("task create made %d tasks, want 1", len(created.Tasks))
	}
	return created.Tasks[0].ID
}

// task returns a task's status and priority.
func (r *hwRig) task(id string) (status, priority string) {
	r.t.Helper()
	var info struct {
		Task struct{ Status, Priority string }
	}
	r.adminJSON(&info, "", "task", "get", id)
	return info.Task.Status, info.Task.Priority
}

// gateOf returns the pending gate whose subject is subject.
func (r *hwRig) gateOf(subject string) highway.Gate {
	r.t.Helper()
	var gates []highway.Gate
	r.asJSON(r.user, &gates, "", "highway", "queue")
	for _, g := range gates {
		if g.SubjectID == subject {
			return g
		}
	}
	r.t.Fatalf("no pending gate for %s in %+v", subject, gates)
	return highway.Gate{}
}

// gate returns gate id as the daemon has it.
func (r *hwRig) gate(id string) highway.Gate {
	r.t.Helper()
	var g highway.Gate
	r.asJSON(r.user, &g, "", "highway", "get", id)
	return g
}

// tui runs wacp highway as the operator in a w x h terminal.
func (r *hwRig) tui(w, h int) *tmuxSession {
	r.t.Helper()
	return newTmux(r.t, w, h, []string{"WACP_URL=" + r.d.url, "WACP_TOKEN=" + r.user, "WACP_WORKSPACE="}, bin.wacp, "highway")
}

// TestHighwayTUI drives wacp highway in a real terminal against a real
// daemon: the queue shown live and FIFO, a long subject in a window made
// small and large again, help, detail and context, approve, reject and
// modify of task gates (checked on the tasks), the empty queue, and an
// irreversible integration gate that one y does not approve.
func TestHighwayTUI(t *testing.T) {
	r := newHWRig(t, "operator", "create_workspace,approve_integration")
	long := strings.Repeat("every word of this description is shown as the coordinator wrote it ", 14)
	first := r.createTask("approve me", long)
	second := r.createTask("reject me", "")
	third := r.createTask("modify me", "")
	g1, g2, g3 := r.gateOf(first), r.gateOf(second), r.gateOf(third)

	tm := r.tui(100, 30)
	c := tm.waitFor(t, "task_approval gate "+g1.ID, tuiWait)
	for _, want := range []string{"3 gates pending", "● connected", "subject    " + first, "task       " + first,
		"deadline   " + *g1.Deadline, "then reject", `"depends_on": [],`, `"description": "every word`, "more lines (d shows", keyLine} {
		if !strings.Contains(c, want) {
			t.Fatalf("the first gate's screen does not show %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, g2.ID) || strings.Contains(c, "IRREVERSIBLE") {
		t.Fatalf("the screen shows more than the head gate, or calls it irreversible:\n%s", c)
	}

	// Small: everything re-laid out to 40 columns, the keys still shown
	// (wrapped), the header still first; large again: the key line whole.
	tm.resize(40, 14)
	c = tm.waitUntil(t, "re-lay out to 40 columns", func(c string) bool {
		return !strings.Contains(c, keyLine) && strings.Contains(c, "q quit") && strings.Contains(c, "more lines (d shows")
	}, tuiWait)
	if lines := strings.Split(c, "\n"); !strings.HasPrefix(lines[0], "WACP human highway") {
		t.Fatalf("at 40x14 the first line is %q, want the header:\n%s", lines[0], c)
	}
	tm.resize(100, 30)
	tm.waitFor(t, keyLine, tuiWait)

	tm.send("?")
	tm.waitFor(t, "press Y (shift+y) to confirm", tuiWait)
	tm.send("Escape")
	tm.waitFor(t, "task_approval gate "+g1.ID, tuiWait)

	tm.send("d")
	c = tm.waitFor(t, "in full", tuiWait)
	for _, want := range []string{g1.SubjectDigest, "name, description, priority, resource_estimate"} {
		if !strings.Contains(c, want) {
			t.Fatalf("the detail does not show %q:\n%s", want, c)
		}
	}
	tm.send("NPage") // the rest of the subject, cut on the gate's screen
	tm.waitFor(t, `"name": "approve me",`, tuiWait)
	tm.send("Escape")

	var info struct {
		RootWorkspace string `json:"root_workspace"`
	}
	r.adminJSON(&info, "", "info")
	tm.send("i")
	c = tm.waitFor(t, "recent trail", tuiWait)
	for _, want := range []string{"context of gate " + g1.ID, "workspace   " + info.RootWorkspace, "chain head  none",
		"task_created", "gate_triggered"} {
		if !strings.Contains(c, want) {
			t.Fatalf("the context does not show %q:\n%s", want, c)
		}
	}
	tm.send("Escape")

	// y approves the first: its task is pending.
	tm.waitFor(t, "task_approval gate "+g1.ID, tuiWait)
	tm.send("y")
	tm.waitFor(t, "approved gate "+g1.ID, tuiWait)
	if status, _ := r.task(first); status != "pending" {
		t.Fatalf("task %s after y is %s, want pending", first, status)
	}

	// n rejects the second: its task is cancelled.
	tm.waitFor(t, "task_approval gate "+g2.ID, tuiWait)
	tm.send("n")
	tm.waitFor(t, "rejected gate "+g2.ID, tuiWait)
	if status, _ := r.task(second); status != "cancelled" {
		t.Fatalf("task %s after n is %s, want cancelled", second, status)
	}

	// m modifies the third's priority, typed in the editor.
	tm.waitFor(t, "task_approval gate "+g3.ID, tuiWait)
	tm.send("m")
	tm.waitFor(t, "modify gate "+g3.ID, tuiWait)
	tm.waitFor(t, `"priority": "normal",`, tuiWait)
	tm.send("Down", "Down", "Down", "End")
	for range len(`"normal",`) {
		tm.send("BSpace")
	}
	tm.sendText(`"urgent",`)
	tm.waitFor(t, `"priority": "urgent",`, tuiWait)
	tm.send("C-s")
	tm.waitFor(t, "modified and approved gate "+g3.ID+" (priority)", tuiWait)
	if status, priority := r.task(third); status != "pending" || priority != "urgent" {
		t.Fatalf("task %s after the modify is %s, priority %s; want pending, urgent", third, status, priority)
	}
	res := r.gate(g3.ID).Resolution
	var mods bytes.Buffer
	if res != nil {
		json.Compact(&mods, res.Modifications)
	}
	if res == nil || res.Action != highway.Modify || mods.String() != `{"priority":"urgent"}` {
		t.Fatalf("gate %s resolution = %+v (modifications %s), want modify with only the priority", g3.ID, res, mods.String())
	}

	c = tm.waitFor(t, "no gate pending — waiting", tuiWait)
	if !strings.Contains(c, "0 gates pending") {
		t.Fatalf("the empty queue's header does not say 0 gates pending:\n%s", c)
	}

	// An integration is irreversible: one y asks, any other key cancels,
	// and only y then Y approves.
	ws := integrating(t, r)
	out, errOut, code := r.wacp(r.d.admin, "", "integrate", ws, "--decision", "accept")
	if code != 2 || !strings.Contains(errOut, "gate_pending") {
		t.Fatalf("wacp integrate under the supervised highway: exit %d, want 2 with gate_pending\n%s%s", code, out, errOut)
	}
	gi := r.gateOf(ws)
	c = tm.waitFor(t, "integration gate "+gi.ID, tuiWait)
	if !strings.Contains(c, "IRREVERSIBLE") {
		t.Fatalf("the integration gate is not marked irreversible:\n%s", c)
	}
	tm.send("y")
	tm.waitFor(t, "press Y (shift+y) to approve gate "+gi.ID, tuiWait)
	if g := r.gate(gi.ID); !g.Pending() {
		t.Fatalf("one y resolved the irreversible gate: %+v", g.Resolution)
	}
	tm.send("x")
	tm.waitFor(t, "approval of gate "+gi.ID+" cancelled; nothing sent", tuiWait)
	if g := r.gate(gi.ID); !g.Pending() {
		t.Fatalf("y then x resolved the irreversible gate: %+v", g.Resolution)
	}
	tm.send("y")
	tm.waitFor(t, "press Y (shift+y) to approve gate "+gi.ID, tuiWait)
	tm.send("Y")
	tm.waitFor(t, "approved gate "+gi.ID, tuiWait)
	if res := r.gate(gi.ID).Resolution; res == nil || res.Action != highway.Approve || res.Actor != "operator" {
		t.Fatalf("gate %s after y, Y: resolution %+v, want approve by operator", gi.ID, res)
	}
	var w struct{ State string }
	r.adminJSON(&w, "", "workspace", "get", ws)
	if w.State != "closed" {
		t.Fatalf("workspace %s after its integration was approved is %s, want closed", ws, w.State)
	}

	tm.waitFor(t, "no gate pending — waiting", tuiWait)
	tm.send("q")
	if status := tm.waitExit(t, tuiWait); status != 0 {
		t.Fatalf("wacp highway exited %d after q, want 0", status)
	}
}

// integrating makes a worker workspace that has delivered a final
// checkpoint and signalled complete, ready to integrate, and returns its
// id.
func integrating(t *testing.T, r *hwRig) string {
	t.Helper()
	ctx := ctxT(t)
	coord := dial(t, ctx, client.Options{URL: r.d.url, Token: r.d.admin})
	worker := newWorker(t, ctx, coord, r.d.url, true, "")
	if env, err := worker.NextEnvelope(ctx, 10*time.Second); err != nil || env == nil {
		t.Fatalf("worker NextEnvelope = %v, %v; want the directive", env, err)
	}
	if _, err := worker.CreateCheckpoint(ctx, artifact(nil, "final", "done")); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.EmitSignal(ctx, client.SignalRequest{Type: "complete"}); err != nil {
		t.Fatal(err)
	}
	return worker.Workspace()
}

// TestHighwayTUIRefused: a resolution the daemon refuses shows its code
// and message, and the gate stays pending.
func TestHighwayTUIRefused(t *testing.T) {
	r := newHWRig(t, "viewer", "") // no capability: may see, may not decide
	id := r.createTask("not yours to approve", "")
	g := r.gateOf(id)
	tm := r.tui(100, 30)
	tm.waitFor(t, "task_approval gate "+g.ID, tuiWait)
	tm.send("y")
	tm.waitFor(t, "capability_denied", tuiWait)
	if !r.gate(g.ID).Pending() {
		t.Fatalf("gate %s was resolved by a user without the capability", g.ID)
	}
	if status, _ := r.task(id); status != "draft" {
		t.Fatalf("task %s is %s, want draft", id, status)
	}
}

// TestHighwayTUIDaemonRestart: the daemon stops under a running wacp
// highway, which says it is unreachable and reconnecting; the daemon
// starts again on the same port and data dir, and the UI shows the queue
// again, follows it live and answers gates.
func TestHighwayTUIDaemonRestart(t *testing.T) {
	r := newHWRig(t, "operator", "create_workspace")
	before := r.createTask("opened before the restart", "")
	gb := r.gateOf(before)
	tm := r.tui(100, 30)
	tm.waitFor(t, "task_approval gate "+gb.ID, tuiWait)
	tm.waitFor(t, "● connected", tuiWait)

	u, err := url.Parse(r.d.url)
	if err != nil {
		t.Fatal(err)
	}
	dir, oldURL := r.d.dir, r.d.url
	r.d.stop()
	tm.waitFor(t, "daemon unreachable, reconnecting…", 30*time.Second)

	r.d = startDaemon(t, dir, "-highway", "supervised", "-listen", u.Host) // the later -listen wins
	if r.d.url != oldURL {
		t.Fatalf("the daemon came back on %s, want %s", r.d.url, oldURL)
	}
	c := tm.waitFor(t, "● connected", 30*time.Second)
	if !strings.Contains(c, "task_approval gate "+gb.ID) {
		t.Fatalf("after the restart the screen does not show gate %s:\n%s", gb.ID, c)
	}
	after := r.createTask("opened after the restart", "")
	ga := r.gateOf(after)
	tm.waitFor(t, "2 gates pending", tuiWait)
	tm.send("y")
	tm.waitFor(t, "approved gate "+gb.ID, tuiWait)
	tm.waitFor(t, "task_approval gate "+ga.ID, tuiWait)
	if status, _ := r.task(before); status != "pending" {
		t.Fatalf("task %s approved after the restart is %s, want pending", before, status)
	}
	tm.send("q")
	if status := tm.waitExit(t, tuiWait); status != 0 {
		t.Fatalf("wacp highway exited %d after q, want 0", status)
	}
}

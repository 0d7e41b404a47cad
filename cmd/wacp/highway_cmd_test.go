package main

import (
	"encoding/json"
	"strings"
	"testing"

	wacpd "github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
)

// highwayDaemon starts a daemon under the supervised preset and returns
// its data dir, URL and a user token that may resolve the coordinator's
// task gates and integrations.
func highwayDaemon(t *testing.T) (dir, url, op string) {
	t.Helper()
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	d := daemontest.Start(t, wacpd.Config{HighwayFile: "supervised"})
	code, out, errs := wacp(t, "-data", d.Dir, "-o", "json", "token", "create", "--kind", "user", "--name", "op",
		"--capabilities", "create_workspace_any,approve_integration_any")
	var tok struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" {
		t.Fatalf("wacp token create = %d, %q, %q", code, out, errs)
	}
	return d.Dir, d.URL, tok.Token
}

// TestHighwayHeadless: tasks created through the CLI wait at their
// task_approval gates; wacp highway with no operator present (stdin is not
// a terminal here, and --no-tui) denies them — reject by the protocol,
// never approved — printing one {"denial":...} per gate and exiting 2;
// with nothing pending it exits 0. resolve and wait work for scripts.
func TestHighwayHeadless(t *testing.T) {
	dir, url, op := highwayDaemon(t)
	admin := []string{"-data", dir, "-o", "json"}
	user := []string{"-url", url, "-token", op, "-o", "json"}

	code, out, errs := wacpStdin(t, `{"tasks":[{"key":"a","name":"build"},{"name":"ship","depends_on":["a"]},{"name":"docs"}]}`,
		append(admin, "task", "create", "-")...)
	var created struct {
		Graph struct{ ID string }
		Tasks []struct{ ID, Status string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || len(created.Tasks) != 3 {
		t.Fatalf("wacp task create = %d, %q, %q", code, out, errs)
	}
	a, b, c := created.Tasks[0].ID, created.Tasks[1].ID, created.Tasks[2].ID

	// A script approves one and waits for it.
	code, out, errs = wacp(t, append(user, "highway", "queue")...)
	var queue []struct{ ID, Subject_ID string }
	if code != 0 || json.Unmarshal([]byte(out), &queue) != nil || len(queue) != 3 {
		t.Fatalf("wacp highway queue = %d, %q, %q", code, out, errs)
	}
	if code, out, errs := wacp(t, append(user, "highway", "resolve", queue[0].ID, "--approve")...); code != 0 || !strings.Contains(out, `"actor": "op"`) {
		t.Fatalf("wacp highway resolve --approve = %d, %q, %q", code, out, errs)
	}
	if code, _, errs := wacp(t, append(user, "highway", "wait", queue[0].ID)...); code != 0 {
		t.Fatalf("wacp highway wait on an approved gate = %d, %q", code, errs)
	}
	if got := taskStatus(t, admin, a); got != "pending" {
		t.Fatalf("task a after approval: %s", got)
	}
	if code, _, errs := wacp(t, append(user, "highway", "resolve", queue[0].ID, "--approve", "--reject")...); code != 1 {
		t.Errorf("resolve with two actions = %d, %q; want a usage error", code, errs)
	}

	// Headless, no operator: the other two are denied, exit 2.
	code, out, errs = wacp(t, append(user, "highway", "--no-tui")...)
	if code != 2 {
		t.Fatalf("wacp highway --no-tui = %d, %q, %q; want 2", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("wacp highway --no-tui printed %q, want two denials", out)
	}
	for _, l := range lines {
		var d struct {
			Denial struct {
				Gate, Type, Reason, Actor string
				Subject                   map[string]any
			}
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil || d.Denial.Gate == "" || d.Denial.Type != "task_approval" ||
			d.Denial.Reason != "no_operator_present" || d.Denial.Actor != "protocol" || d.Denial.Subject["id"] == nil {
			t.Errorf("denial line %q (%v)", l, err)
		}
	}
	for _, id := range []string{b, c} {
		if got := taskStatus(t, admin, id); got != "cancelled" {
			t.Errorf("task %s after the denial: %s, want cancelled", id, got)
		}
	}
	code, out, errs = wacp(t, append(user, "highway", "wait", queue[1].ID)...)
	if code != 2 || !strings.Contains(out, "no_operator_present") {
		t.Errorf("wacp highway wait on a denied gate = %d, %q, %q; want 2", code, out, errs)
	}
	if code, out, errs := wacp(t, append(user, "highway", "--no-tui")...); code != 0 {
		t.Errorf("wacp highway --no-tui with nothing pending = %d, %q, %q; want 0", code, out, errs)
	}
	// A person injects; a user without inject_directive is refused.
	code, out, errs = wacp(t, append(admin, "workspace", "create", "--role", "worker")...)
	var ws struct{ Workspace struct{ ID string } }
	if code != 0 || json.Unmarshal([]byte(out), &ws) != nil {
		t.Fatalf("workspace create = %d, %q", code, errs)
	}
	code, _, errs = wacp(t, append(user, "highway", "inject", "--to", ws.Workspace.ID, "--type", "directive", "--content", "start")...)
	if code != 2 || !strings.Contains(errs, "capability_denied") {
		t.Errorf("highway inject without inject_directive = %d, %q; want 2 capability_denied", code, errs)
	}
	// Coordinators are not users: the highway refuses their token.
	if code, _, errs := wacp(t, append(admin, "highway", "queue")...); code != 2 || !strings.Contains(errs, "permission_denied") {
		t.Errorf("wacp highway queue as the coordinator = %d, %q", code, errs)
	}
}

// TestTaskCommands: the task commands over a real daemon.
func TestTaskCommands(t *testing.T) {
	dir, url, op := highwayDaemon(t)
	admin := []string{"-data", dir, "-o", "json"}
	code, out, errs := wacpStdin(t, `{"tasks":[{"key":"a","name":"build"},{"name":"ship","depends_on":["a"]}]}`,
		append(admin, "task", "create", "-")...)
	var created struct {
		Graph struct{ ID string }
		Tasks []struct{ ID string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil {
		t.Fatalf("wacp task create = %d, %q, %q", code, out, errs)
	}
	a, b := created.Tasks[0].ID, created.Tasks[1].ID
	if code, out, _ := wacp(t, append(admin, "task", "list", "--graph", created.Graph.ID, "--ready")...); code != 0 || !strings.Contains(out, a) || strings.Contains(out, b) {
		t.Errorf("task list --ready = %d, %q; want a only", code, out)
	}
	if code, out, _ := wacp(t, append(admin, "task", "get", b, "--transitive")...); code != 0 || !strings.Contains(out, `"requires"`) || !strings.Contains(out, a) {
		t.Errorf("task get --transitive = %d, %q", code, out)
	}
	if code, out, _ := wacp(t, append(admin, "task", "graph", created.Graph.ID)...); code != 0 || !strings.Contains(out, b) {
		t.Errorf("task graph = %d, %q", code, out)
	}
	// Binding a draft task is refused (exit 2).
	code, out, errs = wacp(t, append(admin, "workspace", "create", "--role", "worker")...)
	var ws struct{ Workspace struct{ ID string } }
	if code != 0 || json.Unmarshal([]byte(out), &ws) != nil {
		t.Fatalf("workspace create = %d, %q", code, errs)
	}
	if code, _, errs := wacp(t, append(admin, "task", "bind", a, "--workspace", ws.Workspace.ID)...); code != 2 || !strings.Contains(errs, "invalid_transition") {
		t.Errorf("bind a draft task = %d, %q; want 2 invalid_transition", code, errs)
	}
	gate := gateFor(t, url, op, a)
	if code, _, errs := wacp(t, "-url", url, "-token", op, "highway", "resolve", gate, "--modify", `{"priority":"urgent"}`); code != 0 {
		t.Fatalf("resolve --modify = %d, %q", code, errs)
	}
	code, out, errs = wacp(t, append(admin, "task", "bind", a, "--workspace", ws.Workspace.ID)...)
	if code != 0 || !strings.Contains(out, `"assigned"`) || !strings.Contains(out, `"urgent"`) {
		t.Fatalf("task bind = %d, %q, %q", code, out, errs)
	}
	if code, out, errs := wacp(t, append(admin, "task", "cancel", a, "--reason", "not needed")...); code != 0 || !strings.Contains(out, `"cancelled"`) {
		t.Fatalf("task cancel = %d, %q, %q", code, out, errs)
	}
	if code, _, errs := wacp(t, append(admin, "task", "retry", a)...); code != 2 {
		t.Errorf("retry a cancelled task = %d, %q; want 2", code, errs)
	}
}

func taskStatus(t *testing.T, admin []string, id string) string {
	t.Helper()
	code, out, errs := wacp(t, append(admin, "task", "get", id)...)
	var info struct{ Task struct{ Status string } }
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("wacp task get %s = %d, %q, %q", id, code, out, errs)
	}
	return info.Task.Status
}

// gateFor returns the id of the gate whose subject is id.
func gateFor(t *testing.T, url, op, id string) string {
	t.Helper()
	code, out, errs := wacp(t, "-url", url, "-token", op, "-o", "json", "highway", "queue")
	var queue []struct {
		ID        string
		SubjectID string `json:"subject_id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &queue) != nil {
		t.Fatalf("wacp highway queue = %d, %q, %q", code, out, errs)
	}
	for _, g := range queue {
		if g.SubjectID == id {
			return g.ID
		}
	}
	t.Fatalf("no pending gate for %s in %q", id, out)
	return ""
}

// TestHighwayEscalationCLI: a worker blocks and escalates through the
// CLI; its owner (the user "operator", who owns what the coordinator
// creates) lists the escalation and answers it with an envelope, which
// the worker then reads.
func TestHighwayEscalationCLI(t *testing.T) {
	dir, url, _ := highwayDaemon(t)
	admin := []string{"-data", dir, "-o", "json"}
	code, out, errs := wacp(t, append(admin, "token", "create", "--kind", "user", "--name", "operator", "--capabilities", "inject_directive")...)
	var tok struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil {
		t.Fatalf("token create = %d, %q, %q", code, out, errs)
	}
	owner := []string{"-url", url, "-token", tok.Token, "-o", "json"}
	code, out, errs = wacp(t, append(admin, "workspace", "create", "--role", "worker")...)
	var created struct {
		Workspace struct{ ID, Owner string }
		Token     string
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil {
		t.Fatalf("workspace create = %d, %q", code, errs)
	}
	if created.Workspace.Owner != "operator" {
		t.Fatalf("the worker's owner is %q; this test assumes operator", created.Workspace.Owner)
	}
	ws := created.Workspace.ID
	worker := []string{"-url", url, "-token", created.Token, "-ws", ws, "-o", "json"}
	if code, _, errs := wacp(t, append(admin, "envelope", "send", "--to", ws, "--type", "directive", "--content", "parse it")...); code != 0 {
		t.Fatalf("directive = %d, %q", code, errs)
	}
	if code, _, errs := wacp(t, append(worker, "inbox", "next")...); code != 0 {
		t.Fatalf("inbox next = %d, %q", code, errs)
	}
	for _, args := range [][]string{{"signal", "emit", "blocked", "--reason", "ambiguous"}, {"signal", "emit", "escalation", "--reason", "which grammar?"}} {
		if code, _, errs := wacp(t, append(worker, args...)...); code != 0 {
			t.Fatalf("wacp %v = %d, %q", args, code, errs)
		}
	}
	code, out, errs = wacp(t, append(owner, "highway", "escalations")...)
	var xs []struct {
		ID, Workspace, Delivery, Reason string
	}
	if code != 0 || json.Unmarshal([]byte(out), &xs) != nil || len(xs) != 1 || xs[0].Workspace != ws || xs[0].Delivery != "delivered" {
		t.Fatalf("highway escalations = %d, %q, %q", code, out, errs)
	}
	code, out, errs = wacp(t, append(owner, "highway", "respond", xs[0].ID, "--envelope", "use the LR grammar")...)
	if code != 0 || !strings.Contains(out, `"response_type": "envelope"`) {
		t.Fatalf("highway respond = %d, %q, %q", code, out, errs)
	}
	code, out, errs = wacp(t, append(worker, "inbox", "next")...)
	if code != 0 || !strings.Contains(out, "use the LR grammar") || !strings.Contains(out, `"origin": "human"`) {
		t.Fatalf("the worker's inbox after the answer = %d, %q, %q", code, out, errs)
	}
	if code, _, errs := wacp(t, append(owner, "highway", "respond", xs[0].ID, "--delegate")...); code != 2 {
		t.Errorf("a second response = %d, %q; want 2", code, errs)
	}

	// The coordinator suspends the owner, grants it a capability, hands
	// the workspace to someone else.
	if code, out, errs := wacp(t, append(admin, "user", "state", "operator", "suspended", "--reason", "vacation")...); code != 0 || !strings.Contains(out, `"suspended"`) {
		t.Errorf("user state = %d, %q, %q", code, out, errs)
	}
	if code, out, errs := wacp(t, append(admin, "user", "state", "operator", "bogus")...); code != 2 {
		t.Errorf("user state bogus = %d, %q, %q; want 2", code, out, errs)
	}
	if code, out, errs := wacp(t, append(admin, "user", "capabilities", "operator", "--grant", "abort_own")...); code != 0 || !strings.Contains(out, "abort_own") {
		t.Errorf("user capabilities = %d, %q, %q", code, out, errs)
	}
	if code, out, errs := wacp(t, append(admin, "workspace", "transfer", ws, "--owner", "op")...); code != 0 || !strings.Contains(out, `"owner": "op"`) {
		t.Errorf("workspace transfer = %d, %q, %q", code, out, errs)
	}
}

// TestGatedWorkspaceCreate: under the gated preset, wacp workspace create
// exits 2 (gate_pending) with the reserved workspace id and its agent's
// token in the error's details; the token connects to nothing until a
// person approves the gate, and then it does.
func TestGatedWorkspaceCreate(t *testing.T) {
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	d := daemontest.Start(t, wacpd.Config{HighwayFile: "gated"})
	code, out, errs := wacp(t, "-data", d.Dir, "-o", "json", "token", "create", "--kind", "user", "--name", "op", "--capabilities", "create_workspace_any")
	var tok struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil {
		t.Fatalf("token create = %d, %q, %q", code, out, errs)
	}
	code, _, errs = wacp(t, "-data", d.Dir, "-o", "json", "workspace", "create", "--role", "worker")
	var e struct {
		Error struct {
			Code    string
			Details struct {
				GateID      string `json:"gate_id"`
				WorkspaceID string `json:"workspace_id"`
				Token       string
			}
		}
	}
	if code != 2 || json.Unmarshal([]byte(errs), &e) != nil || e.Error.Code != "gate_pending" || e.Error.Details.Token == "" || e.Error.Details.WorkspaceID == "" {
		t.Fatalf("gated workspace create = %d, %q", code, errs)
	}
	agent := []string{"-url", d.URL, "-token", e.Error.Details.Token, "-ws", e.Error.Details.WorkspaceID, "-timeout", "5s"}
	if code, _, _ := wacp(t, append(agent, "workspace", "get")...); code == 0 {
		t.Fatal("the token of a workspace a gate holds connected")
	}
	if code, _, errs := wacp(t, "-url", d.URL, "-token", tok.Token, "highway", "resolve", e.Error.Details.GateID, "--approve"); code != 0 {
		t.Fatalf("approve = %d, %q", code, errs)
	}
	if code, out, errs := wacp(t, append(agent, "-o", "json", "workspace", "get")...); code != 0 || !strings.Contains(out, `"idle"`) {
		t.Fatalf("the agent after the approval: workspace get = %d, %q, %q", code, out, errs)
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestIssue19Commands: wacp workspace grant|priority|budget, wacp highway
// budget and wacp group priority|abort over a real daemon: each does its
// work (exit 0, the reply printed) and is refused with exit 2 and the
// daemon's code when the request is wrong; a missing flag is a usage error.
func TestIssue19Commands(t *testing.T) {
	dir, url := daemon(t)
	admin := []string{"-data", dir, "-o", "json"}
	ok := func(args ...string) string {
		t.Helper()
		code, out, errs := wacp(t, append(admin, args...)...)
		if code != 0 {
			t.Fatalf("wacp %s = %d, %q, %q; want 0", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	refused := func(as []string, want string, args ...string) {
		t.Helper()
		code, out, errs := wacp(t, append(as, args...)...)
		if code != 2 || !strings.Contains(errs, want) {
			t.Fatalf("wacp %s = %d, %q, %q; want 2, %s", strings.Join(args, " "), code, out, errs, want)
		}
	}
	worker := func() string {
		t.Helper()
		var created struct{ Workspace struct{ ID string } }
		out := ok("workspace", "create", "--role", "worker", "--group", "batch-1", "--budget", `{"compute_budget":{"token_limit":100}}`)
		if err := json.Unmarshal([]byte(out), &created); err != nil || created.Workspace.ID == "" {
			t.Fatalf("workspace create: %q, %v", out, err)
		}
		ok("envelope", "send", "--to", created.Workspace.ID, "--type", "directive", "--content", "go")
		return created.Workspace.ID
	}
	a, b := worker(), worker()

	var w struct {
		Visibility []string
		Priority   string
		Budget     struct {
			ComputeBudget struct {
				TokenLimit int64 `json:"token_limit"`
			} `json:"compute_budget"`
		}
	}
	decode := func(out string) {
		t.Helper()
		w.Visibility, w.Priority = nil, ""
		if err := json.Unmarshal([]byte(out), &w); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
	}

	decode(ok("workspace", "grant", a, "--target", b, "--reason", "review"))
	if !strings.Contains(strings.Join(w.Visibility, ","), b) {
		t.Errorf("workspace grant: visibility %v, want %s in it", w.Visibility, b)
	}
	refused(admin, "invalid_structure", "workspace", "grant", a, "--target", b, "--reason", "again")
	if code, _, errs := wacp(t, append(admin, "workspace", "grant", a, "--reason", "no target")...); code == 0 || !strings.Contains(errs, "--target is required") {
		t.Errorf("workspace grant without --target = %d, %q; want a usage error", code, errs)
	}

	decode(ok("workspace", "priority", a, "critical"))
	if w.Priority != "critical" {
		t.Errorf("workspace priority: %q, want critical", w.Priority)
	}
	refused(admin, "invalid_structure", "workspace", "priority", a, "urgent")

	decode(ok("workspace", "budget", a, "--budget", `{"compute_budget":{"token_limit":150}}`))
	if w.Budget.ComputeBudget.TokenLimit != 150 {
		t.Errorf("workspace budget: token_limit %d, want 150", w.Budget.ComputeBudget.TokenLimit)
	}
	refused(admin, "invalid_structure", "workspace", "budget", a, "--budget", `{"compute_budget":{"token_limit":50}}`)

	bob := []string{"-url", url, "-token", userToken(t, dir, "bob", "modify_budget_any"), "-o", "json"}
	eve := []string{"-url", url, "-token", userToken(t, dir, "eve", ""), "-o", "json"}
	code, out, errs := wacp(t, append(bob, "highway", "budget", a, "--budget", `{"compute_budget":{"token_limit":200}}`)...)
	if code != 0 {
		t.Fatalf("highway budget (bob) = %d, %q, %q", code, out, errs)
	}
	decode(out)
	if w.Budget.ComputeBudget.TokenLimit != 200 {
		t.Errorf("highway budget: token_limit %d, want 200", w.Budget.ComputeBudget.TokenLimit)
	}
	refused(eve, "capability_denied", "highway", "budget", a, "--budget", `{"compute_budget":{"token_limit":300}}`)

	var batch struct {
		Affected []string `json:"affected_workspaces"`
		Skipped  []string `json:"skipped_workspaces"`
	}
	if err := json.Unmarshal([]byte(ok("group", "priority", "batch-1", "background")), &batch); err != nil || len(batch.Affected) != 2 {
		t.Fatalf("group priority: %+v, %v; want 2 affected", batch, err)
	}
	refused(admin, "invalid_structure", "group", "priority", "batch-1", "urgent")
	if err := json.Unmarshal([]byte(ok("group", "abort", "batch-1", "--reason", "cancelled")), &batch); err != nil || len(batch.Affected) != 2 {
		t.Fatalf("group abort: %+v, %v; want 2 affected", batch, err)
	}
	for _, id := range []string{a, b} {
		if out := ok("workspace", "get", id); !strings.Contains(out, `"state": "failed"`) {
			t.Errorf("after group abort %s: %s, want failed", id, out)
		}
	}
	refused(admin, "invalid_transition", "workspace", "priority", a, "normal")
}

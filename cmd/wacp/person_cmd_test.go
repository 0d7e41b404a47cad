package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// userToken mints a user token with caps through the CLI.
func userToken(t *testing.T, dir, name, caps string) string {
	t.Helper()
	args := []string{"-data", dir, "-o", "json", "token", "create", "--kind", "user", "--name", name}
	if caps != "" {
		args = append(args, "--capabilities", caps)
	}
	code, out, errs := wacp(t, args...)
	var tok struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" {
		t.Fatalf("token create %s = %d, %q, %q", name, code, out, errs)
	}
	return tok.Token
}

// TestHighwayPersonCommands: a person's own actions through wacp highway
// (create, suspend, resume, transfer, abort, user-state) over a real
// daemon: done under the user's capabilities, with the user as owner,
// originator and actor; refused (exit 2, capability_denied) without them,
// changing nothing.
func TestHighwayPersonCommands(t *testing.T) {
	dir, url, _ := highwayDaemon(t)
	alice := []string{"-url", url, "-token", userToken(t, dir, "alice", "create_workspace,suspend_own,abort_own"), "-o", "json"}
	bob := []string{"-url", url, "-token", userToken(t, dir, "bob", ""), "-o", "json"}
	admin := []string{"-url", url, "-token", userToken(t, dir, "admin", "transfer_ownership,deactivate_user"), "-o", "json"}

	code, out, errs := wacp(t, append(alice, "highway", "create", "--role", "worker")...)
	var created struct {
		Workspace struct{ ID, Owner, Originator, State string }
		Token     string
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Token == "" {
		t.Fatalf("highway create = %d, %q, %q", code, out, errs)
	}
	w := created.Workspace
	if w.Owner != "alice" || w.Originator != "alice" {
		t.Errorf("alice's workspace: owner %q, originator %q; want alice, alice", w.Owner, w.Originator)
	}
	// alice reads her own workspace's trail and system entries about her,
	// nothing else (view_trail_own); the whole chain is not hers to verify.
	code, out, errs = wacp(t, append(alice, "trail", "read", "--limit", "1000")...)
	var page struct {
		Entries []struct{ Workspace, Actor string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Entries) == 0 {
		t.Fatalf("alice's trail read = %d, %q, %q", code, out, errs)
	}
	for _, en := range page.Entries {
		if en.Workspace != w.ID && en.Workspace != "" {
			t.Errorf("alice reads an entry of workspace %s, not hers", en.Workspace)
		}
	}
	if code, _, errs := wacp(t, append(alice, "trail", "verify")...); code != 2 || !strings.Contains(errs, "capability_denied") {
		t.Errorf("alice verifies the whole trail = %d, %q; want 2, capability_denied", code, errs)
	}
	if code, _, errs := wacp(t, append(bob, "highway", "create", "--role", "worker")...); code != 2 || !strings.Contains(errs, "capability_denied") {
		t.Errorf("bob's highway create = %d, %q; want 2, capability_denied", code, errs)
	}
	// Activate it (the coordinator's directive), then alice suspends and resumes it.
	if code, _, errs := wacp(t, "-data", dir, "envelope", "send", "--to", w.ID, "--type", "directive", "--content", "go"); code != 0 {
		t.Fatalf("directive = %d, %q", code, errs)
	}
	for _, step := range []struct{ op, want string }{{"suspend", "suspended"}, {"resume", "active"}} {
		code, out, errs := wacp(t, append(alice, "highway", step.op, w.ID)...)
		if code != 0 || !strings.Contains(out, `"state": "`+step.want+`"`) {
			t.Errorf("highway %s = %d, %q, %q; want %s", step.op, code, out, errs, step.want)
		}
	}
	if code, _, errs := wacp(t, append(bob, "highway", "suspend", w.ID)...); code != 2 || !strings.Contains(errs, "capability_denied") {
		t.Errorf("bob suspends alice's workspace = %d, %q; want 2, capability_denied", code, errs)
	}
	if code, out, errs := wacp(t, append(admin, "highway", "transfer", w.ID, "--owner", "bob")...); code != 0 || !strings.Contains(out, `"owner": "bob"`) {
		t.Errorf("highway transfer = %d, %q, %q", code, out, errs)
	}
	// Now bob's: alice's abort_own no longer covers it.
	if code, _, errs := wacp(t, append(alice, "highway", "abort", w.ID)...); code != 2 || !strings.Contains(errs, "capability_denied") {
		t.Errorf("alice aborts bob's workspace = %d, %q; want 2, capability_denied", code, errs)
	}
	if code, out, errs := wacp(t, append(admin, "highway", "user-state", "alice", "deactivated", "--reason", "left")...); code != 0 || !strings.Contains(out, `"state": "deactivated"`) {
		t.Errorf("highway user-state alice deactivated = %d, %q, %q", code, out, errs)
	}
	if code, _, errs := wacp(t, append(alice, "highway", "create", "--role", "worker")...); code != 2 || !strings.Contains(errs, "capability_denied") {
		t.Errorf("a deactivated user creates = %d, %q; want 2, capability_denied", code, errs)
	}
	code, out, _ = wacp(t, "-data", dir, "-o", "json", "trail", "read", "--type", "capability_denied")
	for _, who := range []string{`"user_id": "bob"`, `"user_id": "alice"`, `"reason": "wrong_scope"`, `"reason": "user_not_active"`} {
		if code != 0 || !strings.Contains(out, who) {
			t.Errorf("capability_denied entries lack %s: %d, %q", who, code, out)
		}
	}
}

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRightsCommands: wacp rights list and revoke over a real daemon. A
// worker lists its own rights; the coordinator revokes the root's send
// right to it (exit 0, the right printed), the worker may not (exit 2,
// permission_denied), and the list no longer shows it.
func TestRightsCommands(t *testing.T) {
	dir, url := daemon(t)
	admin := []string{"-data", dir}
	code, out, errs := wacp(t, append(admin, "-o", "json", "workspace", "create", "--role", "worker")...)
	var created struct {
		Workspace struct{ ID string }
		Token     string
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Token == "" {
		t.Fatalf("workspace create = %d, %q, %q", code, out, errs)
	}
	ws := created.Workspace.ID
	worker := []string{"-url", url, "-token", created.Token, "-ws", ws}

	var rights struct {
		Workspace         string
		Outbound, Inbound []struct {
			RightID   string `json:"right_id"`
			RightType string `json:"right_type"`
			Holder    string `json:"holder"`
			Target    string `json:"target"`
		}
	}
	code, out, errs = wacp(t, append(worker, "-o", "json", "rights", "list")...)
	if code != 0 || json.Unmarshal([]byte(out), &rights) != nil || rights.Workspace != ws || len(rights.Inbound) != 1 || len(rights.Outbound) != 1 {
		t.Fatalf("wacp rights list = %d, %q, %q; want the worker's one right each way", code, out, errs)
	}
	in := rights.Inbound[0]
	if in.Target != ws || in.RightType != "send" {
		t.Errorf("inbound right = %+v, want a send right to %s", in, ws)
	}
	code, out, _ = wacp(t, append(admin, "rights", "list", ws)...)
	row := strings.Join([]string{"in", in.RightID, "send", in.Holder, "->", ws}, " ")
	if code != 0 || !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.Join(strings.Fields(l), " ") == row }) {
		t.Errorf("wacp rights list %s (table) = %d, %q; want the inbound row", ws, code, out)
	}

	code, _, errs = wacp(t, append(worker, "rights", "revoke", in.RightID)...)
	if code != 2 || !strings.Contains(errs, "permission_denied") {
		t.Errorf("worker's wacp rights revoke = %d, %q; want 2, permission_denied", code, errs)
	}
	code, out, errs = wacp(t, append(admin, "-o", "json", "rights", "revoke", in.RightID, "--reason", "boundary")...)
	var revoked struct {
		RightID string `json:"right_id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &revoked) != nil || revoked.RightID != in.RightID {
		t.Fatalf("wacp rights revoke = %d, %q, %q; want the right", code, out, errs)
	}
	code, out, _ = wacp(t, append(worker, "-o", "json", "rights", "list")...)
	if code != 0 || json.Unmarshal([]byte(out), &rights) != nil || len(rights.Inbound) != 0 {
		t.Errorf("wacp rights list after the revocation = %d, %q; want no inbound right", code, out)
	}
	if code, _, errs := wacp(t, append(admin, "rights", "revoke", in.RightID)...); code == 0 || !strings.Contains(errs, "not_found") {
		t.Errorf("wacp rights revoke again = %d, %q; want not_found", code, errs)
	}
}

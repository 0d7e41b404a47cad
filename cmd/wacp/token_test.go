package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTokenRevoke revokes an auditor's token with the CLI: the token
// stops working, and revoking again revokes nothing. Missing flags are a
// usage error.
func TestTokenRevoke(t *testing.T) {
	dir, url := daemon(t)
	tok := auditorToken(t, dir)
	aud := []string{"-url", url, "-token", tok}
	if code, out, errs := wacp(t, append(aud, "trail", "verify")...); code != 0 {
		t.Fatalf("wacp trail verify as the auditor = %d, %q, %q", code, out, errs)
	}
	code, out, errs := wacp(t, "-data", dir, "token", "revoke", "--kind", "auditor", "--name", "alice", "--reason", "left")
	if code != 0 || strings.TrimSpace(out) != "revoked 1 token(s) of auditor alice" {
		t.Fatalf("wacp token revoke = %d, %q, %q; want 0 and one revoked", code, out, errs)
	}
	if code, out, _ := wacp(t, append(aud, "trail", "verify")...); code == 0 {
		t.Errorf("wacp trail verify with the revoked token = 0, %q; want a failure", out)
	}
	if code, out, errs := wacp(t, "-data", dir, "token", "revoke", "--kind", "auditor", "--name", "alice"); code != 0 || !strings.HasPrefix(out, "revoked 0 ") {
		t.Errorf("wacp token revoke again = %d, %q, %q; want 0 and none revoked", code, out, errs)
	}
	if code, _, errs := wacp(t, "-data", dir, "token", "revoke", "--kind", "auditor"); code != 1 || !strings.Contains(errs, "--name is required") {
		t.Errorf("wacp token revoke without --name = %d, %q; want 1 (usage) and the missing flag", code, errs)
	}
}

// TestTokenTool: token create --kind tool NAME makes a tool service's
// token (the name as an argument or --name, not two different ones), and
// token revoke --kind tool revokes it.
func TestTokenTool(t *testing.T) {
	dir, _ := daemon(t)
	code, out, errs := wacp(t, "-data", dir, "-o", "json", "token", "create", "--kind", "tool", "acme-tools")
	var tok struct{ Token, Kind, Name string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" || tok.Kind != "tool" || tok.Name != "acme-tools" {
		t.Fatalf("wacp token create --kind tool acme-tools = %d, %q, %q; want a tool token", code, out, errs)
	}
	if code, out, errs := wacp(t, "-data", dir, "token", "create", "--kind", "tool", "--name", "acme-tools", "other"); code != 1 || !strings.Contains(errs, "give the name once") {
		t.Errorf("wacp token create with two names = %d, %q, %q; want a usage error", code, out, errs)
	}
	if code, out, errs := wacp(t, "-data", dir, "token", "revoke", "--kind", "tool", "--name", "acme-tools"); code != 0 || strings.TrimSpace(out) != "revoked 1 token(s) of tool acme-tools" {
		t.Errorf("wacp token revoke --kind tool = %d, %q, %q; want one revoked", code, out, errs)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
)

// daemon runs the real daemon in-process and returns its data dir and URL.
func daemon(t *testing.T) (dir, url string) {
	t.Helper()
	dir, url, _ = stoppable(t)
	return dir, url
}

// wacp runs the command and returns its exit code and output.
func wacp(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCommands(t *testing.T) {
	dir, url := daemon(t)
	admin := []string{"-data", dir}

	code, out, errs := wacp(t, append(admin, "info")...)
	if code != 0 || !strings.Contains(out, "(root)") || !strings.Contains(out, "blake3-256") {
		t.Fatalf("wacp info = %d, %q, %q; want 0 and the root workspace", code, out, errs)
	}

	code, out, errs = wacp(t, append(admin, "-o", "json", "workspace", "create", "--role", "worker", "--priority", "normal")...)
	if code != 0 {
		t.Fatalf("wacp workspace create = %d, %s", code, errs)
	}
	var created struct {
		Workspace struct{ ID, State string }
		Token     string
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Token == "" || created.Workspace.ID == "" {
		t.Fatalf("workspace create -o json = %q (%v), want workspace and token", out, err)
	}
	ws := created.Workspace.ID
	worker := []string{"-url", url, "-token", created.Token, "-ws", ws}

	if code, out, errs := wacp(t, append(admin, "envelope", "send", "--to", ws, "--type", "directive", "--content", "parse it")...); code != 0 || !strings.Contains(out, "status") {
		t.Fatalf("wacp envelope send = %d, %q, %q", code, out, errs)
	}
	if code, out, errs := wacp(t, append(worker, "inbox", "next", "--wait", "2s")...); code != 0 || !strings.Contains(out, "parse it") {
		t.Errorf("wacp inbox next = %d, %q, %q; want the directive", code, out, errs)
	}
	// inbox next acknowledged what it printed; with --no-ack the envelope
	// stays leased until inbox ack.
	if code, out, errs := wacp(t, append(admin, "envelope", "send", "--to", ws, "--type", "feedback", "--content", "again")...); code != 0 {
		t.Fatalf("wacp envelope send = %d, %q, %q", code, out, errs)
	}
	code, out, errs = wacp(t, append(worker, "-o", "json", "inbox", "next", "--no-ack")...)
	var leased struct {
		ID       string
		Delivery struct{ Attempt int }
	}
	if err := json.Unmarshal([]byte(out), &leased); code != 0 || err != nil || leased.Delivery.Attempt != 1 {
		t.Fatalf("wacp inbox next --no-ack = %d, %q, %q; want the feedback at attempt 1", code, out, errs)
	}
	if code, out, errs := wacp(t, append(worker, "-o", "json", "inbox", "ack", leased.ID)...); code != 0 || !strings.Contains(out, `"removed": true`) {
		t.Errorf("wacp inbox ack %s = %d, %q, %q; want removed", leased.ID, code, out, errs)
	}
	if code, out, errs := wacp(t, append(worker, "-o", "json", "inbox", "ack", leased.ID)...); code != 0 || !strings.Contains(out, `"removed": false`) {
		t.Errorf("wacp inbox ack %s again = %d, %q, %q; want ok, not removed", leased.ID, code, out, errs)
	}
	if code, out, errs := wacp(t, append(worker, "-o", "json", "inbox", "next")...); code != 0 || strings.TrimSpace(out) != "{}" {
		t.Errorf("wacp inbox next after both were acknowledged = %d, %q, %q; want {}", code, out, errs)
	}

	file := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(file, []byte("# parser\ndone\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = wacp(t, append(worker, "checkpoint", "create", "--type", "artifact", "--intent", "first cut",
		"--status", "provisional", "--confidence", "medium", "--file", file, "--files-changed", "a.go,b.go",
		"--tokens", "1200", "--wall-time", "1s")...)
	if code != 0 || !strings.Contains(out, "digest") {
		t.Fatalf("wacp checkpoint create = %d, %q, %q", code, out, errs)
	}
	code, out, errs = wacp(t, append(worker, "checkpoint", "create", "--parent-head", "--type", "artifact",
		"--intent", "second", "--status", "final", "--confidence", "high")...)
	if code != 0 {
		t.Fatalf("wacp checkpoint create --parent-head = %d, %q, %q", code, out, errs)
	}

	code, out, errs = wacp(t, append(admin, "-o", "json", "checkpoint", "list", "--workspace", ws)...)
	var cps []checkpointchain.Checkpoint
	if code != 0 || json.Unmarshal([]byte(out), &cps) != nil || len(cps) != 2 {
		t.Fatalf("wacp checkpoint list -o json = %d, %q, %q; want 2 checkpoints", code, out, errs)
	}
	if cps[0].Payload.Content != "# parser\ndone\n" || len(cps[0].Payload.FilesChanged) != 2 || cps[1].ParentID() != cps[0].ID {
		t.Errorf("checkpoints = %+v, want the file's content and a chain", cps)
	}

	if code, out, errs := wacp(t, append(admin, "trail", "verify")...); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("wacp trail verify = %d, %q, %q; want 0 and ok", code, out, errs)
	}
	if code, out, errs := wacp(t, append(admin, "trail", "read", "--workspace", ws, "--type", "checkpoint_created")...); code != 0 || strings.Count(out, "checkpoint_created") != 2 {
		t.Errorf("wacp trail read = %d, %q, %q; want 2 checkpoint_created rows", code, out, errs)
	}

	// A rejection: the chain has a head, so a checkpoint without parent is refused.
	code, _, errs = wacp(t, append(worker, "checkpoint", "create", "--type", "artifact", "--intent", "again",
		"--status", "final", "--confidence", "high")...)
	if code != 2 || !strings.HasPrefix(errs, "wacp: invalid_parent: ") {
		t.Errorf("wacp checkpoint create (no parent) = %d, %q; want 2 and invalid_parent", code, errs)
	}
	// The boundary: the worker's token may not act for the root.
	code, _, errs = wacp(t, "-url", url, "-token", created.Token, "workspace", "list")
	if code != 2 || !strings.Contains(errs, "permission_denied") {
		t.Errorf("wacp workspace list with a worker token as root = %d, %q; want 2 and permission_denied", code, errs)
	}
}

func TestUsageAndUnreachable(t *testing.T) {
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	empty := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no intent", []string{"checkpoint", "create", "--type", "artifact", "--status", "final", "--confidence", "high"}, 1,
			"wacp: checkpoint create: --intent is required (why this checkpoint exists)"},
		{"unknown command", []string{"frobnicate"}, 1, `unknown command "frobnicate"`},
		{"unknown subcommand", []string{"checkpoint", "delete"}, 1, `unknown subcommand "delete"`},
		{"bad flag", []string{"trail", "verify", "--nope"}, 1, "flag provided but not defined"},
		{"bad output", []string{"-o", "yaml", "info"}, 1, "-o must be table or json"},
		{"missing id", []string{"checkpoint", "get"}, 1, "missing argument"},
		{"help", []string{"-h"}, 0, "usage: wacp"},
		{"no daemon", []string{"-data", empty, "info"}, 5, "is wacpd running?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := wacp(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.inStderr) {
				t.Errorf("wacp %v = %d, %q; want %d and %q", tt.args, code, errs, tt.code, tt.inStderr)
			}
		})
	}
}

// TestErrorsAsJSON: under -o json an error is one JSON object on stderr,
// with the wire's code and message for a refusal, "usage" for bad
// arguments and "client" when the daemon is not reached, and the exit code.
func TestErrorsAsJSON(t *testing.T) {
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	dir, _ := daemon(t)
	tests := []struct {
		name     string
		args     []string
		code     int
		wireCode string
	}{
		{"refused", []string{"-data", dir, "-o", "json", "workspace", "get", "01M80A5AWYFQV5D3HZDB2ZDM6W"}, 2, "not_found"},
		{"usage", []string{"-o", "json", "checkpoint", "get"}, 1, "usage"},
		{"no daemon", []string{"-data", t.TempDir(), "-o", "json", "info"}, 5, "client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := wacp(t, tt.args...)
			var j jsonError
			if err := json.Unmarshal([]byte(errs), &j); err != nil {
				t.Fatalf("stderr is not one JSON object: %v\n%s", err, errs)
			}
			if code != tt.code || j.Error.Code != tt.wireCode || j.Error.ExitCode != code || j.Error.Message == "" {
				t.Errorf("wacp %v = %d, %+v; want exit %d, code %q", tt.args, code, j.Error, tt.code, tt.wireCode)
			}
		})
	}
}

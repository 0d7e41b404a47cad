package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/trace"
)

// TestTraceExport: a worker exports its own CARP session and an admin
// (the coordinator) the worker's with --session and the signed tree head;
// both exports, more than one page (1000 events) long, verify with trace
// verify and hold every event, to the last one's.
func TestTraceExport(t *testing.T) {
	admin, worker, ws := carpDaemon(t)
	r := resolve(t, worker, "--goal", "read T-1", "--actions", "ticket.get").ResolutionID
	if code, out, errs := wacp(t, append(worker, "carp", "execute", "--resolution", r, "--action", "ticket.get",
		"--param", "ticket_id=T-1", "--timeout-ms", "250")...); code != 1 {
		t.Fatalf("wacp carp execute = %d, %q, %q", code, out, errs)
	}

	// Over a page of events: 520 validates, two events each.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Options{URL: worker[1], Token: worker[3], Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w, err := cl.GetWorkspace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 520 {
		req := cl.NewCarpRequest(carp.OpValidate, w.Agent)
		req.Action = &carp.ActionSpec{ActionID: "ticket.get", ActionType: "ticket.get", ResolutionID: r, Parameters: map[string]any{"ticket_id": "T-1"}}
		if _, err := cl.CarpValidate(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// The last event: validate's action.approved.
	last := func(events []trace.Event) string { return events[len(events)-1].EventType }

	dir := t.TempDir()
	own := filepath.Join(dir, "own.jsonl")
	code, out, errs := wacp(t, append(worker, "trace", "export", "--out", own)...)
	if code != 0 || out != "" || !strings.HasPrefix(errs, "exported ") || !strings.HasSuffix(errs, " events of session "+ws+" to "+own+"\n") {
		t.Fatalf("wacp trace export --out = %d, %q, %q", code, out, errs)
	}
	events := readExport(t, own)
	if len(events) <= 1000 || last(events) != carp.TraceActionApproved || events[len(events)-1].Sequence != uint64(len(events)-1) {
		t.Fatalf("the export has %d events, the last %s; want more than 1000, the whole session", len(events), last(events))
	}
	code, out, errs = wacp(t, append(worker, "trace", "verify", own)...)
	if want := "ok: " + strconv.Itoa(len(events)) + " events, session " + ws + "\n"; code != 0 || out != want {
		t.Errorf("wacp trace verify (the worker's export) = %d, %q, %q; want 0 and %q", code, out, errs, want)
	}
	var sawTimeout bool
	for _, e := range events {
		sawTimeout = sawTimeout || e.EventType == carp.TraceActionRequested && bytes.Contains(e.Payload, []byte(`"timeout_ms":250`))
	}
	if !sawTimeout {
		t.Errorf("no action.requested with timeout_ms 250 in the export: --timeout-ms did not reach the request")
	}

	// The coordinator: the worker's session, with the signed head.
	sth := filepath.Join(dir, "sth.json")
	code, out, errs = wacp(t, append(admin, "trace", "export", "--session", ws, "--sth", sth)...)
	if code != 0 {
		t.Fatalf("wacp trace export --session --sth = %d, %q", code, errs)
	}
	audited, err := trace.ReadJSONL(strings.NewReader(out))
	if err != nil || len(audited) != len(events) || audited[len(audited)-1].EventHash != events[len(events)-1].EventHash {
		t.Errorf("the coordinator's export of %s: %d events (%v), want the worker's %d", ws, len(audited), err, len(events))
	}
	if v := trace.Verify(audited); v != nil {
		t.Errorf("the coordinator's export does not verify: %v", v)
	}
	b, err := os.ReadFile(sth)
	var head trace.TreeHead
	if err != nil || json.Unmarshal(b, &head) != nil || !strings.HasSuffix(head.Origin, "/trace") || head.Size == 0 || !strings.HasPrefix(head.Note, head.Origin+"\n") {
		t.Errorf("--sth wrote %q (%v); want a signed TRACE tree head", b, err)
	}

	// The whole log, checked offline against its signed head with the
	// data dir's key.
	all, allSTH := filepath.Join(dir, "all.jsonl"), filepath.Join(dir, "all-sth.json")
	if code, _, errs := wacp(t, append(admin, "trace", "export", "--all", "--out", all, "--sth", allSTH)...); code != 0 {
		t.Fatalf("wacp trace export --all --sth = %d, %q", code, errs)
	}
	code, out, errs = wacp(t, append(admin, "trace", "verify", all, "--sth", allSTH)...)
	if code != 0 || !strings.Contains(out, " sessions; the first ") || !strings.Contains(out, "have the signed head's root sha256:") {
		t.Fatalf("wacp trace verify --sth (the whole log) = %d, %q, %q", code, out, errs)
	}
	// Two events of different sessions swapped: every chain still holds,
	// the log's root does not.
	whole := readExport(t, all)
	i := 0
	for i+1 < len(whole) && whole[i].SessionID == whole[i+1].SessionID {
		i++
	}
	if i+1 >= len(whole) {
		t.Fatal("the whole log has one session")
	}
	whole[i], whole[i+1] = whole[i+1], whole[i]
	var buf bytes.Buffer
	if err := trace.WriteJSONL(&buf, whole); err != nil {
		t.Fatal(err)
	}
	swapped := filepath.Join(dir, "swapped.jsonl")
	if err := os.WriteFile(swapped, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = wacp(t, append(admin, "trace", "verify", swapped, "--sth", allSTH)...)
	if code != 2 || !strings.HasPrefix(out, "root_mismatch at index ") {
		t.Errorf("wacp trace verify --sth of a reordered log = %d, %q; want 2 and root_mismatch", code, out)
	}
	// Another key: the head does not open.
	_, otherKey, err := note.GenerateKey(nil, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errs := wacp(t, append(admin, "trace", "verify", all, "--sth", allSTH, "--public-key", otherKey)...); code == 0 || !strings.Contains(errs, "invalid signed tree head") {
		t.Errorf("wacp trace verify --sth with another key = %d, %q; want a refusal", code, errs)
	}
	// A one-session export does not hold the whole log.
	if code, out, errs := wacp(t, append(admin, "trace", "verify", own, "--sth", allSTH)...); code == 0 ||
		!strings.Contains(errs, "whole-log export") && !strings.HasPrefix(out, "root_mismatch") {
		t.Errorf("wacp trace verify --sth of one session = %d, %q, %q; want it refused", code, out, errs)
	}

	for _, tt := range []struct {
		name   string
		global []string
		args   []string
		code   int
		stderr string
	}{
		{"sth without session", worker, []string{"--sth", sth}, 1, "--sth needs --session"},
		{"a worker reads another session", worker, []string{"--session", "01M80A5AWYFQV5D3HZDB2ZDM6W"}, 2, "permission_denied"},
		{"a session without events", admin, []string{"--session", "01M80A5AWYFQV5D3HZDB2ZDM6W"}, 0, "wacp: trace export: no TRACE events in session 01M80A5AWYFQV5D3HZDB2ZDM6W\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errs := wacp(t, append(append(tt.global, "trace", "export"), tt.args...)...); code != tt.code || !strings.Contains(errs, tt.stderr) {
				t.Errorf("wacp trace export %v = %d, %q; want %d and %q", tt.args, code, errs, tt.code, tt.stderr)
			}
		})
	}
}

func readExport(t *testing.T, file string) []trace.Event {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := trace.ReadJSONL(f)
	if err != nil || len(events) == 0 {
		t.Fatalf("read %s: %d events, %v", file, len(events), err)
	}
	return events
}

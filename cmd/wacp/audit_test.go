package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/auditor/datadir"
	wacpd "github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/trail"
)

// stoppable runs the real daemon like daemon does, and returns a function
// that stops it and waits (also called at cleanup; safe twice).
func stoppable(t *testing.T) (dir, url string, stop func()) {
	t.Helper()
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	d := daemontest.Start(t, wacpd.Config{})
	return d.Dir, d.URL, d.Stop
}

// busy creates a worker with two checkpoints through the CLI and returns
// the worker's id and the checkpoint ids.
func busy(t *testing.T, dir, url string) (ws string, cps []string) {
	t.Helper()
	admin := []string{"-data", dir}
	code, out, errs := wacp(t, append(admin, "-o", "json", "workspace", "create", "--role", "worker")...)
	if code != 0 {
		t.Fatalf("wacp workspace create = %d, %s", code, errs)
	}
	var created struct {
		Workspace struct{ ID string }
		Token     string
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	ws = created.Workspace.ID
	if code, _, errs := wacp(t, append(admin, "envelope", "send", "--to", ws, "--type", "directive", "--content", "go")...); code != 0 {
		t.Fatalf("wacp envelope send = %d, %s", code, errs)
	}
	worker := []string{"-url", url, "-token", created.Token, "-ws", ws, "-o", "json"}
	for i, args := range [][]string{
		{"checkpoint", "create", "--type", "artifact", "--intent", "first", "--status", "provisional", "--confidence", "high"},
		{"checkpoint", "create", "--parent-head", "--type", "artifact", "--intent", "second", "--status", "final", "--confidence", "high"},
	} {
		code, out, errs := wacp(t, append(worker, args...)...)
		var cp struct{ ID string }
		if code != 0 || json.Unmarshal([]byte(out), &cp) != nil || cp.ID == "" {
			t.Fatalf("wacp checkpoint create #%d = %d, %q, %q", i+1, code, out, errs)
		}
		cps = append(cps, cp.ID)
	}
	return ws, cps
}

func auditorToken(t *testing.T, dir string) string {
	t.Helper()
	code, out, errs := wacp(t, "-data", dir, "-o", "json", "token", "create", "--kind", "auditor", "--name", "alice")
	var tok struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" {
		t.Fatalf("wacp token create = %d, %q, %q", code, out, errs)
	}
	return tok.Token
}

func TestTrailAudit(t *testing.T) {
	dir, url := daemon(t)
	_, cps := busy(t, dir, url)
	aud := []string{"-url", url, "-token", auditorToken(t, dir)}
	pub, err := os.ReadFile(filepath.Join(dir, datadir.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(pub))
	_, otherKey, err := note.GenerateKey(nil, "wacpd-other")
	if err != nil {
		t.Fatal(err)
	}

	// prove waits for a tree head covering the checkpoint.
	code, out, errs := wacp(t, append(aud, "trail", "prove", cps[1])...)
	if code != 0 || !strings.HasPrefix(out, "proved: checkpoint "+cps[1]) || !strings.Contains(out, "verified against the signed root") {
		t.Fatalf("wacp trail prove = %d, %q, %q; want 0 and proved", code, out, errs)
	}
	if code, out, errs := wacp(t, append(aud, "trail", "prove", cps[0], "--public-key", key)...); code != 0 || !strings.HasPrefix(out, "proved: ") {
		t.Errorf("wacp trail prove --public-key (the daemon's) = %d, %q, %q; want 0", code, out, errs)
	}
	if code, out, errs := wacp(t, append(aud, "trail", "prove", cps[0], "--public-key", otherKey)...); code != 2 || !strings.HasPrefix(out, "not proved: ") {
		t.Errorf("wacp trail prove --public-key (another) = %d, %q, %q; want 2 and not proved", code, out, errs)
	}
	if code, _, errs := wacp(t, append(aud, "trail", "prove", "01JNOSUCHCHECKPOINTXXXXXXX")...); code != 2 || !strings.Contains(errs, "not_found") {
		t.Errorf("wacp trail prove (unknown) = %d, %q; want 2 and not_found", code, errs)
	}

	file := filepath.Join(t.TempDir(), "trail.jsonl")
	if code, _, errs := wacp(t, append(aud, "trail", "export", "-f", file)...); code != 0 || !strings.HasPrefix(errs, "exported ") {
		t.Fatalf("wacp trail export = %d, %q; want 0", code, errs)
	}
	// Offline: no daemon flags at all.
	code, out, errs = wacp(t, "trail", "verify", "--bundle", file)
	if code != 0 || !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, " 2 objects, signed size ") || !strings.Contains(out, key) {
		t.Fatalf("wacp trail verify --bundle = %d, %q, %q; want 0 and the counts", code, out, errs)
	}
	if code, out, errs := wacp(t, "trail", "verify", "--bundle", file, "--public-key", key); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("wacp trail verify --bundle --public-key (the daemon's) = %d, %q, %q; want 0", code, out, errs)
	}
	if code, out, errs := wacp(t, "trail", "verify", "--bundle", file, "--public-key", otherKey); code != 2 || !strings.Contains(out, "broken: tree head: signature_invalid") {
		t.Errorf("wacp trail verify --bundle --public-key (another) = %d, %q, %q; want 2 and signature_invalid", code, out, errs)
	}
	code, out, _ = wacp(t, "-o", "json", "trail", "verify", "--bundle", file)
	var rep auditor.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || rep.Objects != 2 {
		t.Errorf("wacp -o json trail verify --bundle = %d, %q; want an ok report", code, out)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	var e3 struct{ Entry trail.Entry }
	if err := json.Unmarshal(lines[3], &e3); err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Clone(data)
	off := len(lines[0]) + len(lines[1]) + len(lines[2]) + bytes.Index(lines[3], []byte(`"actor":"`)) + len(`"actor":"`)
	tampered[off] ^= 0x01
	deleted := bytes.Join(append(append([][]byte{}, lines[:3]...), lines[4:]...), nil)
	for _, tt := range []struct {
		name, data, want string
	}{
		{"byte changed", string(tampered), "broken: entry " + e3.Entry.ID + ": hash_mismatch"},
		{"entry deleted", string(deleted), ": chain_broken"},
	} {
		f := filepath.Join(t.TempDir(), "bundle.jsonl")
		if err := os.WriteFile(f, []byte(tt.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errs := wacp(t, "trail", "verify", "--bundle", f); code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("%s: wacp trail verify --bundle = %d, %q, %q; want 2 and %q", tt.name, code, out, errs, tt.want)
		}
	}

	code, out, errs = wacp(t, "-data", dir, "trail", "replay")
	if code != 0 || strings.TrimSpace(out) != "replay matches the live state: 2 workspaces, 2 checkpoints" {
		t.Errorf("wacp trail replay = %d, %q, %q; want 0 and a match", code, out, errs)
	}
}

// TestTrailVerifyDataDir: verify --dir checks a stopped daemon's data dir,
// and refuses a running one's.
func TestTrailVerifyDataDir(t *testing.T) {
	dir, url, stop := stoppable(t)
	busy(t, dir, url)
	if code, _, errs := wacp(t, "trail", "verify", "--dir", dir); code != 1 || !strings.Contains(errs, "is the daemon stopped?") {
		t.Errorf("wacp trail verify --dir (running) = %d, %q; want 1 and a hint to stop it", code, errs)
	}
	stop()
	code, out, errs := wacp(t, "trail", "verify", "--dir", dir)
	if code != 0 || !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, " 2 workspaces, 2 objects, signed size ") {
		t.Fatalf("wacp trail verify --dir (stopped) = %d, %q, %q; want 0 and the counts", code, out, errs)
	}
	// The last tree head, signed at shutdown, covers the whole trail.
	var rep auditor.Report
	if code, out, _ := wacp(t, "-o", "json", "trail", "verify", "--dir", dir); code != 0 || json.Unmarshal([]byte(out), &rep) != nil || uint64(rep.Entries) != rep.Size {
		t.Errorf("wacp -o json trail verify --dir = %d, %q; want every entry signed", code, out)
	}
	_, otherKey, _ := note.GenerateKey(nil, "wacpd-other")
	if code, out, errs := wacp(t, "trail", "verify", "--dir", dir, "--public-key", otherKey); code != 2 || !strings.Contains(out, "signature_invalid") {
		t.Errorf("wacp trail verify --dir --public-key (another) = %d, %q, %q; want 2", code, out, errs)
	}
}

func TestTrailAuditUsage(t *testing.T) {
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"bundle and dir", []string{"trail", "verify", "--bundle", "a", "--dir", "b"}, 1, "not both"},
		{"bundle and workspace", []string{"trail", "verify", "--bundle", "a", "--workspace", "w"}, 1, "--workspace is for the online check"},
		{"key alone", []string{"trail", "verify", "--public-key", "k"}, 1, "--public-key goes with --bundle or --dir"},
		{"no bundle file", []string{"trail", "verify", "--bundle", filepath.Join(t.TempDir(), "none.jsonl")}, 1, "open bundle"},
		{"no data dir", []string{"trail", "verify", "--dir", t.TempDir()}, 1, "trail.pub"},
		{"prove without id", []string{"trail", "prove"}, 1, "missing argument"},
		{"replay with an argument", []string{"trail", "replay", "x"}, 1, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := wacp(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.inStderr) {
				t.Errorf("wacp %v = %d, %q; want %d and %q", tt.args, code, errs, tt.code, tt.inStderr)
			}
		})
	}
	// A bundle from stdin.
	code, out, _ := wacpStdin(t, "not a bundle\n", "trail", "verify", "--bundle", "-")
	if code != 2 || !strings.Contains(out, "broken: tree head: signature_invalid") {
		t.Errorf("wacp trail verify --bundle - (garbage) = %d, %q; want 2", code, out)
	}
}

func wacpStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	old := os.Stdin
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.WriteString(stdin); w.Close() }()
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	return wacp(t, args...)
}

func TestTimeline(t *testing.T) {
	ws := "01JABCDEFGHJKMNPQRSTVWXYZ0"
	entry := func(typ trail.EventType, workspace, actor, body string) trail.Entry {
		return trail.Entry{ID: "01J00000000000000000000000", Timestamp: "2026-11-21T22:48:25.123456789Z",
			Workspace: workspace, Actor: actor, EventType: typ, Body: json.RawMessage(body)}
	}
	tests := []struct {
		e    trail.Entry
		want string
	}{
		{entry(trail.EventCheckpointCreated, ws, "worker", `{"checkpoint_id":"01JCP","type":"artifact","status":"final","parent":"01JPARENTPARENTPARENT12345","workspace":"`+ws+`"}`),
			"22:48:25.123  STVWXYZ0  worker        checkpoint_created          artifact final 01JCP after ENT12345"},
		{entry(trail.EventWorkspaceStateChanged, ws, "system", `{"workspace_id":"x","from_state":"idle","to_state":"active","trigger":"directive_received","initiator":"system"}`),
			"22:48:25.123  STVWXYZ0  system        workspace_state_changed     idle→active (directive_received)"},
		{entry(trail.EventWorkspaceCreated, ws, "protocol", `{"workspace_id":"`+ws+`","role":"coordinator","parent":null}`),
			"22:48:25.123  STVWXYZ0  protocol      workspace_created           coordinator " + ws + " (root)"},
		{entry(trail.EventAuthenticationFailed, "", "system", `{"user_id":"u1","reason":"bad token","remote":"127.0.0.1"}`),
			"22:48:25.123  system    system        authentication_failed"},
	}
	for _, tt := range tests {
		got := timeline(tt.e)
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("timeline(%s) = %q, want prefix %q", tt.e.EventType, got, tt.want)
		}
	}
	// Any event gets its registry fields.
	got := timeline(entry(trail.EventPortRightCreated, ws, "protocol", `{"right_id":"r1","right_type":"send","holder":"a","target":"b","created_by":"c"}`))
	if !strings.HasSuffix(got, "right_id=r1 right_type=send holder=a target=b") {
		t.Errorf("timeline(port_right_created) = %q, want its first four fields", got)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestTrailTailFollow(t *testing.T) {
	dir, _ := daemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"-data", dir, "trail", "tail", "-f"}, &out, &errb) }()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("wacp trail tail -f = %d after Ctrl-C, %q; want 0", code, errb.String())
		}
	}()
	// The subscription starts at some point: create workspaces until one
	// shows up.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		if code, _, errs := wacp(t, "-data", dir, "workspace", "create", "--role", "worker"); code != 0 {
			t.Fatalf("wacp workspace create = %d, %s", code, errs)
		}
		if s := out.String(); strings.Contains(s, "workspace_created") && strings.Contains(s, "port_right_created") {
			if !strings.Contains(s, "  worker ") || !strings.Contains(s, "right_type=send") {
				t.Errorf("trail tail -f printed %q, want timeline lines", s)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("trail tail -f printed nothing in 10s: %q, %q", out.String(), errb.String())
		}
	}
}

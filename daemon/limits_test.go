package daemon_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/daemon"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
)

// TestOversizedFieldsAreBounded: a worker sends strings far over the
// bounds. The checkpoint's refusal is recorded with the type bounded
// (truncated, with its length and digest), the other requests are refused
// before anything is recorded, and the trail still exports and verifies.
func TestOversizedFieldsAreBounded(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	created := directedWorker(t, ctx, coord)
	nc := natsConn(t, d.URL, created.Token)
	call := func(op, body string) string {
		t.Helper()
		m, err := nc.Request("wacp.v1.agent."+created.Workspace.ID+"."+op, []byte(body), 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		return m.Header.Get("Nats-Service-Error")
	}
	huge := strings.Repeat("T", 1_000_000)
	for range 5 {
		if code := call("checkpoint", `{"type":"`+huge+`","intent":"x","status":"final","confidence":"high"}`); code != "invalid_type" {
			t.Fatalf("a checkpoint with a 1 MB type = %q, want invalid_type", code)
		}
	}
	before, err := coord.ReadTrail(ctx, client.TrailQuery{Workspace: created.Workspace.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ op, body string }{
		{"envelope", `{"to":"` + coord.Workspace() + `","type":"query","payload":{"content":"q"},"in_reply_to":"` + huge + `"}`},
		{"signal", `{"type":"blocked","reason":"` + huge + `"}`},
		{"workspace.get", `{"id":"` + huge + `"}`},
	} {
		if code := call(tt.op, tt.body); code != "invalid_structure" {
			t.Errorf("%s with a 1 MB string = %q, want invalid_structure", tt.op, code)
		}
	}
	after, err := coord.ReadTrail(ctx, client.TrailQuery{Workspace: created.Workspace.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Entries) != len(before.Entries) {
		t.Errorf("the refused requests wrote %d entries, want none", len(after.Entries)-len(before.Entries))
	}
	rejected, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: trail.EventCheckpointRejected})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected.Entries) != 5 {
		t.Fatalf("%d checkpoint_rejected entries, want 5", len(rejected.Entries))
	}
	for _, e := range rejected.Entries {
		var b struct {
			Type string `json:"type"`
		}
		json.Unmarshal(e.Body, &b)
		if len(b.Type) > 200 || !strings.HasPrefix(b.Type, "TTTT") || !strings.Contains(b.Type, "(1000000 bytes, blake3:") {
			t.Errorf("checkpoint_rejected records type %.120q (%d bytes), want it bounded with its length and digest", b.Type, len(b.Type))
		}
	}
	var bundle bytes.Buffer
	th, err := coord.Export(ctx, &bundle)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	rep, err := auditor.Verify(&bundle)
	if err != nil || !rep.OK || uint64(rep.Entries) != th.Size {
		t.Errorf("the exported bundle verifies = %+v, %v; want ok with %d entries", rep, err, th.Size)
	}
}

// TestListsPage: every list endpoint pages by bytes as well as by count,
// with a next cursor the client follows, so the client still gets
// everything. The page budget is made small here (a test seam) so that a
// few items fill a page.
func TestListsPage(t *testing.T) {
	ctx := clientCtx(t)
	const budget = 8 << 10
	d := daemontest.Start(t, daemon.WithPageBytes(daemon.Config{}, budget))
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	created := directedWorker(t, ctx, coord)
	wc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: created.Token, Workspace: created.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	var parent *string
	for i := range n {
		cp, err := wc.CreateCheckpoint(ctx, client.CheckpointRequest{
			Type: taxonomy.CheckpointArtifact, Intent: fmt.Sprint(i), Parent: parent,
			Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceHigh,
			Payload: checkpointchain.Payload{Content: strings.Repeat("c", 3000)},
		})
		if err != nil {
			t.Fatal(err)
		}
		parent = &cp.ID
	}
	const m = 40 // about 400 bytes each
	for range m {
		if _, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker}); err != nil {
			t.Fatal(err)
		}
	}
	nc := natsConn(t, d.URL, d.AdminToken)
	raw := func(subject, body string, v any) int {
		t.Helper()
		m, err := nc.Request(subject, []byte(body), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if code := m.Header.Get("Nats-Service-Error"); code != "" {
			t.Fatalf("%s = %s: %s", subject, code, m.Data)
		}
		if err := json.Unmarshal(m.Data, v); err != nil {
			t.Fatal(err)
		}
		return len(m.Data)
	}
	agent := "wacp.v1.agent." + coord.Workspace() + "."
	var cps struct {
		Checkpoints []json.RawMessage `json:"checkpoints"`
		Next        *string           `json:"next"`
	}
	size := raw(agent+"checkpoint.list", `{"workspace":"`+created.Workspace.ID+`"}`, &cps)
	if len(cps.Checkpoints) >= n || cps.Next == nil || size > 2*budget {
		t.Errorf("checkpoint.list page: %d checkpoints, %d bytes, next %v; want fewer than %d, a next, about %d bytes", len(cps.Checkpoints), size, cps.Next, n, budget)
	}
	var wss struct {
		Workspaces []json.RawMessage `json:"workspaces"`
		Next       *string           `json:"next"`
	}
	size = raw(agent+"workspace.list", `{}`, &wss)
	if len(wss.Workspaces) >= m || wss.Next == nil || size > 2*budget {
		t.Errorf("workspace.list page: %d workspaces, %d bytes, next %v; want fewer than %d, a next", len(wss.Workspaces), size, wss.Next, m)
	}
	var page struct {
		Entries []json.RawMessage `json:"entries"`
		Next    *string           `json:"next"`
	}
	size = raw("wacp.v1.audit.trail.read", `{"limit":1000}`, &page)
	if len(page.Entries) >= 100 || page.Next == nil || size > 2*budget {
		t.Errorf("audit.trail.read page: %d entries, %d bytes, next %v; want a short page and a next", len(page.Entries), size, page.Next)
	}

	all, err := coord.ListCheckpoints(ctx, created.Workspace.ID, "", 0)
	if err != nil || len(all) != n {
		t.Errorf("client ListCheckpoints = %d, %v; want all %d", len(all), err, n)
	}
	some, err := coord.ListCheckpoints(ctx, created.Workspace.ID, "", 5)
	if err != nil || len(some) != 5 {
		t.Errorf("client ListCheckpoints(limit 5) = %d, %v; want 5", len(some), err)
	}
	ws, err := coord.ListWorkspaces(ctx, "", "")
	if err != nil || len(ws) != m+2 { // the root, the worker and m more
		t.Errorf("client ListWorkspaces = %d, %v; want %d", len(ws), err, m+2)
	}
	var bundle bytes.Buffer
	th, err := coord.Export(ctx, &bundle)
	if err != nil {
		t.Fatalf("Export over short pages: %v", err)
	}
	if rep, err := auditor.Verify(&bundle); err != nil || !rep.OK || uint64(rep.Entries) != th.Size {
		t.Errorf("the exported bundle verifies = %+v, %v; want ok with %d entries", rep, err, th.Size)
	}
}

// TestReplyTooLarge: a reply over the server's max payload is answered
// too_large, never left unanswered. Only a page budget beyond the max
// payload (a test seam) lets a list reply grow that large.
func TestReplyTooLarge(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.WithPageBytes(daemon.Config{}, 64<<20))
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	created := directedWorker(t, ctx, coord)
	wc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: created.Token, Workspace: created.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	var parent *string
	for i := range 6 { // 6 × 900 kB: over the 4 MiB max payload
		cp, err := wc.CreateCheckpoint(ctx, client.CheckpointRequest{
			Type: taxonomy.CheckpointArtifact, Intent: fmt.Sprint(i), Parent: parent,
			Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceHigh,
			Payload: checkpointchain.Payload{Content: strings.Repeat("c", 900_000)},
		})
		if err != nil {
			t.Fatal(err)
		}
		parent = &cp.ID
	}
	nc := natsConn(t, d.URL, created.Token)
	m, err := nc.Request("wacp.v1.agent."+created.Workspace.ID+".checkpoint.list", []byte(`{}`), 10*time.Second)
	if err != nil {
		t.Fatalf("checkpoint.list of 5.4 MB = %v, want a too_large reply", err)
	}
	if code := m.Header.Get("Nats-Service-Error"); code != "too_large" || !strings.Contains(string(m.Data), "reply too large") {
		t.Errorf("checkpoint.list of 5.4 MB = %q %s, want too_large, reply too large", code, m.Data)
	}
}

// TestCheckpointNotUTF8IsRecorded: every refusal of a checkpoint writes
// checkpoint_rejected (Checkpoint spec §8), a body that is not UTF-8
// included; the invalid bytes are not recorded.
func TestCheckpointNotUTF8IsRecorded(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	created := directedWorker(t, ctx, coord)
	nc := natsConn(t, d.URL, created.Token)
	body := []byte("{\"type\":\"artifact\",\"intent\":\"bad \xff\xfe bytes\",\"status\":\"final\",\"confidence\":\"high\"}")
	m, err := nc.Request("wacp.v1.agent."+created.Workspace.ID+".checkpoint", body, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := m.Header.Get("Nats-Service-Error"); code != "invalid_structure" {
		t.Fatalf("a checkpoint that is not UTF-8 = %q, want invalid_structure", code)
	}
	page, err := coord.ReadTrail(ctx, client.TrailQuery{Workspace: created.Workspace.ID, EventType: trail.EventCheckpointRejected})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 {
		t.Fatalf("%d checkpoint_rejected entries, want 1", len(page.Entries))
	}
	var b struct {
		Reason string `json:"reason"`
	}
	json.Unmarshal(page.Entries[0].Body, &b)
	if b.Reason != "invalid_structure" || bytes.Contains(page.Entries[0].Body, []byte("bad")) {
		t.Errorf("checkpoint_rejected body %s, want reason invalid_structure and nothing of the body", page.Entries[0].Body)
	}
}

// TestStrictKeys: keys match exactly and appear once. Case variants of known
// keys and duplicate keys are refused invalid_structure and change nothing
// (a checkpoint's refusal is recorded as checkpoint_rejected, as every
// checkpoint refusal is): no auditor token minted, no workspace created,
// no checkpoint stored as final.
func TestStrictKeys(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	created := directedWorker(t, ctx, coord)
	admin, worker := natsConn(t, d.URL, d.AdminToken), natsConn(t, d.URL, created.Token)
	rootSubj, wSubj := "wacp.v1.agent."+coord.Workspace()+".", "wacp.v1.agent."+created.Workspace.ID+"."
	tests := []struct {
		name    string
		nc      *nats.Conn
		subject string
		body    string
	}{
		{"token.create in capitals", admin, rootSubj + "token.create", `{"KIND":"auditor","NAME":"casey"}`},
		{"token.create with a duplicate name", admin, rootSubj + "token.create", `{"kind":"auditor","name":"a","name":"casey"}`},
		{"workspace.create in capitals", admin, rootSubj + "workspace.create", `{"ROLE":"worker"}`},
		{"workspace.create nested capitals", admin, rootSubj + "workspace.create", `{"role":"worker","budget":{"COST_LIMIT":5}}`},
		{"checkpoint in capitals", worker, wSubj + "checkpoint", `{"TYPE":"artifact","INTENT":"x","status":"final","confidence":"high"}`},
		{"checkpoint with a duplicate status", worker, wSubj + "checkpoint", `{"type":"artifact","intent":"x","status":"provisional","status":"final","confidence":"high"}`},
		{"checkpoint with a duplicate payload key", worker, wSubj + "checkpoint", `{"type":"artifact","intent":"x","status":"final","confidence":"high","payload":{"content":"a","content":"b"}}`},
		{"envelope in capitals", admin, rootSubj + "envelope", `{"TO":"` + created.Workspace.ID + `","type":"feedback"}`},
		{"signal with a duplicate type", worker, wSubj + "signal", `{"type":"started","type":"complete"}`},
	}
	before, err := coord.ListWorkspaces(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		m, err := tt.nc.Request(tt.subject, []byte(tt.body), 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if code := m.Header.Get("Nats-Service-Error"); code != "invalid_structure" {
			t.Errorf("%s = %q %s, want invalid_structure", tt.name, code, m.Data)
		}
	}
	if users, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: "user_created"}); err != nil || len(users.Entries) != 0 {
		t.Errorf("user_created entries = %d, %v; want none: a token was minted", len(users.Entries), err)
	}
	if after, err := coord.ListWorkspaces(ctx, "", ""); err != nil || len(after) != len(before) {
		t.Errorf("workspaces %d -> %d, %v: one was created", len(before), len(after), err)
	}
	if cps, err := coord.ListCheckpoints(ctx, created.Workspace.ID, "", 0); err != nil || len(cps) != 0 {
		t.Errorf("checkpoints = %d, %v; want none", len(cps), err)
	}
	if rj, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: trail.EventCheckpointRejected}); err != nil || len(rj.Entries) != 3 {
		t.Errorf("checkpoint_rejected entries = %d, %v; want 3", len(rj.Entries), err)
	}
	if w, err := coord.GetWorkspace(ctx, created.Workspace.ID); err != nil || w.State != "active" {
		t.Errorf("the worker after a duplicate signal type = %+v, %v; want active", w, err)
	}
}

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The MCP server (issue 18): the SDK's client against "wacp mcp" over
// stdio and against the daemon's /mcp over streamable HTTP.

var mcpTools = []string{"carp_approval", "carp_execute", "carp_resolve", "carp_respond", "carp_validate", "checkpoint_create",
	"checkpoint_get", "checkpoint_head", "checkpoint_list", "inbox_ack", "inbox_next", "signal_emit", "task_get"}

// mcpCall calls tool with args and returns its result, failing on a
// protocol error.
func mcpCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error: %v", tool, err)
	}
	return res
}

// mcpOK is mcpCall that fails on a refusal and decodes the structured
// content into v.
func mcpOK(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args, v any) *mcp.CallToolResult {
	t.Helper()
	res := mcpCall(t, ctx, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v) refused: %s", tool, args, mcpText(res))
	}
	if v != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: structured content %s: %v", tool, b, err)
		}
	}
	return res
}

// mcpText returns a result's text contents, one a line.
func mcpText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// mustContain fails unless s holds every one of want.
func mustContain(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, s)
		}
	}
}

// toolNames returns the sorted names of cs's tools.
func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// stdioSession runs "wacp mcp" as the agent of created and connects the
// SDK's client to it.
func stdioSession(t *testing.T, ctx context.Context, url string, created client.Created, stderr io.Writer) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin.wacp, "-url", url, "-token", created.Token, "-ws", created.Workspace.ID, "mcp")
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to wacp mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// bearerTransport adds a Bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects the SDK's client to endpoint with token.
func httpSession(ctx context.Context, endpoint, token string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
}

// mcpEndpoint returns the /mcp URL of the daemon on dir.
func mcpEndpoint(t *testing.T, dir string) string {
	t.Helper()
	var info wire.DaemonFile
	b, _ := os.ReadFile(filepath.Join(dir, "wacpd.json"))
	if err := json.Unmarshal(b, &info); err != nil || info.HTTPURL == "" {
		t.Fatalf("wacpd.json: %s", b)
	}
	return info.HTTPURL + "/mcp"
}

// TestMCPWorkerSession is issue 18's acceptance test: a full worker
// session through MCP alone, the SDK's client driving the real "wacp mcp"
// over stdio as the worker's agent: resolve, execute ticket.get through
// the example tool service, a refused checkpoint (isError with the wire
// code), two checkpoints, complete. From outside, the
// coordinator sees the tool run the execution, both checkpoints in the
// worker's chain, the complete signal and the workspace integrating; the
// resources show the workspace, the chain, a checkpoint and the trail.
func TestMCPWorkerSession(t *testing.T) {
	ctx := ctxT(t)
	rig := startToolRig(t, ctx, t.TempDir(), "answer ticket T-1", "-atlas", filepath.Join("..", "examples", "atlas", "acme-support.json"))
	coord, ws := rig.coord, rig.worker.Workspace.ID
	signals := make(chan signal.Signal, 16)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go coord.Watch(wctx, client.WatchOptions{DeliverAll: true}, func(s signal.Signal) error { signals <- s; return nil })

	var stderr bytes.Buffer
	cs := stdioSession(t, ctx, rig.d.url, rig.worker, &stderr)
	if got := toolNames(t, ctx, cs); !slices.Equal(got, mcpTools) {
		t.Fatalf("tools/list = %v, want %v", got, mcpTools)
	}

	// The directive, as an LLM agent would read it first.
	var env struct {
		ID      string `json:"id"`
		Payload struct {
			Content string `json:"content"`
		} `json:"payload"`
	}
	mcpOK(t, ctx, cs, "inbox_next", map[string]any{}, &env)
	if env.Payload.Content != "answer ticket T-1" {
		t.Fatalf("inbox_next = %+v", env)
	}

	// Resolve and execute with only what an LLM knows: the envelope's
	// members are filled in.
	var res struct {
		ResolutionID   string `json:"resolution_id"`
		AllowedActions []struct {
			ActionID string `json:"action_id"`
		} `json:"allowed_actions"`
	}
	mcpOK(t, ctx, cs, "carp_resolve", map[string]any{"task": map[string]any{"goal": "answer ticket T-1"}}, &res)
	if res.ResolutionID == "" || !slices.ContainsFunc(res.AllowedActions, func(a struct {
		ActionID string `json:"action_id"`
	}) bool {
		return a.ActionID == "ticket.get"
	}) {
		t.Fatalf("carp_resolve = %+v", res)
	}
	var ran struct {
		ExecutionID string `json:"execution_id"`
		Status      string `json:"status"`
		Result      struct {
			Output json.RawMessage `json:"output"`
		} `json:"result"`
	}
	mcpOK(t, ctx, cs, "carp_execute", map[string]any{"action": map[string]any{"action_id": "ticket.get", "action_type": "ticket.get",
		"parameters": map[string]any{"ticket_id": "T-1"}, "resolution_id": res.ResolutionID}}, &ran)
	if ran.Status != "success" || !bytes.Contains(ran.Result.Output, []byte("T-1")) {
		t.Fatalf("carp_execute = %+v", ran)
	}
	select {
	case got := <-rig.tool.reqs:
		if got != ran.ExecutionID {
			t.Fatalf("the tool ran %s, want %s", got, ran.ExecutionID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool service never got the execution")
	}

	// A refusal through wacp mcp: isError, the wire code, the daemon's body.
	res0 := mcpCall(t, ctx, cs, "checkpoint_create", map[string]any{"type": "artifact", "intent": "x", "status": "final", "confidence": "high", "parent": "01NOTTHEHEAD"})
	if b, _ := json.Marshal(res0.StructuredContent); !res0.IsError || !strings.HasPrefix(mcpText(res0), wire.CodeInvalidParent+": ") ||
		!strings.Contains(string(b), `"code":"invalid_parent"`) {
		t.Fatalf("a checkpoint on a wrong parent over stdio: %s / %s", mcpText(res0), b)
	}

	// Two checkpoints and complete.
	var cp1, cp2 struct {
		ID     string `json:"id"`
		Digest string `json:"digest"`
	}
	mcpOK(t, ctx, cs, "checkpoint_create", map[string]any{"type": "artifact", "intent": "read ticket T-1", "status": "provisional",
		"confidence": "medium", "parent": nil, "payload": map[string]any{"files_changed": []string{}, "content": string(ran.Result.Output), "artifacts": []string{}}}, &cp1)
	var head struct {
		ID string `json:"id"`
	}
	mcpOK(t, ctx, cs, "checkpoint_head", map[string]any{}, &head)
	if head.ID != cp1.ID {
		t.Fatalf("checkpoint_head = %s, want %s", head.ID, cp1.ID)
	}
	mcpOK(t, ctx, cs, "checkpoint_create", map[string]any{"type": "artifact", "intent": "answer for ticket T-1", "status": "final",
		"confidence": "high", "parent": head.ID, "payload": map[string]any{"files_changed": []string{}, "content": "T-1 is answered", "artifacts": []string{}}}, &cp2)
	mcpOK(t, ctx, cs, "signal_emit", map[string]any{"type": "complete"}, nil)

	// From outside.
	cps, err := coord.ListCheckpoints(ctx, ws, "", 0)
	if err != nil || len(cps) != 2 || cps[0].ID != cp1.ID || cps[1].ID != cp2.ID || cps[1].Parent == nil || *cps[1].Parent != cp1.ID ||
		cps[1].Digest.String() != cp2.Digest {
		t.Fatalf("the worker's chain seen by the coordinator: %+v %v", cps, err)
	}
	w, err := coord.GetWorkspace(ctx, ws)
	if err != nil || w.State != workspace.Integrating {
		t.Fatalf("the worker after complete: %+v %v", w, err)
	}
	for done := false; !done; {
		select {
		case s := <-signals:
			done = s.From == ws && s.Type == taxonomy.SignalComplete
		case <-time.After(10 * time.Second):
			t.Fatal("the coordinator never got the complete signal")
		}
	}

	// Resources.
	read := func(uri string) string {
		t.Helper()
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(r.Contents) != 1 {
			t.Fatalf("read %s: %+v %v", uri, r, err)
		}
		return r.Contents[0].Text
	}
	mustContain(t, "wacp://workspace", read("wacp://workspace"), `"id":"`+ws+`"`, `"state":"integrating"`)
	mustContain(t, "wacp://chain", read("wacp://chain"), cp1.ID, cp2.ID)
	mustContain(t, "wacp://checkpoint/{id}", read("wacp://checkpoint/"+cp2.ID), `"intent":"answer for ticket T-1"`)
	mustContain(t, "wacp://trail", read("wacp://trail"), `"event_type":"checkpoint_created"`, cp2.ID)
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "wacp://checkpoint/01NOSUCHCHECKPOINT"}); err == nil {
		t.Error("an unknown checkpoint read without an error")
	}
	if err := cs.Close(); err != nil {
		t.Errorf("wacp mcp at the end of the session: %v\n%s", err, stderr.String())
	}
}

// TestMCPOverHTTP: /mcp on the daemon's -http listener, with the SDK's
// streamable HTTP client. A worker's token lists the tools and acts as
// the worker; a refusal is a tool result with isError and the wire code;
// a missing or unknown token is refused 401, a user's 403, each with a
// wire error body; a second worker's token cannot use the first's
// session (the SDK's 403), though the first's can; an execute held for
// approval and carp_approval say to wait and with which id.
func TestMCPOverHTTP(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	rig := startToolRig(t, ctx, dir, "clean up tickets", "-atlas", filepath.Join("..", "examples", "atlas", "acme-support.json"), "-http", "127.0.0.1:0")
	endpoint := mcpEndpoint(t, dir)
	coord, worker := rig.coord, rig.worker
	other, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}

	cs, err := httpSession(ctx, endpoint, worker.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := toolNames(t, ctx, cs); !slices.Equal(got, mcpTools) {
		t.Fatalf("tools/list = %v, want %v", got, mcpTools)
	}

	// A refusal: isError, "CODE: message", the error body.
	res := mcpCall(t, ctx, cs, "checkpoint_create", map[string]any{"type": "artifact", "intent": "x", "status": "final", "confidence": "high", "parent": "01NOTTHEHEAD"})
	var body wire.ErrorBody
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || !strings.HasPrefix(mcpText(res), wire.CodeInvalidParent+": ") || json.Unmarshal(b, &body) != nil || body.Error.Code != wire.CodeInvalidParent {
		t.Fatalf("a checkpoint on a wrong parent: %+v, %s", res, b)
	}
	// The session acts as the worker.
	var cp struct {
		ID string `json:"id"`
	}
	mcpOK(t, ctx, cs, "checkpoint_create", map[string]any{"type": "artifact", "intent": "first", "status": "provisional", "confidence": "low", "parent": nil}, &cp)
	if cps, err := coord.ListCheckpoints(ctx, worker.Workspace.ID, "", 0); err != nil || len(cps) != 1 || cps[0].ID != cp.ID {
		t.Fatalf("the worker's chain: %+v %v", cps, err)
	}

	// An execute held for an operator's approval, visible in the results.
	var rsl struct {
		ResolutionID string `json:"resolution_id"`
	}
	mcpOK(t, ctx, cs, "carp_resolve", map[string]any{"task": map[string]any{"goal": "delete the spam tickets"}}, &rsl)
	var held struct {
		Status   string `json:"status"`
		Approval struct {
			ApprovalID string `json:"approval_id"`
		} `json:"approval"`
	}
	res = mcpOK(t, ctx, cs, "carp_execute", map[string]any{"action": map[string]any{"action_id": "ticket.delete", "action_type": "ticket.delete",
		"parameters": map[string]any{"ticket_id": "T-1"}, "resolution_id": rsl.ResolutionID}}, &held)
	id := held.Approval.ApprovalID
	if held.Status != "pending_approval" || id == "" {
		t.Fatalf("ticket.delete: %+v", held)
	}
	mustContain(t, "the held execute's result", mcpText(res), "held for an operator's approval", "carp_approval", `"approval_id": "`+id+`"`)
	res = mcpOK(t, ctx, cs, "carp_approval", map[string]any{"approval_id": id, "wait": "0s"}, nil)
	mustContain(t, "carp_approval's result", mcpText(res), `approval "`+id+`" is still pending`)

	// Tokens.
	post := func(token, session string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	userTok, err := coord.CreateToken(ctx, "user", "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"no token", "", 401, wire.CodeUnauthorized},
		{"an unknown token", "not-a-token", 401, wire.CodeUnauthorized},
		{"a user token", userTok, 403, wire.CodePermissionDenied},
	} {
		status, b := post(tt.token, "")
		var body wire.ErrorBody
		if status != tt.status || json.Unmarshal([]byte(b), &body) != nil || body.Error.Code != tt.code {
			t.Errorf("%s: %d %s, want %d with code %s", tt.name, status, b, tt.status, tt.code)
		}
	}
	if _, err := httpSession(ctx, endpoint, "not-a-token"); err == nil {
		t.Error("the SDK's client connected with an unknown token")
	}

	// The session belongs to the worker.
	if status, b := post(other.Token, cs.ID()); status != http.StatusForbidden {
		t.Errorf("another worker's token on the session: %d %s, want 403", status, b)
	}
	if status, b := post(worker.Token, cs.ID()); status != http.StatusOK || !strings.Contains(b, "carp_resolve") {
		t.Errorf("the worker's own token on its session: %d %s", status, b)
	}
	// The other worker's own session acts as it: its chain, not the first's.
	cs2, err := httpSession(ctx, endpoint, other.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	var ws struct {
		ID string `json:"id"`
	}
	r, err := cs2.ReadResource(ctx, &mcp.ReadResourceParams{URI: "wacp://workspace"})
	if err != nil || json.Unmarshal([]byte(r.Contents[0].Text), &ws) != nil || ws.ID != other.Workspace.ID {
		t.Fatalf("wacp://workspace of the second session: %+v %v", r, err)
	}
}

// TestMCPSteward: a blocking steward checkpoint is visible to an agent on
// /mcp: the resolution says to answer it with carp_respond, naming the
// checkpoint and its questions; an execute is refused CHECKPOINT_REQUIRED
// with the same instruction; the answers pass through carp_respond and
// the execute then runs.
func TestMCPSteward(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	atlasFile := filepath.Join(dir, "onboarding.json")
	if err := os.WriteFile(atlasFile, []byte(onboardingAtlas), 0o600); err != nil {
		t.Fatal(err)
	}
	rig := startToolRig(t, ctx, filepath.Join(dir, "data"), "answer tickets", "-atlas", atlasFile, "-http", "127.0.0.1:0")
	cs, err := httpSession(ctx, mcpEndpoint(t, filepath.Join(dir, "data")), rig.worker.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	var res struct {
		ResolutionID string `json:"resolution_id"`
	}
	r := mcpOK(t, ctx, cs, "carp_resolve", map[string]any{"task": map[string]any{"goal": "answer ticket T-1"}}, &res)
	mustContain(t, "the resolution's result", mcpText(r), `steward checkpoint "onboarding"`, "is pending", "carp_respond",
		`"checkpoint_id": "onboarding"`, `"agree-terms"`, `"purpose"`)
	execReq := map[string]any{"action": map[string]any{"action_id": "ticket.get", "action_type": "ticket.get",
		"parameters": map[string]any{"ticket_id": "T-1"}, "resolution_id": res.ResolutionID}}
	r = mcpCall(t, ctx, cs, "carp_execute", execReq)
	if !r.IsError || !strings.HasPrefix(mcpText(r), "CHECKPOINT_REQUIRED: ") {
		t.Fatalf("execute while onboarding is pending: %s", mcpText(r))
	}
	mustContain(t, "the CHECKPOINT_REQUIRED result", mcpText(r), "carp_respond", `"onboarding"`, `"agree-terms"`, "Then call carp_execute again")

	r = mcpCall(t, ctx, cs, "carp_respond", map[string]any{"checkpoint_response": map[string]any{"checkpoint_id": "onboarding",
		"answers": map[string]any{"agree-terms": false, "purpose": "I will hack the system"}}})
	if !r.IsError || !strings.HasPrefix(mcpText(r), "CONSTRAINT_VIOLATED: ") {
		t.Fatalf("wrong answers: %s", mcpText(r))
	}
	mustContain(t, "the wrong answers' result", mcpText(r), `"onboarding" again with carp_respond`)
	mcpOK(t, ctx, cs, "carp_respond", map[string]any{"checkpoint_response": map[string]any{"checkpoint_id": "onboarding",
		"answers": map[string]any{"agree-terms": true, "purpose": "answer the customers' tickets"}}}, nil)
	mcpOK(t, ctx, cs, "carp_resolve", map[string]any{"task": map[string]any{"goal": "answer ticket T-1"}}, &res)
	execReq["action"].(map[string]any)["resolution_id"] = res.ResolutionID
	var ran struct {
		Status string `json:"status"`
	}
	if mcpOK(t, ctx, cs, "carp_execute", execReq, &ran); ran.Status != "success" {
		t.Fatalf("execute after the answers: %+v", ran)
	}
	select {
	case <-rig.tool.reqs:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool service never got the execution")
	}
}

// TestMCPStopsPromptly: a host's open session, with its standalone SSE
// stream (GET /mcp) open as hosts keep it, does not hold the daemon's
// shutdown: SIGTERM ends the stream and wacpd exits well before the HTTP
// server's 5 s grace period.
func TestMCPStopsPromptly(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	d := startDaemon(t, dir, "-http", "127.0.0.1:0")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: mcpEndpoint(t, dir), HTTPClient: &http.Client{Transport: bearerTransport{d.admin}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	toolNames(t, ctx, cs) // the session is up; the client has opened its GET stream after initialize
	start := time.Now()
	d.stop()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("wacpd took %v to stop with an MCP session open, want well under the 5 s grace period", took)
	}
}

package daemon_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/trace"
	"github.com/wacpd/wacpd/wire"
)

// toolService is a tool service of the test: ticket.get answers at once,
// ticket.comment when the test releases it.
type toolService struct {
	got     chan carp.ToolRequest // every request, as it arrives
	release chan struct{}         // lets ticket.comment answer
}

func startTool(t *testing.T, url, token string) *toolService {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ts := &toolService{got: make(chan carp.ToolRequest, 16), release: make(chan struct{})}
	svc, err := micro.AddService(nc, micro.Config{Name: "test-tools", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop() })
	answer := func(r micro.Request, status string, out string) {
		b, _ := json.Marshal(carp.ToolReply{Status: status, Output: json.RawMessage(out)})
		r.Respond(b)
	}
	add := func(action string, h func(micro.Request, carp.ToolRequest)) {
		err := svc.AddEndpoint(strings.ReplaceAll(action, ".", "_"), micro.HandlerFunc(func(r micro.Request) {
			var tr carp.ToolRequest
			if err := json.Unmarshal(r.Data(), &tr); err != nil {
				answer(r, carp.StatusFailed, `null`)
				return
			}
			ts.got <- tr
			h(r, tr)
		}), micro.WithEndpointSubject(carp.ToolSubject(action)))
		if err != nil {
			t.Fatal(err)
		}
	}
	add("ticket.get", func(r micro.Request, tr carp.ToolRequest) {
		answer(r, carp.StatusSuccess, `{"ticket_id":"`+tr.Parameters["ticket_id"].(string)+`","status":"open"}`)
	})
	add("ticket.comment", func(r micro.Request, tr carp.ToolRequest) {
		go func() {
			<-ts.release
			answer(r, carp.StatusSuccess, `{"commented":true}`)
		}()
	})
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ts
}

// acmeWithoutCheckpoints writes the seed atlas (atlas/testdata/acme.json)
// without its steward checkpoints to a file of the test and returns its
// path: the tests of resolve and execute do not answer its onboarding
// (the steward tests do).
func acmeWithoutCheckpoints(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "atlas", "testdata", "acme.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "checkpoints")
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "acme.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func carpRequest(t *testing.T, a *client.Client, agent, op string, mod func(*carp.Request)) carp.Request {
	t.Helper()
	r := a.NewCarpRequest(op, agent)
	if op == carp.OpResolve {
		r.Task = &carp.Task{Goal: "answer ticket T-1"}
	}
	if mod != nil {
		mod(&r)
	}
	return r
}

// TestCarpOverNATSAndHTTP: the whole path with a real tool service on
// the embedded server: a tool token; resolve, execute (forwarded to the
// tool, the result with the output's SHA-256) and validate over NATS;
// a tool that answers after the timeout (timeout, then its late answer
// recorded); an action no tool serves (SERVICE_UNAVAILABLE, quickly); the
// same over HTTP with the seed's headers and error envelope; and the
// session's TRACE read back, chained.
func TestCarpOverNATSAndHTTP(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{AtlasPaths: []string{acmeWithoutCheckpoints(t)}, HTTPAddr: "127.0.0.1:0"})
	coord, err := dialClient(t, ctx, client.Options{DataDir: d.Dir})
	if err != nil {
		t.Fatal(err)
	}
	toolTok, err := coord.CreateToken(ctx, "tool", "acme")
	if err != nil {
		t.Fatal(err)
	}
	tool := startTool(t, d.URL, toolTok)
	w := directedWorker(t, ctx, coord)
	agent, err := dialClient(t, ctx, client.Options{DataDir: d.Dir, Token: w.Token, Workspace: w.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	agentID := w.Workspace.ID
	if w.Workspace.Agent != "" {
		agentID = w.Workspace.Agent
	}

	res, err := agent.CarpResolve(ctx, carpRequest(t, agent, agentID, carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	act := func(id string, params map[string]any) func(*carp.Request) {
		return func(r *carp.Request) {
			r.Action = &carp.ActionSpec{ActionID: id, ActionType: id, ResolutionID: res.ResolutionID, Parameters: params}
		}
	}
	out, err := agent.CarpExecute(ctx, carpRequest(t, agent, agentID, carp.OpExecute, act("ticket.get", map[string]any{"ticket_id": "T-1"})))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != carp.StatusSuccess || out.Result == nil || out.Result.OutputHash != carp.ContentHash(out.Result.Output) ||
		!bytes.Contains(out.Result.Output, []byte(`"T-1"`)) {
		t.Fatalf("execute: %+v", out)
	}
	if got := <-tool.got; got.ExecutionID != out.ExecutionID || got.SessionID != w.Workspace.ID {
		t.Fatalf("the tool got %+v", got)
	}

	// A tool that answers after the timeout.
	slow, err := agent.CarpExecute(ctx, carpRequest(t, agent, agentID, carp.OpExecute, func(r *carp.Request) {
		act("ticket.comment", map[string]any{"ticket_id": "T-1", "body": "hi"})(r)
		r.ExecutionOptions = &carp.ExecutionOptions{TimeoutMS: 300}
	}))
	if err != nil || slow.Status != carp.StatusTimeout {
		t.Fatalf("slow tool: %+v %v", slow, err)
	}
	<-tool.got
	close(tool.release)
	lateSeen := func() bool {
		p, err := agent.Trace(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range p.Events {
			if ev.EventType == carp.TraceActionExecuted && bytes.Contains(ev.Payload, []byte(`"late":true`)) &&
				bytes.Contains(ev.Payload, []byte(slow.ExecutionID)) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(20 * time.Second); !lateSeen(); {
		if time.Now().After(deadline) {
			t.Fatal("the late answer was not recorded")
		}
		time.Sleep(20 * time.Millisecond) // polling the condition itself
	}

	// An action no tool serves.
	start := time.Now()
	none, err := agent.CarpExecute(ctx, carpRequest(t, agent, agentID, carp.OpExecute, act("billing.refund", map[string]any{"amount": 5})))
	if err != nil || none.Status != carp.StatusFailed || none.Error == nil || none.Error.Code != carp.CodeServiceUnavailable {
		t.Fatalf("no tool: %+v %v", none, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("no tool took %s: not answered by no-responders", time.Since(start))
	}

	// A refusal is the seed's error code.
	_, err = agent.CarpExecute(ctx, carpRequest(t, agent, agentID, carp.OpExecute, act("user.ban", map[string]any{})))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != carp.CodeActionNotPermitted || ce.Status != http.StatusForbidden {
		t.Fatalf("a denied action over NATS: %v", err)
	}
	v, err := agent.CarpValidate(ctx, carpRequest(t, agent, agentID, carp.OpValidate, act("ticket.get", map[string]any{"ticket_id": 1})))
	if err != nil || v.Valid {
		t.Fatalf("validate: %+v %v", v, err)
	}

	// HTTP.
	var info wire.DaemonFile
	b, err := os.ReadFile(filepath.Join(d.Dir, daemon.InfoFile))
	if err != nil || json.Unmarshal(b, &info) != nil || info.HTTPURL == "" {
		t.Fatalf("wacpd.json: %s %v", b, err)
	}
	post := func(op, token string, req carp.Request) (*http.Response, []byte) {
		body, _ := json.Marshal(req)
		hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, info.HTTPURL+"/carp/v1/"+op, bytes.NewReader(body))
		hr.Header.Set("Authorization", "bearer "+token) // the scheme is case-insensitive
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		return resp, buf.Bytes()
	}
	rq := carpRequest(t, agent, agentID, carp.OpResolve, nil)
	resp, body := post("resolve", w.Token, rq)
	var hres carp.Resolution
	if resp.StatusCode != 200 || json.Unmarshal(body, &hres) != nil || resp.Header.Get("X-Request-ID") != rq.RequestID ||
		resp.Header.Get("X-Resolution-ID") != hres.ResolutionID || resp.Header.Get("X-Trace-ID") == "" {
		t.Fatalf("HTTP resolve: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	ex := carpRequest(t, agent, agentID, carp.OpExecute, act("ticket.get", map[string]any{"ticket_id": "T-2"}))
	resp, body = post("execute", w.Token, ex)
	var hex carp.ExecutionResult
	if resp.StatusCode != 200 || json.Unmarshal(body, &hex) != nil || hex.Status != carp.StatusSuccess || resp.Header.Get("X-Resolution-ID") != res.ResolutionID {
		t.Fatalf("HTTP execute: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = post("resolve", "wacp_not-a-token", rq)
	var env carp.ErrorResponse
	if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(body, &env) != nil || env.Error.Code != carp.CodeUnauthorized || env.CARPVersion != carp.Version {
		t.Fatalf("HTTP with a bad token: %d %s", resp.StatusCode, body)
	}
	resp, body = post("resolve", w.Token, carpRequest(t, agent, agentID, carp.OpResolve, func(r *carp.Request) { r.CARPVersion = "2.0" }))
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte(carp.CodeInvalidVersion)) {
		t.Fatalf("HTTP with carp_version 2.0: %d %s", resp.StatusCode, body)
	}

	// The session's TRACE, read back: chained.
	p, err := agent.Trace(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if v := trace.Verify(p.Events); v != nil || len(p.Events) < 10 {
		t.Fatalf("the session's TRACE (%d events): %v", len(p.Events), v)
	}
	// An auditor's view: every event, with the log's signed head.
	all, err := coord.AuditTrace(ctx, wire.TraceRequest{})
	if err != nil || all.TreeHead == nil {
		t.Fatalf("audit.trace.read: %v %+v", err, all.TreeHead)
	}
}

// TestToolTokenIsConfined: a tool token may serve actions and nothing
// else: no agent's subjects, no audit, no publishing but answers.
func TestToolTokenIsConfined(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{DataDir: d.Dir})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := coord.CreateToken(ctx, "tool", "t1")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	nc, err := nats.Connect(d.URL, nats.Token(tok), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request(wire.Subject("audit.sth"), []byte("{}"), 2*time.Second); err == nil {
		t.Error("a tool token called audit.sth")
	}
	if _, err := nc.SubscribeSync("wacp.v1.agent.>"); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("subscribe to agents' subjects: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("a tool token subscribed to the agents' subjects")
	}
	if _, err := coord.CreateToken(ctx, "tool", "t2", "create_workspace"); err == nil {
		t.Error("a tool token with capabilities was minted")
	}
}

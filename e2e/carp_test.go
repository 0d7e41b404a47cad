package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trace"
	"github.com/wacpd/wacpd/wire"
)

// toolRig is a daemon started with args, its coordinator's client, the
// example tool service on a tool token, and a worker made active by a
// directive.
type toolRig struct {
	d         *daemon
	coord     *client.Client
	toolToken string
	tool      *toolProc
	worker    client.Created
}

// startToolRig starts a toolRig on data dir dir; directive is the worker's
// first envelope.
func startToolRig(t *testing.T, ctx context.Context, dir, directive string, args ...string) toolRig {
	t.Helper()
	r := toolRig{d: startDaemon(t, dir, args...)}
	var err error
	if r.coord, err = client.Dial(ctx, client.Options{URL: r.d.url, Token: r.d.admin}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.coord.Close() })
	if r.toolToken, err = r.coord.CreateToken(ctx, "tool", "acme"); err != nil {
		t.Fatal(err)
	}
	r.tool = startTool(t, r.d.url, r.toolToken)
	if r.worker, err = r.coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.coord.SendEnvelope(ctx, client.EnvelopeRequest{To: r.worker.Workspace.ID, Type: taxonomy.EnvelopeDirective,
		Payload: envelope.Payload{Content: directive}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// toolProc is a running examples/toolservice.
type toolProc struct {
	cmd  *exec.Cmd
	done chan error
	reqs chan string // the execution ids it logs as it gets them
}

// startTool runs the example tool service with token against url and
// waits for its ready line.
func startTool(t *testing.T, url, token string) *toolProc {
	t.Helper()
	p := &toolProc{cmd: exec.Command(bin.tool, "-nats", url, "-token", token), done: make(chan error, 1), reqs: make(chan string, 16)}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case ready <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, after, ok := strings.Cut(sc.Text(), "execution_id="); ok {
				id, _, _ := strings.Cut(after, " ")
				select {
				case p.reqs <- id:
				default:
				}
			}
		}
	}()
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case line := <-ready:
		if !strings.HasPrefix(line, "ready ") {
			t.Fatalf("the tool service printed %q", line)
		}
	case err := <-p.done:
		t.Fatalf("the tool service exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the tool service is not ready after 30 s")
	}
	return p
}

func (p *toolProc) kill() { p.cmd.Process.Kill(); <-p.done }

// TestCarpEndToEnd: the real wacpd with the sample atlas and the real
// example tool service. An agent resolves and executes over NATS and over
// HTTP; a tool that answers late gives timeout and its answer is recorded
// late; a tool killed mid-call gives timeout; wacpd killed (-9) after an
// execution's intent and before its result reports it, after the restart,
// as not completed, never as success, and the intent is in TRACE.
func TestCarpEndToEnd(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	atlasArgs := []string{"-atlas", filepath.Join("..", "examples", "atlas", "acme-support.json"), "-http", "127.0.0.1:0"}
	rig := startToolRig(t, ctx, dir, "answer tickets", atlasArgs...)
	d, tool, toolTok, created := rig.d, rig.tool, rig.toolToken, rig.worker
	ws, agentID := created.Workspace.ID, created.Workspace.Agent
	dialAgent := func(url string) *client.Client {
		c, err := client.Dial(ctx, client.Options{URL: url, Token: created.Token, Workspace: ws, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	agent := dialAgent(d.url)
	req := func(op string, mod func(*carp.Request)) carp.Request {
		r := agent.NewCarpRequest(op, agentID)
		if op == carp.OpResolve {
			r.Task = &carp.Task{Goal: "answer ticket T-1"}
		}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	res, err := agent.CarpResolve(ctx, req(carp.OpResolve, nil))
	if err != nil {
		t.Fatal(err)
	}
	act := func(id string, params map[string]any, mod func(*carp.Request)) func(*carp.Request) {
		return func(r *carp.Request) {
			r.Action = &carp.ActionSpec{ActionID: id, ActionType: id, ResolutionID: res.ResolutionID, Parameters: params}
			if mod != nil {
				mod(r)
			}
		}
	}

	// Over NATS.
	out, err := agent.CarpExecute(ctx, req(carp.OpExecute, act("ticket.get", map[string]any{"ticket_id": "T-1"}, nil)))
	if err != nil || out.Status != carp.StatusSuccess || out.Result.OutputHash != carp.ContentHash(out.Result.Output) {
		t.Fatalf("execute over NATS: %+v %v", out, err)
	}
	<-tool.reqs

	// Over HTTP.
	var info wire.DaemonFile
	b, _ := os.ReadFile(filepath.Join(dir, "wacpd.json"))
	if err := json.Unmarshal(b, &info); err != nil || info.HTTPURL == "" {
		t.Fatalf("wacpd.json: %s", b)
	}
	body, _ := json.Marshal(req(carp.OpExecute, act("ticket.get", map[string]any{"ticket_id": "T-2"}, nil)))
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, info.HTTPURL+"/carp/v1/execute", bytes.NewReader(body))
	hr.Header.Set("Authorization", "Bearer "+created.Token)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	var hout carp.ExecutionResult
	json.NewDecoder(resp.Body).Decode(&hout)
	resp.Body.Close()
	if resp.StatusCode != 200 || hout.Status != carp.StatusSuccess || resp.Header.Get("X-Resolution-ID") != res.ResolutionID {
		t.Fatalf("execute over HTTP: %d %+v", resp.StatusCode, hout)
	}
	<-tool.reqs

	// A tool that answers late: timeout, then the late answer recorded.
	late, err := agent.CarpExecute(ctx, req(carp.OpExecute, act("ticket.get", map[string]any{"ticket_id": "T-1", "delay_ms": 1500},
		func(r *carp.Request) { r.ExecutionOptions = &carp.ExecutionOptions{TimeoutMS: 300} })))
	if err != nil || late.Status != carp.StatusTimeout {
		t.Fatalf("a late tool: %+v %v", late, err)
	}
	<-tool.reqs
	waitTrace(t, ctx, agent, func(ev trace.Event) bool {
		return ev.EventType == carp.TraceActionExecuted && bytes.Contains(ev.Payload, []byte(late.ExecutionID)) &&
			bytes.Contains(ev.Payload, []byte(`"late":true`))
	})

	// A tool killed mid-call: timeout.
	type result struct {
		r   carp.ExecutionResult
		err error
	}
	got := make(chan result, 1)
	go func() {
		r, err := agent.CarpExecute(ctx, req(carp.OpExecute, act("ticket.get", map[string]any{"ticket_id": "T-1", "delay_ms": 60000},
			func(r *carp.Request) { r.ExecutionOptions = &carp.ExecutionOptions{TimeoutMS: 2000} })))
		got <- result{r, err}
	}()
	<-tool.reqs
	tool.kill()
	if r := <-got; r.err != nil || r.r.Status != carp.StatusTimeout {
		t.Fatalf("a tool killed mid-call: %+v %v", r.r, r.err)
	}

	// wacpd killed between the intent and the result.
	tool = startTool(t, d.url, toolTok)
	cctx, cancelCrash := context.WithCancel(ctx)
	defer cancelCrash()
	go func() {
		r, err := agent.CarpExecute(cctx, req(carp.OpExecute, act("ticket.get", map[string]any{"ticket_id": "T-1", "delay_ms": 60000},
			func(r *carp.Request) { r.IdempotencyKey = "crash-1" })))
		got <- result{r, err}
	}()
	crashed := <-tool.reqs // the tool has it: the intent was committed before the forward
	d.kill()
	tool.kill()
	cancelCrash() // the client would wait for its reply until its timeout
	if r := <-got; r.err == nil {
		t.Fatalf("an execute answered %+v from a killed daemon", r.r)
	}
	d = startDaemon(t, dir, atlasArgs...)
	agent = dialAgent(d.url)
	again, err := agent.CarpExecute(ctx, req(carp.OpExecute, act("ticket.get", map[string]any{"ticket_id": "T-1", "delay_ms": 60000},
		func(r *carp.Request) { r.IdempotencyKey = "crash-1" })))
	if err != nil || again.ExecutionID != crashed || again.Status != carp.StatusFailed || again.Error == nil || again.Error.Details["completed"] != false {
		t.Fatalf("the interrupted execution after the restart: %+v %v", again, err)
	}
	evs := allTrace(t, ctx, agent)
	if v := trace.Verify(evs); v != nil {
		t.Fatalf("the session's TRACE: %v", v)
	}
	var intent, notCompleted, executed bool
	for _, ev := range evs {
		if !bytes.Contains(ev.Payload, []byte(crashed)) {
			continue
		}
		switch ev.EventType {
		case carp.TraceActionApproved:
			intent = true
		case carp.TraceActionFailed:
			notCompleted = bytes.Contains(ev.Payload, []byte(`"completed":false`))
		case carp.TraceActionExecuted:
			executed = true
		}
	}
	if !intent || !notCompleted || executed {
		t.Errorf("TRACE of the interrupted execution: intent %v, not completed %v, executed %v", intent, notCompleted, executed)
	}
	d.stop()
}

func allTrace(t *testing.T, ctx context.Context, c *client.Client) []trace.Event {
	t.Helper()
	var out []trace.Event
	var from uint64
	for {
		p, err := c.Trace(ctx, from, 1000)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Events...)
		if p.Next == nil {
			return out
		}
		from = *p.Next
	}
}

// waitTrace waits until the session has an event that ok accepts.
func waitTrace(t *testing.T, ctx context.Context, c *client.Client, ok func(trace.Event) bool) {
	t.Helper()
	for {
		for _, ev := range allTrace(t, ctx, c) {
			if ok(ev) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("the TRACE event never came")
		case <-time.After(20 * time.Millisecond): // polling the condition itself
		}
	}
}

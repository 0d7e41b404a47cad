package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/atlas/atlasfile"
	"github.com/wacpd/wacpd/carp"
)

const token = "tool-secret"

// natsServer runs a NATS server on a random local port that wants token,
// and returns its URL.
func natsServer(t *testing.T) string {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, Authorization: token})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns.ClientURL()
}

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// service is the tool service running in-process.
type service struct {
	logs *syncBuffer
	stop func() error // cancels run's context and returns what run returned
}

// start runs the service with args and returns once it printed its ready
// line; the test's cleanup stops it (if stop was not called) and checks
// that it stopped cleanly.
func start(t *testing.T, args ...string) *service {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &service{logs: &syncBuffer{}}
	errc := make(chan error, 1)
	go func() {
		err := run(ctx, args, pw, s.logs)
		pw.CloseWithError(errors.Join(err, io.EOF))
		errc <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("run(%v) printed %q, then: %v", args, line, <-errc)
	}
	if line != "ready acme-tools\n" {
		t.Fatalf("run(%v) printed %q, want \"ready acme-tools\\n\"", args, line)
	}
	var once sync.Once
	var runErr error
	s.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-errc:
			case <-time.After(10 * time.Second):
				runErr = errors.New("run did not return within 10s of its context's end")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("run returned %v after its context was cancelled, want nil", err)
		}
	})
	return s
}

func connect(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// toolRequest is a request of action as wacpd sends it.
func toolRequest(exec, action string, params map[string]any) []byte {
	b, err := json.Marshal(carp.ToolRequest{CARPVersion: "1.0", ExecutionID: exec, RequestID: "req-" + exec, ResolutionID: "res-1",
		ActionID: action, ActionType: action, Parameters: params, AgentID: "agent-1", SessionID: "session-1", TraceID: "trace-1", TimeoutMS: 5000})
	if err != nil {
		panic(err)
	}
	return b
}

// call sends data on action's subject and returns the reply, raw and
// decoded.
func call(t *testing.T, nc *nats.Conn, action string, data []byte) ([]byte, carp.ToolReply) {
	t.Helper()
	msg, err := nc.Request(carp.ToolSubject(action), data, 5*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", action, err)
	}
	var r carp.ToolReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		t.Fatalf("reply to %s: %v: %s", action, err, msg.Data)
	}
	return msg.Data, r
}

// TestActions: each action's reply, in order on one store.
func TestActions(t *testing.T) {
	url := natsServer(t)
	svc := start(t, "-nats", url, "-token", token)
	nc := connect(t, url)
	tests := []struct {
		action  string
		params  map[string]any
		status  string
		output  string // for success, the output, compact
		effects []carp.SideEffect
		code    string // for failed, the error code
	}{
		{action: "ticket.get", params: map[string]any{"ticket_id": "T-1"}, status: "success",
			output: `{"ticket_id":"T-1","title":"Printer on fire","status":"open","customer":"c-17","comments":[],"refunded":0}`},
		{action: "ticket.get", params: map[string]any{"ticket_id": "T-9"}, status: "failed", code: codeTicketNotFound},
		{action: "ticket.get", params: map[string]any{}, status: "failed", code: carp.CodeMissingField},
		{action: "ticket.get", params: map[string]any{"ticket_id": 1}, status: "failed", code: carp.CodeInvalidFormat},
		{action: "ticket.list", params: map[string]any{}, status: "success",
			output: `{"tickets":[{"ticket_id":"T-1","title":"Printer on fire","status":"open","customer":"c-17","comments":[],"refunded":0},` +
				`{"ticket_id":"T-2","title":"Invoice sent twice","status":"open","customer":"c-42","comments":[],"refunded":0}]}`},
		{action: "ticket.comment", params: map[string]any{"ticket_id": "T-1", "body": "on it"}, status: "success",
			output: `{"comments":1,"ticket_id":"T-1"}`, effects: []carp.SideEffect{{Type: "ticket_updated", Target: "T-1", Reversible: true}}},
		{action: "ticket.comment", params: map[string]any{"ticket_id": "T-1"}, status: "failed", code: carp.CodeMissingField},
		{action: "ticket.comment", params: map[string]any{"ticket_id": "T-3", "body": "x"}, status: "failed", code: codeTicketNotFound},
		{action: "billing.refund", params: map[string]any{"ticket_id": "T-1", "amount": 25}, status: "success",
			output:  `{"amount":25,"refund_id":"R-1","ticket_id":"T-1"}`,
			effects: []carp.SideEffect{{Type: "refund_issued", Target: "T-1", Details: map[string]any{"refund_id": "R-1", "amount": 25.0}}}},
		{action: "billing.refund", params: map[string]any{"ticket_id": "T-1", "amount": "25"}, status: "failed", code: carp.CodeInvalidFormat},
		{action: "ticket.get", params: map[string]any{"ticket_id": "T-1"}, status: "success",
			output: `{"ticket_id":"T-1","title":"Printer on fire","status":"open","customer":"c-17","comments":["on it"],"refunded":25}`},
		{action: "ticket.delete", params: map[string]any{"ticket_id": "T-2"}, status: "success",
			output: `{"deleted":true,"ticket_id":"T-2"}`, effects: []carp.SideEffect{{Type: "ticket_deleted", Target: "T-2", Reversible: false}}},
		{action: "ticket.delete", params: map[string]any{"ticket_id": "T-2"}, status: "failed", code: codeTicketNotFound},
		{action: "ticket.get", params: map[string]any{"ticket_id": "T-2"}, status: "failed", code: codeTicketNotFound},
	}
	for i, tt := range tests {
		exec := "exec-" + string(rune('a'+i))
		_, r := call(t, nc, tt.action, toolRequest(exec, tt.action, tt.params))
		if r.Status != tt.status {
			t.Fatalf("%d: %s %v: status %s (%+v), want %s", i, tt.action, tt.params, r.Status, r.Error, tt.status)
		}
		if tt.status == "failed" {
			if r.Error == nil || r.Error.Code != tt.code || r.Error.Message == "" || r.Output != nil {
				t.Errorf("%d: %s %v: error %+v, output %s; want code %s and no output", i, tt.action, tt.params, r.Error, r.Output, tt.code)
			}
			continue
		}
		if string(r.Output) != tt.output || r.OutputType != "application/json" || r.Error != nil {
			t.Errorf("%d: %s %v: output %s (%s), error %+v; want %s", i, tt.action, tt.params, r.Output, r.OutputType, r.Error, tt.output)
		}
		if !slices.EqualFunc(r.SideEffects, tt.effects, func(a, b carp.SideEffect) bool {
			return a.Type == b.Type && a.Target == b.Target && a.Reversible == b.Reversible && maps.Equal(a.Details, b.Details)
		}) {
			t.Errorf("%d: %s %v: side effects %+v, want %+v", i, tt.action, tt.params, r.SideEffects, tt.effects)
		}
	}
	if logs := svc.logs.String(); !strings.Contains(logs, "execution_id=exec-a action=ticket.get") {
		t.Errorf("the log does not name the first request:\n%s", logs)
	}
}

// TestStrict: a request that does not decode strictly, or is not one of
// the subject's action, is refused with INVALID_REQUEST.
func TestStrict(t *testing.T) {
	url := natsServer(t)
	start(t, "-nats", url, "-token", token)
	nc := connect(t, url)
	for _, tt := range []struct{ name, data string }{
		{"unknown field", `{"execution_id":"x1","action_id":"ticket.list","parameters":{},"extra":1}`},
		{"field of another case", `{"execution_id":"x2","Action_ID":"ticket.list","parameters":{}}`},
		{"duplicate field", `{"execution_id":"x3","action_id":"ticket.list","action_id":"ticket.list"}`},
		{"wrong type", `{"execution_id":"x4","action_id":"ticket.list","timeout_ms":"soon"}`},
		{"not an object", `["ticket.list"]`},
		{"not JSON", `ticket.list please`},
		{"no execution id", `{"action_id":"ticket.list","parameters":{}}`},
		{"another action", `{"execution_id":"x5","action_id":"ticket.delete","parameters":{"ticket_id":"T-1"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, r := call(t, nc, "ticket.list", []byte(tt.data))
			if r.Status != "failed" || r.Error == nil || r.Error.Code != carp.CodeInvalidRequest {
				t.Errorf("%s = %s, want failed with %s", tt.data, raw, carp.CodeInvalidRequest)
			}
		})
	}
	// The action was not run under a request of another action.
	if _, r := call(t, nc, "ticket.get", toolRequest("x6", "ticket.get", map[string]any{"ticket_id": "T-1"})); r.Status != "success" {
		t.Errorf("T-1 after the refusals: %+v, want it still there", r)
	}
}

// commentCount returns how many comments ticket id has.
func commentCount(t *testing.T, nc *nats.Conn, exec, id string) int {
	t.Helper()
	_, r := call(t, nc, "ticket.get", toolRequest(exec, "ticket.get", map[string]any{"ticket_id": id}))
	var tk ticket
	if err := json.Unmarshal(r.Output, &tk); err != nil {
		t.Fatalf("ticket.get %s = %+v: %v", id, r, err)
	}
	return len(tk.Comments)
}

// TestReplay: an execution id answered before gets the same answer, and
// the action does not run again; another id runs it.
func TestReplay(t *testing.T) {
	url := natsServer(t)
	start(t, "-nats", url, "-token", token)
	nc := connect(t, url)
	comment := toolRequest("e1", "ticket.comment", map[string]any{"ticket_id": "T-1", "body": "once"})
	first, _ := call(t, nc, "ticket.comment", comment)
	again, _ := call(t, nc, "ticket.comment", comment)
	if !bytes.Equal(first, again) {
		t.Errorf("replay = %s, want the first answer %s", again, first)
	}
	// The id decides: other parameters under it get the stored answer.
	other, _ := call(t, nc, "ticket.comment", toolRequest("e1", "ticket.comment", map[string]any{"ticket_id": "T-2", "body": "twice"}))
	if !bytes.Equal(first, other) {
		t.Errorf("replay with other parameters = %s, want the first answer %s", other, first)
	}
	if n := commentCount(t, nc, "g1", "T-1"); n != 1 {
		t.Errorf("T-1 has %d comments after three requests of one execution, want 1", n)
	}
	call(t, nc, "ticket.comment", toolRequest("e2", "ticket.comment", map[string]any{"ticket_id": "T-1", "body": "once"}))
	if n := commentCount(t, nc, "g2", "T-1"); n != 2 {
		t.Errorf("T-1 has %d comments after a second execution, want 2", n)
	}
	// A failed answer is an answer too.
	miss := toolRequest("e3", "ticket.get", map[string]any{"ticket_id": "T-7"})
	a, _ := call(t, nc, "ticket.get", miss)
	b, _ := call(t, nc, "ticket.get", miss)
	if !bytes.Equal(a, b) || !strings.Contains(string(a), codeTicketNotFound) {
		t.Errorf("failed execution replayed = %s then %s, want the same failure", a, b)
	}
}

// TestDelay: delay_ms holds an answer back without holding the service;
// a caller that gave up asks again with the execution id and gets the
// answer, of one execution.
func TestDelay(t *testing.T) {
	url := natsServer(t)
	start(t, "-nats", url, "-token", token)
	nc := connect(t, url)
	slow := toolRequest("d1", "ticket.comment", map[string]any{"ticket_id": "T-2", "body": "slow", "delay_ms": 300})
	if _, err := nc.Request(carp.ToolSubject("ticket.comment"), slow, 20*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("a 300 ms action asked with a 20 ms timeout: %v, want %v", err, nats.ErrTimeout)
	}
	got, r := call(t, nc, "ticket.comment", slow)
	if r.Status != "success" || string(r.Output) != `{"comments":1,"ticket_id":"T-2"}` {
		t.Fatalf("the delayed execution asked again = %s, want its success", got)
	}
	again, _ := call(t, nc, "ticket.comment", slow)
	if !bytes.Equal(got, again) {
		t.Errorf("asked a third time = %s, want %s", again, got)
	}
	if n := commentCount(t, nc, "d2", "T-2"); n != 1 {
		t.Errorf("T-2 has %d comments, want 1", n)
	}
	_, r = call(t, nc, "ticket.get", toolRequest("d3", "ticket.get", map[string]any{"ticket_id": "T-1", "delay_ms": -1}))
	if r.Status != "failed" || r.Error.Code != carp.CodeInvalidFormat {
		t.Errorf("delay_ms -1 = %+v, want failed with %s", r, carp.CodeInvalidFormat)
	}
}

// TestStop: while an answer is delayed the service serves on, on the same
// endpoint; stopping it sends the delayed answer at once and run returns
// nil.
func TestStop(t *testing.T) {
	url := natsServer(t)
	svc := start(t, "-nats", url, "-token", token)
	nc := connect(t, url)
	inbox := nats.NewInbox()
	replies, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	long := toolRequest("s1", "ticket.get", map[string]any{"ticket_id": "T-1", "delay_ms": 3_600_000})
	if err := nc.PublishRequest(carp.ToolSubject("ticket.get"), inbox, long); err != nil {
		t.Fatal(err)
	}
	// Same endpoint, same connection: this one is handled after the
	// delayed one was taken in.
	if _, r := call(t, nc, "ticket.get", toolRequest("s2", "ticket.get", map[string]any{"ticket_id": "T-2"})); r.Status != "success" {
		t.Fatalf("a request behind a delayed one = %+v, want success", r)
	}
	if err := svc.stop(); err != nil {
		t.Fatalf("run = %v after cancel, want nil", err)
	}
	msg, err := replies.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("the delayed answer after stop: %v", err)
	}
	var r carp.ToolReply
	if err := json.Unmarshal(msg.Data, &r); err != nil || r.Status != "success" {
		t.Errorf("the delayed answer = %s (%v), want success", msg.Data, err)
	}
}

// TestFlags: the URL and token come from the environment when no flag
// gives them; a wrong token is refused by the server and run fails.
func TestFlags(t *testing.T) {
	url := natsServer(t)
	t.Setenv("WACP_NATS_URL", url)
	t.Setenv("WACP_TOOL_TOKEN", token)
	start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, []string{"-token", "wrong"}, &out, io.Discard); err == nil || out.Len() != 0 {
		t.Errorf("run with a wrong token = %v, printed %q; want an error and nothing", err, out.String())
	}
	if err := run(ctx, []string{"extra"}, &out, io.Discard); err == nil {
		t.Error("run with an argument = nil, want an error")
	}
}

// TestAtlas: the service serves exactly the actions the sample atlas
// declares.
func TestAtlas(t *testing.T) {
	l, err := atlasfile.Load("../atlas/acme-support.json")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, a := range l.Manifest.Actions {
		declared = append(declared, a.ActionID)
	}
	slices.Sort(declared)
	if served := slices.Sorted(maps.Keys(actions)); !slices.Equal(served, declared) {
		t.Errorf("the service serves %v, the atlas declares %v", served, declared)
	}
}

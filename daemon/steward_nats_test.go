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

	"github.com/wacpd/wacpd/atlas/atlasfile"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/steward"
	"github.com/wacpd/wacpd/wire"
)

// sentimentSubject is where the test's custom checkpoint evaluator
// answers.
const sentimentSubject = "wacp.v1.tool.eval.sentiment"

// moodAtlas has one blocking custom checkpoint whose evaluator is the NATS
// service on sentimentSubject (300 ms to answer), with an acknowledgment
// question, gating the atlas's one action.
const moodAtlas = `{
  "atlas_version": "1.0", "atlas_id": "com.example.mood", "version": "1.0.0", "name": "Mood",
  "checkpoints": [
    {"checkpoint_id": "calm-down", "name": "Calm down", "mode": "blocking",
     "trigger": {"type": "custom", "trigger_id": "sentiment", "subject": "` + sentimentSubject + `", "params": {"threshold": 0.5}},
     "questions": [{"question_id": "polite", "question": "I will stay polite", "response_type": "acknowledgment"}],
     "guidance": {"format": "text", "content": "Stay polite."}}
  ],
  "checkpoint_config": {"budget": {"max_checkpoint_time_ms": 300}},
  "policies": [{"policy_id": "allow-replies", "type": "allow", "actions": ["reply.*"]}],
  "actions": [{"action_id": "reply.send", "name": "Send a reply", "risk_tier": "low", "parameters_schema": {"type": "object"}}]
}`

// writeAtlas writes manifest to a file of the test, checks that it loads,
// and returns its path.
func writeAtlas(t *testing.T, manifest string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "atlas.json")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := atlasfile.Load(path); err != nil {
		t.Fatalf("the test's atlas does not load: %v", err)
	}
	return path
}

// startSentiment serves sentimentSubject with a NATS micro service on a
// tool token: triggered when the goal says "angry", an error reply when
// it says "broken", a late answer when it says "slow". It returns the
// evaluation contexts it was asked about and the service.
func startSentiment(t *testing.T, url, token string) (chan steward.EvalContext, micro.Service) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	svc, err := micro.AddService(nc, micro.Config{Name: "test-evaluators", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop() })
	asked := make(chan steward.EvalContext, 16)
	err = svc.AddEndpoint("sentiment", micro.HandlerFunc(func(r micro.Request) {
		var ec steward.EvalContext
		if err := json.Unmarshal(r.Data(), &ec); err != nil {
			r.Respond([]byte(`{"error":"not an evaluation context"}`))
			return
		}
		asked <- ec
		switch {
		case strings.Contains(ec.Goal, "broken"):
			r.Respond([]byte(`{"error":"the model is down"}`))
		case strings.Contains(ec.Goal, "slow"):
			time.Sleep(1500 * time.Millisecond) // past the atlas's 300 ms
			r.Respond([]byte(`{"triggered":false}`))
		default:
			b, _ := json.Marshal(map[string]bool{"triggered": strings.Contains(ec.Goal, "angry")})
			r.Respond(b)
		}
	}), micro.WithEndpointSubject(sentimentSubject))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return asked, svc
}

// TestStewardCustomEvaluatorOverNATS: a custom steward checkpoint whose
// evaluator is a NATS micro service on a tool token, asked by the daemon
// with the evaluation context: a calm goal triggers nothing, an angry one
// shows the blocking checkpoint pending (its action denied, an execute
// CHECKPOINT_REQUIRED with the checkpoint in the details); an answer that
// does not acknowledge is CONSTRAINT_VIOLATED, one that does passes it
// over HTTP (POST /carp/v1/respond). An evaluator that errs, answers too
// late or is not running fails a blocking checkpoint closed: pending.
func TestStewardCustomEvaluatorOverNATS(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{AtlasPaths: []string{writeAtlas(t, moodAtlas)}, HTTPAddr: "127.0.0.1:0"})
	coord, err := dialClient(t, ctx, client.Options{DataDir: d.Dir})
	if err != nil {
		t.Fatal(err)
	}
	toolTok, err := coord.CreateToken(ctx, "tool", "sentiment")
	if err != nil {
		t.Fatal(err)
	}
	asked, svc := startSentiment(t, d.URL, toolTok)

	// agent returns a fresh session (a directed worker) and its agent id.
	agent := func() (*client.Client, string, string) {
		t.Helper()
		w := directedWorker(t, ctx, coord)
		a, err := dialClient(t, ctx, client.Options{DataDir: d.Dir, Token: w.Token, Workspace: w.Workspace.ID})
		if err != nil {
			t.Fatal(err)
		}
		id := w.Workspace.ID
		if w.Workspace.Agent != "" {
			id = w.Workspace.Agent
		}
		return a, id, w.Token
	}
	resolve := func(a *client.Client, agentID, goal string) carp.Resolution {
		t.Helper()
		res, err := a.CarpResolve(ctx, carpRequest(t, a, agentID, carp.OpResolve, func(r *carp.Request) { r.Task = &carp.Task{Goal: goal} }))
		if err != nil {
			t.Fatalf("resolve %q: %v", goal, err)
		}
		return res
	}
	pending := func(res carp.Resolution) bool {
		return len(res.Checkpoints) == 1 && res.Checkpoints[0].CheckpointID == "calm-down" && res.Checkpoints[0].Status == steward.StatusPending &&
			res.Checkpoints[0].Type == steward.TypeCustom
	}

	a, agentID, token := agent()
	res := resolve(a, agentID, "answer a happy customer")
	if len(res.Checkpoints) != 0 || len(res.AllowedActions) != 1 {
		t.Fatalf("resolve (calm): checkpoints %+v, allowed %+v; want none pending and reply.send allowed", res.Checkpoints, res.AllowedActions)
	}
	select {
	case ec := <-asked:
		if ec.TriggerID != "sentiment" || ec.AtlasID != "com.example.mood" || ec.SessionID != a.Workspace() || ec.AgentID != agentID ||
			ec.Operation != carp.OpResolve || ec.Goal != "answer a happy customer" || string(ec.Params) != `{"threshold":0.5}` {
			t.Errorf("the evaluator was asked %+v", ec)
		}
	default:
		t.Fatal("the evaluator was not asked")
	}

	res = resolve(a, agentID, "answer an angry customer")
	if !pending(res) || len(res.AllowedActions) != 0 || len(res.DeniedActions) != 1 {
		t.Fatalf("resolve (angry): checkpoints %+v, allowed %+v, denied %+v; want calm-down pending and reply.send denied", res.Checkpoints, res.AllowedActions, res.DeniedActions)
	}
	if q := res.Checkpoints[0].Questions; len(q) != 1 || q[0].QuestionID != "polite" || q[0].ResponseType != "acknowledgment" {
		t.Errorf("calm-down's questions: %+v", q)
	}
	_, err = a.CarpExecute(ctx, carpRequest(t, a, agentID, carp.OpExecute, func(r *carp.Request) {
		r.Action = &carp.ActionSpec{ActionID: "reply.send", ActionType: "reply.send", ResolutionID: res.ResolutionID, Parameters: map[string]any{}}
	}))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != carp.CodeCheckpointRequired || ce.Status != http.StatusPreconditionRequired || ce.Details["checkpoint"] == nil {
		t.Fatalf("execute with calm-down pending = %v; want CHECKPOINT_REQUIRED (428) with the checkpoint", err)
	}

	respond := func(answers string) carp.Request {
		return carpRequest(t, a, agentID, carp.OpRespond, func(r *carp.Request) {
			r.CheckpointResponse = &carp.CheckpointResponse{CheckpointID: "calm-down", Answers: map[string]json.RawMessage{}}
			if err := json.Unmarshal([]byte(answers), &r.CheckpointResponse.Answers); err != nil {
				t.Fatal(err)
			}
		})
	}
	_, err = a.CarpRespond(ctx, respond(`{"polite":"whatever"}`))
	if !errors.As(err, &ce) || ce.Code != carp.CodeConstraintViolated || ce.Details["outcome"] != "retry" || ce.Details["checkpoint_id"] != "calm-down" {
		t.Fatalf("respond (not an acknowledgment) = %v; want CONSTRAINT_VIOLATED, outcome retry", err)
	}
	_, err = a.CarpRespond(ctx, respond(`{"polite":"understood","mood":"fine"}`))
	if !errors.As(err, &ce) || ce.Code != carp.CodeInvalidRequest || ce.Details["reason"] != "unknown_question" {
		t.Fatalf("respond (an unknown question) = %v; want INVALID_REQUEST unknown_question", err)
	}

	// Over HTTP: the same operation, with the seed's headers.
	var info wire.DaemonFile
	b, err := os.ReadFile(filepath.Join(d.Dir, daemon.InfoFile))
	if err != nil || json.Unmarshal(b, &info) != nil || info.HTTPURL == "" {
		t.Fatalf("wacpd.json: %s %v", b, err)
	}
	rq := respond(`{"polite":"understood"}`)
	body, _ := json.Marshal(rq)
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, info.HTTPURL+"/carp/v1/respond", bytes.NewReader(body))
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	resp.Body.Close()
	var cr carp.CheckpointResult
	if resp.StatusCode != 200 || json.Unmarshal(buf.Bytes(), &cr) != nil || cr.Outcome != steward.OutcomePassed || cr.CheckpointID != "calm-down" ||
		cr.AtlasRef != "com.example.mood@1.0.0" || len(cr.Pending) != 0 || !cr.Effects.Guidance ||
		resp.Header.Get("X-Request-ID") != rq.RequestID || resp.Header.Get("X-Trace-ID") != cr.TelemetryLink.TraceID || cr.TelemetryLink.TraceID == "" {
		t.Fatalf("HTTP respond: %d %v %s", resp.StatusCode, resp.Header, buf.Bytes())
	}
	if _, err := a.CarpRespond(ctx, respond(`{"polite":"understood"}`)); !errors.As(err, &ce) || ce.Code != carp.CodeInvalidRequest || ce.Details["reason"] != "not_pending" {
		t.Errorf("respond again = %v; want INVALID_REQUEST not_pending", err)
	}
	// Passed: the action is allowed again, with the checkpoint's
	// guidance, and runs (a dry run: no tool here).
	res = resolve(a, agentID, "answer the customer")
	if len(res.Checkpoints) != 0 || len(res.AllowedActions) != 1 || len(res.Guidance) != 1 || res.Guidance[0].Content != "Stay polite." {
		t.Errorf("resolve after calm-down passed: checkpoints %+v, allowed %+v, guidance %+v; want reply.send allowed with the guidance",
			res.Checkpoints, res.AllowedActions, res.Guidance)
	}
	x, err := a.CarpExecute(ctx, carpRequest(t, a, agentID, carp.OpExecute, func(r *carp.Request) {
		r.Action = &carp.ActionSpec{ActionID: "reply.send", ActionType: "reply.send", ResolutionID: res.ResolutionID, Parameters: map[string]any{}}
		r.ExecutionOptions = &carp.ExecutionOptions{DryRun: true}
	}))
	if err != nil || x.Status != carp.StatusSuccess {
		t.Errorf("execute (dry run) after calm-down passed = %+v, %v; want success", x, err)
	}
	for len(asked) > 0 {
		if ec := <-asked; ec.Operation == carp.OpExecute && ec.ActionID != "reply.send" {
			t.Errorf("the evaluator was asked about an execute: %+v", ec)
		}
	}

	// An evaluator that errs, or answers after the atlas's 300 ms: the
	// blocking checkpoint fails closed.
	for _, goal := range []string{"a broken model", "a slow model"} {
		a, agentID, _ := agent()
		start := time.Now()
		if res := resolve(a, agentID, goal); !pending(res) {
			t.Errorf("resolve %q: checkpoints %+v; want calm-down pending (fail closed)", goal, res.Checkpoints)
		}
		if el := time.Since(start); el > 1200*time.Millisecond {
			t.Errorf("resolve %q took %s: the evaluator's deadline is 300 ms", goal, el)
		}
	}

	// No evaluator at all: fails closed too.
	if err := svc.Stop(); err != nil {
		t.Fatal(err)
	}
	a, agentID, _ = agent()
	if res := resolve(a, agentID, "answer a happy customer"); !pending(res) {
		t.Errorf("resolve with no evaluator running: checkpoints %+v; want calm-down pending (fail closed)", res.Checkpoints)
	}
}

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/steward"
)

// onboardingAtlas has one blocking session_start checkpoint: terms to
// accept (a boolean whose expected answer is true) and a purpose (text of
// at least 10 characters without "hack"); passing it injects a context
// block and guidance.
const onboardingAtlas = `{
  "atlas_version": "1.0", "atlas_id": "com.test.onboarding", "version": "1.0.0", "name": "Onboarding",
  "context_blocks": [{"context_id": "house-rules", "content": "Be kind to customers.", "inject_mode": "on_demand"}],
  "checkpoints": [{
    "checkpoint_id": "onboarding", "name": "Session onboarding", "mode": "blocking",
    "trigger": {"type": "session_start"},
    "questions": [
      {"question_id": "agree-terms", "question": "Do you agree to the terms of service?", "response_type": "boolean", "expected": true, "on_invalid": "retry"},
      {"question_id": "purpose", "question": "What will you do in this session?", "response_type": "text",
       "validation": {"min_length": 10, "must_not_contain": ["hack"]}}
    ],
    "guidance": {"format": "markdown", "content": "Answer tickets; never delete them."},
    "inject_contexts": ["house-rules"]
  }],
  "policies": [{"policy_id": "allow", "type": "allow", "actions": ["ticket.*"]}],
  "actions": [{"action_id": "ticket.get", "risk_tier": "low", "side_effect_class": "read_only",
    "parameters_schema": {"type": "object", "required": ["ticket_id"], "properties": {"ticket_id": {"type": "string"}}}}]
}`

// TestStewardEndToEnd: the real wacpd, the real example tool service and
// the real wacp as the agent. The atlas's blocking session_start
// checkpoint fires as the worker becomes active: the agent's resolve
// shows it and denies the action, an execute is refused
// CHECKPOINT_REQUIRED, wrong answers are refused (the agent may retry),
// right answers pass; the next resolve permits the action with the
// checkpoint's context and guidance; the execute runs at the tool; the
// session's TRACE, exported, verifies offline and holds the answers only
// as hashes.
func TestStewardEndToEnd(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	atlasFile := filepath.Join(dir, "onboarding.json")
	if err := os.WriteFile(atlasFile, []byte(onboardingAtlas), 0o600); err != nil {
		t.Fatal(err)
	}
	rig := startToolRig(t, ctx, filepath.Join(dir, "data"), "answer tickets", "-atlas", atlasFile)
	d, tool, created := rig.d, rig.tool, rig.worker
	// agent runs wacp as the worker's agent and returns its stdout and
	// exit code.
	agent := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin.wacp, append([]string{"-url", d.url, "-token", created.Token, "-ws", created.Workspace.ID, "-o", "json"}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return out.String(), 0
		case errors.As(err, &exit):
			return out.String() + errb.String(), exit.ExitCode()
		}
		t.Fatalf("wacp %q: %v", args, err)
		return "", 0
	}
	decode := func(what, out string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
	}

	out, code := agent("carp", "resolve", "--goal", "answer ticket T-1")
	if code != 0 {
		t.Fatalf("resolve: exit %d\n%s", code, out)
	}
	var res carp.Resolution
	decode("resolve", out, &res)
	if len(res.Checkpoints) != 1 || res.Checkpoints[0].CheckpointID != "onboarding" || res.Checkpoints[0].Status != steward.StatusPending ||
		len(res.Checkpoints[0].Questions) != 2 || len(res.AllowedActions) != 0 {
		t.Fatalf("the first resolution: checkpoints %+v allowed %+v", res.Checkpoints, res.AllowedActions)
	}

	out, code = agent("carp", "execute", "--resolution", res.ResolutionID, "--action", "ticket.get", "--param", "ticket_id=T-1")
	if code == 0 || !strings.Contains(out, carp.CodeCheckpointRequired) {
		t.Fatalf("execute while onboarding is pending: exit %d\n%s", code, out)
	}

	out, code = agent("carp", "respond", "--checkpoint", "onboarding", "--answer", "agree-terms=false", "--answer", "purpose=I will hack the system")
	if code == 0 || !strings.Contains(out, carp.CodeConstraintViolated) || !strings.Contains(out, steward.ReasonExpected) || !strings.Contains(out, steward.ReasonMustNotContain) {
		t.Fatalf("wrong answers: exit %d\n%s", code, out)
	}
	out, code = agent("carp", "respond", "--checkpoint", "onboarding", "--answer", "agree-terms=true", "--answer", "purpose=ab")
	if code == 0 || !strings.Contains(out, steward.ReasonMinLength) {
		t.Fatalf("a purpose of 2 characters: exit %d\n%s", code, out)
	}
	out, code = agent("carp", "respond", "--checkpoint", "onboarding", "--answer", "agree-terms=true", "--answer", "purpose=answer the customers' tickets")
	if code != 0 {
		t.Fatalf("right answers: exit %d\n%s", code, out)
	}
	var passed carp.CheckpointResult
	decode("respond", out, &passed)
	if passed.Outcome != steward.OutcomePassed || passed.CheckpointID != "onboarding" || len(passed.Pending) != 0 {
		t.Fatalf("respond: %+v", passed)
	}

	out, code = agent("carp", "resolve", "--goal", "answer ticket T-1")
	if code != 0 {
		t.Fatalf("resolve after the answers: exit %d\n%s", code, out)
	}
	res = carp.Resolution{}
	decode("resolve", out, &res)
	if len(res.Checkpoints) != 0 || len(res.AllowedActions) != 1 || res.AllowedActions[0].ActionID != "ticket.get" {
		t.Fatalf("after the answers: checkpoints %+v allowed %+v", res.Checkpoints, res.AllowedActions)
	}
	if len(res.Guidance) != 1 || res.Guidance[0].Content != "Answer tickets; never delete them." {
		t.Fatalf("guidance %+v", res.Guidance)
	}
	if len(res.ContextBlocks) != 1 || res.ContextBlocks[0].BlockID != "house-rules" {
		t.Fatalf("context blocks %+v", res.ContextBlocks)
	}
	out, code = agent("carp", "execute", "--resolution", res.ResolutionID, "--action", "ticket.get", "--param", "ticket_id=T-1")
	if code != 0 {
		t.Fatalf("execute after the answers: exit %d\n%s", code, out)
	}
	var ran carp.ExecutionResult
	decode("execute", out, &ran)
	if ran.Status != carp.StatusSuccess {
		t.Fatalf("execute: %+v", ran)
	}
	select {
	case got := <-tool.reqs:
		if got != ran.ExecutionID {
			t.Fatalf("the tool ran %s, want %s", got, ran.ExecutionID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool never got the execution")
	}

	export := filepath.Join(dir, "trace.jsonl")
	if out, code := agent("trace", "export", "--out", export); code != 0 {
		t.Fatalf("trace export: exit %d\n%s", code, out)
	}
	if out, code := agent("trace", "verify", export); code != 0 {
		t.Fatalf("trace verify: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{steward.TraceTriggered, steward.TraceQuestionPresented, steward.TraceResponseReceived,
		steward.TraceValidated, steward.TraceFailed, steward.TracePassed, steward.TraceGuidanceInjected} {
		if !bytes.Contains(b, []byte(`"`+typ+`"`)) {
			t.Errorf("TRACE has no %s", typ)
		}
	}
	for _, answer := range []string{"hack the system", "customers' tickets"} {
		if bytes.Contains(b, []byte(answer)) {
			t.Errorf("an answer in TRACE: %q", answer)
		}
	}
}

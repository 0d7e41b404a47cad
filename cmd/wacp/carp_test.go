package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/atlas/atlasfile"
	"github.com/wacpd/wacpd/carp"
	wacpd "github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
)

// acmeAtlas is the sample atlas of examples/atlas: ticket.get, ticket.list,
// ticket.comment (2 per 60 s per session), ticket.delete (requires
// approval), billing.refund.
const acmeAtlas = "../../examples/atlas/acme-support.json"

// carpDaemon starts a daemon with the sample atlas loaded (-atlas) and no
// tool service, creates a worker through the CLI and returns the admin's
// and the worker's global flags and the worker's workspace.
func carpDaemon(t *testing.T) (admin, worker []string, ws string) {
	t.Helper()
	return carpDaemonWith(t, acmeAtlas)
}

// carpDaemonWith is carpDaemon with the atlas files atlases loaded.
func carpDaemonWith(t *testing.T, atlases ...string) (admin, worker []string, ws string) {
	t.Helper()
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	d := daemontest.Start(t, wacpd.Config{AtlasPaths: atlases})
	admin = []string{"-data", d.Dir}
	code, out, errs := wacp(t, append(admin, "-o", "json", "workspace", "create", "--role", "worker")...)
	var created struct {
		Workspace struct{ ID string }
		Token     string
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Token == "" {
		t.Fatalf("wacp workspace create = %d, %q, %q", code, out, errs)
	}
	ws = created.Workspace.ID
	return admin, []string{"-url", d.URL, "-token", created.Token, "-ws", ws}, ws
}

// resolve runs carp resolve -o json with args and returns the resolution.
func resolve(t *testing.T, global []string, args ...string) carp.Resolution {
	t.Helper()
	code, out, errs := wacp(t, append(append(global, "-o", "json", "carp", "resolve"), args...)...)
	var res carp.Resolution
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.ResolutionID == "" {
		t.Fatalf("wacp carp resolve %v = %d, %q (%v), %q; want a resolution", args, code, out, err, errs)
	}
	return res
}

// TestCarpResolve: a worker resolves a goal through the CLI: the table
// names the decision, the resolution and its expiry, each allowed action
// with its risk tier, approval and limits, and the context blocks; -o
// json is the CARPResolution itself. The flags reach the request: a hint
// no atlas covers, a scope, an unknown atlas, a bad risk tier, another
// agent.
func TestCarpResolve(t *testing.T) {
	_, worker, _ := carpDaemon(t)

	code, out, errs := wacp(t, append(worker, "carp", "resolve", "--goal", "read T-1 and refund the customer")...)
	if code != 0 {
		t.Fatalf("wacp carp resolve = %d, %q, %q", code, out, errs)
	}
	for _, want := range []string{"decision        allow_with_constraints\n", "resolution_id   ", "expires_at      ",
		"context blocks  support-basics, refunds\n", "ALLOWED         RISK    APPROVAL  LIMITS\n",
		"ticket.get      low     -         -\n", "ticket.comment  medium  -         2/60s session; 0 of 2 used\n",
		"ticket.delete   high    required  -\n", "billing.refund  high    -         -\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("wacp carp resolve printed\n%s\nwant a line with %q", out, want)
		}
	}

	// -o json: the resolution as the daemon sent it, not wrapped.
	code, out, errs = wacp(t, append(worker, "-o", "json", "carp", "resolve", "--goal", "read T-1", "--actions", "ticket.get", "--actions", "ticket.comment")...)
	var top map[string]json.RawMessage
	if code != 0 || json.Unmarshal([]byte(out), &top) != nil || string(top["carp_version"]) != `"1.0"` || top["decision"] == nil || top["allowed_actions"] == nil {
		t.Fatalf("wacp -o json carp resolve = %d, %q, %q; want a CARPResolution", code, out, errs)
	}
	res := resolve(t, worker, "--goal", "read T-1", "--actions", "ticket.get", "--actions", "ticket.comment")
	var allowed []string
	for _, a := range res.AllowedActions {
		allowed = append(allowed, a.ActionID)
	}
	if strings.Join(allowed, ",") != "ticket.get,ticket.comment" {
		t.Errorf("resolve --actions ticket.get --actions ticket.comment allowed %v, want those two", allowed)
	}

	if res := resolve(t, worker, "--goal", "x", "--hint", "weather"); res.Decision.Type != carp.DecisionInsufficientContext ||
		strings.Join(res.Decision.MissingDomains, ",") != "weather" {
		t.Errorf("resolve --hint weather = %+v, want insufficient_context missing weather", res.Decision)
	}
	if res := resolve(t, worker, "--goal", "x", "--atlas", "com.acme.support"); len(res.AllowedActions) != 5 {
		t.Errorf("resolve --atlas com.acme.support allowed %d actions, want 5", len(res.AllowedActions))
	}

	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown atlas", []string{"--goal", "x", "--atlas", "com.nope"}, 2, "wacp: ATLAS_NOT_FOUND: "},
		{"bad risk tier", []string{"--goal", "x", "--risk-tier", "extreme"}, 2, "wacp: INVALID_FORMAT: task.risk_tier"},
		{"another agent", []string{"--goal", "x", "--agent", "someone-else"}, 2, "wacp: FORBIDDEN: "},
		{"no goal", []string{"--hint", "support"}, 1, "--goal is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := wacp(t, append(append(worker, "carp", "resolve"), tt.args...)...)
			if code != tt.code || !strings.HasPrefix(errs, tt.stderr) && !strings.Contains(errs, tt.stderr) {
				t.Errorf("wacp carp resolve %v = %d, %q, %q; want %d and %q", tt.args, code, out, errs, tt.code, tt.stderr)
			}
		})
	}
}

// TestCarpExecute: executes through the CLI without a tool service: a dry
// run succeeds; a real one fails with SERVICE_UNAVAILABLE (exit 1); an
// action the resolution does not permit, a used-up rate limit and bad
// parameters are refused with their CARP code (exit 2); an action that
// requires approval is held (exit 2). The idempotency key answers the
// first execution again.
func TestCarpExecute(t *testing.T) {
	admin, worker, _ := carpDaemon(t)
	r := resolve(t, worker, "--goal", "read T-1", "--actions", "ticket.get", "--actions", "ticket.comment", "--actions", "ticket.delete").ResolutionID
	execute := func(args ...string) (int, string, string) {
		t.Helper()
		return wacp(t, append(append(worker, "carp", "execute", "--resolution", r), args...)...)
	}

	code, out, errs := execute("--action", "ticket.get", "--param", "ticket_id=T-1", "--dry-run")
	if code != 0 || !strings.HasPrefix(out, "status        success\nexecution_id  ") || !strings.Contains(out, "output_hash   sha256:") ||
		!strings.HasSuffix(out, "\n{\n  \"dry_run\": true\n}\n") {
		t.Errorf("wacp carp execute --dry-run = %d, %q, %q; want 0, success and the dry run's output", code, out, errs)
	}

	code, out, errs = execute("--action", "ticket.get", "--param", "ticket_id=T-1")
	if code != 1 || !strings.HasPrefix(out, "status        failed\n") || !strings.Contains(out, "error         SERVICE_UNAVAILABLE: no tool service answers wacp.v1.tool.ticket.get") {
		t.Errorf("wacp carp execute (no tool service) = %d, %q, %q; want 1, failed and SERVICE_UNAVAILABLE", code, out, errs)
	}
	code, out, errs = wacp(t, append(worker, "-o", "json", "carp", "execute", "--resolution", r, "--action", "ticket.get", "--params", `{"ticket_id":"T-1"}`)...)
	var x carp.ExecutionResult
	if err := json.Unmarshal([]byte(out), &x); err != nil || code != 1 || x.Status != carp.StatusFailed || x.Error == nil ||
		x.Error.Code != carp.CodeServiceUnavailable || x.ExecutionID == "" {
		t.Errorf("wacp -o json carp execute (no tool service) = %d, %q (%v), %q; want 1 and the failed result", code, out, err, errs)
	}

	code, out, errs = execute("--action", "ticket.list")
	if code != 2 || out != "" || !strings.HasPrefix(errs, "wacp: ACTION_NOT_PERMITTED: resolution "+r+" does not permit ticket.list") {
		t.Errorf("wacp carp execute (not permitted) = %d, %q, %q; want 2 and ACTION_NOT_PERMITTED", code, out, errs)
	}
	code, _, errs = wacp(t, append(worker, "-o", "json", "carp", "execute", "--resolution", r, "--action", "ticket.list")...)
	var je jsonError
	if err := json.Unmarshal([]byte(errs), &je); err != nil || code != 2 || je.Error.Code != carp.CodeActionNotPermitted || je.Error.ExitCode != 2 {
		t.Errorf("wacp -o json carp execute (not permitted) = %d, %q; want 2 and code ACTION_NOT_PERMITTED", code, errs)
	}

	code, out, errs = execute("--action", "ticket.delete", "--param", "ticket_id=T-1")
	if code != 2 || !strings.HasPrefix(out, "status        pending_approval\n") {
		t.Errorf("wacp carp execute ticket.delete = %d, %q, %q; want 2 and pending_approval", code, out, errs)
	}

	// ticket.comment: 2 per 60 s in the session, counted when executed;
	// the third is refused. One no tool service got is not counted.
	if code, out, errs := execute("--action", "ticket.comment", "--param", "ticket_id=T-1", "--param", "body=hi"); code != 1 ||
		!strings.Contains(out, "SERVICE_UNAVAILABLE") {
		t.Fatalf("wacp carp execute ticket.comment without a tool = %d, %q, %q; want 1 (no tool service)", code, out, errs)
	}
	code, out, errs = wacp(t, append(admin, "-o", "json", "token", "create", "--kind", "tool", "--name", "commenter")...)
	var tok struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil {
		t.Fatalf("wacp token create --kind tool = %d, %q, %q", code, out, errs)
	}
	nc, err := nats.Connect(worker[1], nats.Token(tok.Token))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Subscribe(carp.ToolSubject("ticket.comment"), func(m *nats.Msg) {
		m.Respond([]byte(`{"status":"success","output":{"ok":true}}`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if code, out, errs := execute("--action", "ticket.comment", "--param", "ticket_id=T-1", "--param", "body=hi"); code != 0 {
			t.Fatalf("wacp carp execute ticket.comment #%d = %d, %q, %q; want 0 (the tool answers)", i+1, code, out, errs)
		}
	}
	code, out, errs = execute("--action", "ticket.comment", "--param", "ticket_id=T-1", "--param", "body=hi")
	if code != 2 || !strings.HasPrefix(errs, "wacp: RATE_LIMITED: rate limit comment-rate of ticket.comment: 2 of 2 used") {
		t.Errorf("wacp carp execute ticket.comment #3 = %d, %q, %q; want 2 and RATE_LIMITED", code, out, errs)
	}

	code, out, errs = execute("--action", "ticket.get", "--params", "{}")
	if code != 2 || !strings.HasPrefix(errs, "wacp: CONSTRAINT_VIOLATED: ") || !strings.Contains(errs, "ticket_id") {
		t.Errorf("wacp carp execute without ticket_id = %d, %q, %q; want 2 and CONSTRAINT_VIOLATED", code, out, errs)
	}

	// The same idempotency key: the first execution's result, again.
	ids := map[string]bool{}
	for range 2 {
		code, out, _ := wacp(t, append(worker, "-o", "json", "carp", "execute", "--resolution", r, "--action", "ticket.get",
			"--param", "ticket_id=T-2", "--idempotency-key", "k-1")...)
		var x carp.ExecutionResult
		if json.Unmarshal([]byte(out), &x) != nil || code != 1 {
			t.Fatalf("wacp carp execute --idempotency-key = %d, %q", code, out)
		}
		ids[x.ExecutionID] = true
	}
	if len(ids) != 1 {
		t.Errorf("two executes with one idempotency key ran %d executions, want 1", len(ids))
	}

	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"both params forms", []string{"--action", "ticket.get", "--params", "{}", "--param", "a=b"}, "not both"},
		{"params not an object", []string{"--action", "ticket.get", "--params", "[1]"}, "--params is not a JSON object"},
		{"param not k=v", []string{"--action", "ticket.get", "--param", "ticket_id"}, "is not k=v or k:=JSON"},
		{"param not JSON", []string{"--action", "ticket.get", "--param", "n:=five"}, "the value is not JSON"},
		{"no action", []string{"--param", "a=b"}, "--action is required"},
		{"negative timeout", []string{"--action", "ticket.get", "--timeout-ms", "-1"}, "--timeout-ms must not be negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errs := execute(tt.args...); code != 1 || !strings.Contains(errs, tt.stderr) {
				t.Errorf("wacp carp execute %v = %d, %q; want 1 and %q", tt.args, code, errs, tt.stderr)
			}
		})
	}
	if code, _, errs := wacp(t, append(worker, "carp", "execute", "--action", "ticket.get")...); code != 1 || !strings.Contains(errs, "--resolution is required") {
		t.Errorf("wacp carp execute without --resolution = %d, %q; want 1", code, errs)
	}
}

// TestCarpValidate: validate prints valid, or the violations and exits 2;
// --param k=v is a string and k:=JSON the JSON value.
func TestCarpValidate(t *testing.T) {
	_, worker, _ := carpDaemon(t)
	r := resolve(t, worker, "--goal", "comment on T-1", "--actions", "ticket.*").ResolutionID
	validate := func(args ...string) (int, string, string) {
		t.Helper()
		return wacp(t, append(append(worker, "carp", "validate", "--resolution", r, "--action", "ticket.comment"), args...)...)
	}
	if code, out, errs := validate("--param", "ticket_id=T-1", "--param", "body=5"); code != 0 || out != "valid\n" {
		t.Errorf("wacp carp validate body=5 = %d, %q, %q; want 0 and valid (a string)", code, out, errs)
	}
	code, out, errs := validate("--param", "ticket_id=T-1", "--param", "body:=5")
	if code != 2 || !strings.HasPrefix(out, "CODE                 PATH             MESSAGE\n") || !strings.Contains(out, "got number, want string") ||
		!strings.Contains(out, "CONSTRAINT_VIOLATED  parameters.body  keep comments under 500 characters\n") {
		t.Errorf("wacp carp validate body:=5 = %d, %q, %q; want 2 and the violations of a number", code, out, errs)
	}
	code, out, errs = wacp(t, append(worker, "-o", "json", "carp", "validate", "--resolution", r, "--action", "ticket.comment",
		"--params", `{"ticket_id":"T-1","body":"`+strings.Repeat("x", 501)+`"}`)...)
	var v carp.ValidationResult
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 2 || v.Valid || len(v.Violations) != 1 || v.Violations[0].Path != "parameters.body" {
		t.Errorf("wacp -o json carp validate (long body) = %d, %q (%v), %q; want 2 and one violation of parameters.body", code, out, err, errs)
	}
	// Validate counts nothing: the rate limit (2 per 60 s) is untouched.
	for range 3 {
		if code, out, errs := validate("--params", `{"ticket_id":"T-1","body":"hi"}`); code != 0 {
			t.Fatalf("wacp carp validate = %d, %q, %q", code, out, errs)
		}
	}
	if code, out, errs := wacp(t, append(worker, "carp", "validate", "--resolution", r, "--action", "ticket.get", "--dry-run")...); code != 1 || !strings.Contains(errs, "flag provided but not defined: -dry-run") {
		t.Errorf("wacp carp validate --dry-run = %d, %q, %q; want 1: validate runs nothing", code, out, errs)
	}
}

// termsAtlas is an atlas with one blocking session_start checkpoint: a
// boolean question whose one passing answer is true, gating the atlas's
// one action (notes.read, allowed by a policy).
const termsAtlas = `{
  "atlas_version": "1.0", "atlas_id": "com.example.terms", "version": "1.0.0", "name": "Terms",
  "domains": ["notes"],
  "checkpoints": [
    {"checkpoint_id": "terms", "name": "Terms of use", "trigger": {"type": "session_start"}, "mode": "blocking",
     "questions": [{"question_id": "agree-terms", "question": "Do you agree to the terms?", "response_type": "boolean", "expected": true},
                   {"question_id": "reason", "question": "Why do you need the notes?", "response_type": "text", "required": false}]}
  ],
  "policies": [{"policy_id": "allow-notes", "type": "allow", "actions": ["notes.*"]}],
  "actions": [{"action_id": "notes.read", "name": "Read notes", "risk_tier": "low", "parameters_schema": {"type": "object"}}]
}`

// TestCarpRespond: a worker under an atlas with a blocking session_start
// checkpoint: its resolution shows the checkpoint pending and denies the
// action it gates, whose execute is CHECKPOINT_REQUIRED (exit 2); an
// answer that does not pass is refused CONSTRAINT_VIOLATED (exit 2) with
// the answer's result in the details, and the checkpoint stays pending;
// the expected answer passes it (outcome passed) and the next resolution
// allows the action. --answer takes JSON, else a string; --answers a
// file or stdin; the flags' mistakes are usage errors.
func TestCarpRespond(t *testing.T) {
	file := filepath.Join(t.TempDir(), "terms.json")
	if err := os.WriteFile(file, []byte(termsAtlas), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := atlasfile.Load(file); err != nil {
		t.Fatalf("the test's atlas does not load: %v", err)
	}
	_, worker, _ := carpDaemonWith(t, file)

	res := resolve(t, worker, "--goal", "read the notes")
	if len(res.Checkpoints) != 1 || res.Checkpoints[0].CheckpointID != "terms" || res.Checkpoints[0].Status != "pending" ||
		res.Checkpoints[0].Mode != "blocking" || len(res.Checkpoints[0].Questions) != 2 || res.Checkpoints[0].Questions[0].QuestionID != "agree-terms" {
		t.Fatalf("resolve: checkpoints %+v, want terms pending with its two questions", res.Checkpoints)
	}
	if len(res.AllowedActions) != 0 || len(res.DeniedActions) != 1 || res.DeniedActions[0].ActionType != "notes.read" {
		t.Errorf("resolve with terms pending: allowed %+v, denied %+v; want notes.read denied", res.AllowedActions, res.DeniedActions)
	}
	code, out, errs := wacp(t, append(worker, "carp", "resolve", "--goal", "read the notes")...)
	if code != 0 || !strings.Contains(out, "\nCHECKPOINT  STATUS   MODE      ATLAS                    QUESTIONS\n") ||
		!strings.Contains(out, "\nterms       pending  blocking  com.example.terms@1.0.0  agree-terms (boolean), reason (text)\n") ||
		!strings.HasPrefix(out, "decision        deny\nreason          checkpoint terms is pending") {
		t.Errorf("wacp carp resolve (terms pending) = %d, %q, %q; want the checkpoint in the table", code, out, errs)
	}
	code, out, errs = wacp(t, append(worker, "carp", "execute", "--resolution", res.ResolutionID, "--action", "notes.read", "--dry-run")...)
	if code != 2 || !strings.HasPrefix(errs, "wacp: CHECKPOINT_REQUIRED: checkpoint terms holds notes.read back") {
		t.Errorf("wacp carp execute notes.read (terms pending) = %d, %q, %q; want 2 and CHECKPOINT_REQUIRED", code, out, errs)
	}

	respond := func(args ...string) (int, string, string) {
		t.Helper()
		return wacp(t, append(append(worker, "-o", "json", "carp", "respond", "--checkpoint", "terms"), args...)...)
	}
	code, out, errs = respond("--answer", "agree-terms=false", "--answer", "reason=I need them")
	var je jsonError
	if err := json.Unmarshal([]byte(errs), &je); err != nil || code != 2 || out != "" || je.Error.Code != carp.CodeConstraintViolated ||
		je.Error.Details["outcome"] != "retry" || !strings.Contains(errs, `"question_id":"agree-terms","reason":"expected","valid":false`) {
		t.Errorf("wacp carp respond agree-terms=false = %d, %q, %q; want 2, CONSTRAINT_VIOLATED and the answer's result", code, out, errs)
	}
	if res := resolve(t, worker, "--goal", "read the notes again"); len(res.Checkpoints) != 1 || res.Checkpoints[0].Status != "pending" {
		t.Errorf("resolve after a refused answer: checkpoints %+v, want terms still pending", res.Checkpoints)
	}

	code, out, errs = respond("--answer", "agree-terms=true", "--answer", "reason=some text")
	var cr carp.CheckpointResult
	if err := json.Unmarshal([]byte(out), &cr); err != nil || code != 0 || cr.Outcome != "passed" || cr.CheckpointID != "terms" ||
		cr.AtlasRef != "com.example.terms@1.0.0" || len(cr.Results) != 2 || len(cr.Pending) != 0 {
		t.Fatalf("wacp carp respond agree-terms=true = %d, %q (%v), %q; want 0 and outcome passed", code, out, err, errs)
	}
	res = resolve(t, worker, "--goal", "read the notes, agreed")
	if len(res.Checkpoints) != 0 || len(res.AllowedActions) != 1 || res.AllowedActions[0].ActionID != "notes.read" {
		t.Errorf("resolve after the terms passed: checkpoints %+v, allowed %+v; want none pending and notes.read allowed", res.Checkpoints, res.AllowedActions)
	}
	if code, out, errs := wacp(t, append(worker, "carp", "execute", "--resolution", res.ResolutionID, "--action", "notes.read", "--dry-run")...); code != 0 {
		t.Errorf("wacp carp execute notes.read --dry-run (terms passed) = %d, %q, %q; want 0", code, out, errs)
	}
	// Passed: nothing is pending any more.
	code, out, errs = respond("--answer", "agree-terms=true")
	if err := json.Unmarshal([]byte(errs), &je); err != nil || code != 2 || je.Error.Code != carp.CodeInvalidRequest || je.Error.Details["reason"] != "not_pending" {
		t.Errorf("wacp carp respond (passed already) = %d, %q, %q; want 2 and INVALID_REQUEST not_pending", code, out, errs)
	}

	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no checkpoint", []string{"--answer", "a=1"}, "--checkpoint is required"},
		{"no answers", []string{"--checkpoint", "terms"}, "no answers"},
		{"both forms", []string{"--checkpoint", "terms", "--answer", "a=1", "--answers", "-"}, "not both"},
		{"not QID=VALUE", []string{"--checkpoint", "terms", "--answer", "agree"}, "is not QID=VALUE"},
		{"twice", []string{"--checkpoint", "terms", "--answer", "a=1", "--answer", "a=2"}, "given twice"},
		{"answers not an object", []string{"--checkpoint", "terms", "--answers", file + ".missing"}, "read the answers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errs := wacp(t, append(append(worker, "carp", "respond"), tt.args...)...); code != 1 || !strings.Contains(errs, tt.stderr) {
				t.Errorf("wacp carp respond %v = %d, %q; want 1 and %q", tt.args, code, errs, tt.stderr)
			}
		})
	}
}

// TestCarpRespondAnswers: --answer values are JSON when they parse, else
// strings; --answers reads a JSON object from a file or stdin.
func TestCarpRespondAnswers(t *testing.T) {
	c := &cli{stdin: strings.NewReader(`{"q":[1,2]}`)}
	got, err := c.answers("carp respond", []string{"b=true", "n=3", "s=some text", "q=\"quoted\"", "o={\"k\":1}", "e="}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"b": `true`, "n": `3`, "s": `"some text"`, "q": `"quoted"`, "o": `{"k":1}`, "e": `""`}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("answers(--answer %s=...)[%s] = %s, want %s", k, k, got[k], v)
		}
	}
	if got, err := c.answers("carp respond", nil, "-"); err != nil || string(got["q"]) != `[1,2]` {
		t.Errorf("answers(--answers -) = %v, %v; want q [1,2]", got, err)
	}
	file := filepath.Join(t.TempDir(), "a.json")
	os.WriteFile(file, []byte(`[true]`), 0o600)
	if _, err := c.answers("carp respond", nil, file); err == nil || !strings.Contains(err.Error(), "is not a JSON object") {
		t.Errorf("answers(--answers [true]) = %v, want a usage error", err)
	}
}

// TestCarpUsage: wacp -h lists the CARP, atlas and trace export commands
// and tool tokens.
func TestCarpUsage(t *testing.T) {
	code, _, errs := wacp(t, "-h")
	for _, want := range []string{"\n  carp resolve --goal TEXT ", "\n  carp execute --resolution R --action ID ", "\n  carp validate --resolution R ",
		"\n  carp respond --checkpoint ID ",
		"\n  atlas load FILE|DIR ", "\n  atlas unload ID ", "\n  atlas list ", "\n  trace export [--session S] [--out FILE] [--sth FILE] ",
		"\n  token create --kind user|auditor|tool "} {
		if code != 0 || !strings.Contains(errs, want) {
			t.Errorf("wacp -h = %d; want %q in\n%s", code, want, errs)
		}
	}
	for _, tt := range []struct{ args, want string }{
		{"carp", "needs a subcommand: execute, resolve, respond, validate"},
		{"atlas", "needs a subcommand: list, load, unload"},
	} {
		if code, _, errs := wacp(t, tt.args); code != 1 || !strings.Contains(errs, tt.want) {
			t.Errorf("wacp %s = %d, %q; want 1 and %q", tt.args, code, errs, tt.want)
		}
	}
}

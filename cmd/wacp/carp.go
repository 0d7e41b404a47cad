package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/steward"
	"github.com/wacpd/wacpd/wire"
)

// CARP/1.0 (issue 15): an agent resolves what context and actions its task
// may use, then executes or validates an action under that resolution. The
// requester is the client's workspace and its agent (--agent, default the
// workspace's agent field).

// strs is a repeatable string flag.
type strs []string

func (s *strs) String() string     { return strings.Join(*s, ",") }
func (s *strs) Set(v string) error { *s = append(*s, v); return nil }

func carpResolve(c *cli, args []string) error {
	const cmd = "carp resolve"
	fs := c.flags(cmd, cmd+" --goal TEXT [--risk-tier T] [--hint H]... [--atlas ID]... [--actions PATTERN]... [--agent ID]\n\n"+
		"Asks which context and actions the goal may use: prints the decision, the resolution's id and expiry,\n"+
		"the allowed actions (risk tier, approval, limits), the denied ones with the reason, and the context\n"+
		"blocks' ids. -o json prints the CARPResolution as the daemon sent it.")
	goal := fs.String("goal", "", "what the task is for, in words (required)")
	tier := fs.String("risk-tier", "", "the task's declared risk: low, medium, high or critical")
	agent := fs.String("agent", "", "requester agent_id (default: the workspace's agent)")
	var hints, atlases, actions strs
	fs.Var(&hints, "hint", "a domain, context block or tag the task needs (repeatable)")
	fs.Var(&atlases, "atlas", "resolve only against this atlas id (repeatable)")
	fs.Var(&actions, "actions", "only actions matching this pattern, e.g. ticket.* (repeatable)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(cmd, [2]string{*goal, "--goal is required (what the task is for)"}); err != nil {
		return err
	}
	cl, req, err := c.carpRequest(carp.OpResolve, *agent)
	if err != nil {
		return err
	}
	req.Task = &carp.Task{Goal: *goal, RiskTier: *tier, ContextHints: hints}
	if len(atlases) > 0 || len(actions) > 0 {
		req.Scope = &carp.Scope{Atlases: atlases, Actions: actions}
	}
	res, err := cl.CarpResolve(c.ctx, req)
	if err != nil {
		return err
	}
	return c.print(res, func(w io.Writer) { printResolution(w, res) })
}

func printResolution(w io.Writer, res carp.Resolution) {
	d := res.Decision
	kv(w, "decision", d.Type, "reason", d.Reason, "policies", strings.Join(d.PolicyRefs, ", "),
		"remediation", d.Remediation, "missing domains", strings.Join(d.MissingDomains, ", "),
		"missing atlases", strings.Join(d.MissingAtlases, ", "), "suggestion", d.Suggestion)
	if d.Type == carp.DecisionRequiresApproval {
		var who []string
		for _, a := range d.Approvers {
			who = append(who, a.Type+":"+a.ID)
		}
		kv(w, "approvers", strings.Join(who, ", "), "approval timeout", fmt.Sprintf("%ds", d.ApprovalTimeoutSeconds))
	}
	kv(w, "resolution_id", res.ResolutionID, "expires_at", res.TTL.ResolutionExpiresAt)
	var blocks []string
	for _, b := range res.ContextBlocks {
		blocks = append(blocks, b.BlockID)
	}
	kv(w, "context blocks", orDash(strings.Join(blocks, ", ")))
	for _, x := range res.Warnings {
		kv(w, "warning", x.Code+": "+x.Message)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ALLOWED\tRISK\tAPPROVAL\tLIMITS")
	for _, a := range res.AllowedActions {
		approval := "-"
		if a.RequiresApproval {
			approval = "required"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", a.ActionID, a.RiskTier, approval, orDash(limits(a)))
	}
	if len(res.DeniedActions) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "DENIED\tREASON\tPOLICIES")
		for _, a := range res.DeniedActions {
			fmt.Fprintf(w, "%s\t%s\t%s\n", a.ActionType, a.Reason, orDash(strings.Join(a.PolicyRefs, ",")))
		}
	}
	if len(res.Checkpoints) > 0 {
		fmt.Fprintln(w)
		printPrompts(w, res.Checkpoints)
	}
	for _, g := range res.Guidance {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "guidance (%s, checkpoint %s):\n%s\n", g.Format, g.CheckpointID, strings.TrimRight(g.Content, "\n"))
	}
}

// limits describes an allowed action's rate limits and budgets in a few
// words, with the usage of the tightest: "2/60s session; 0 of 2 used".
func limits(a carp.ActionPermission) string {
	var out []string
	for _, k := range a.Constraints {
		switch k.Type {
		case carp.ConstraintRateLimit:
			out = append(out, fmt.Sprintf("%v/%vs %v", k.Params["requests"], k.Params["window_seconds"], k.Params["scope"]))
		case carp.ConstraintCustom:
			if n, ok := k.Params["max_actions"]; ok {
				out = append(out, fmt.Sprintf("%v/session budget", n))
			}
		}
	}
	if rl := a.RateLimit; rl != nil && rl.CurrentUsage != nil {
		out = append(out, fmt.Sprintf("%d of %d used", *rl.CurrentUsage, rl.Requests))
	}
	return strings.Join(out, "; ")
}

// actionFlags are the flags execute and validate share.
type actionFlags struct {
	resolution, action, agent, params *string
	param                             strs
}

func addActionFlags(fs *flag.FlagSet) *actionFlags {
	f := &actionFlags{
		resolution: fs.String("resolution", "", "the resolution_id that permits the action (required)"),
		action:     fs.String("action", "", "the action's id, e.g. ticket.get (required)"),
		agent:      fs.String("agent", "", "requester agent_id (default: the workspace's agent)"),
		params:     fs.String("params", "", `the parameters as a JSON object, e.g. {"ticket_id":"T-1"}`),
	}
	fs.Var(&f.param, "param", "one parameter, k=v (a string) or k:=JSON (a number, object, ...); repeatable")
	return f
}

// request returns a CARP request of op for the action the flags name.
func (f *actionFlags) request(c *cli, cmd, op string) (*client.Client, carp.Request, error) {
	if err := required(cmd,
		[2]string{*f.resolution, "--resolution is required (the resolution_id of carp resolve)"},
		[2]string{*f.action, "--action is required (an allowed action's id)"},
	); err != nil {
		return nil, carp.Request{}, err
	}
	params, err := f.parameters(cmd)
	if err != nil {
		return nil, carp.Request{}, err
	}
	cl, req, err := c.carpRequest(op, *f.agent)
	if err != nil {
		return nil, carp.Request{}, err
	}
	req.Action = &carp.ActionSpec{ActionID: *f.action, ActionType: *f.action, Parameters: params, ResolutionID: *f.resolution}
	return cl, req, nil
}

// parameters returns the parameters of --params or the --param flags
// (an empty object when there are none). Values given as JSON stay the
// JSON given (json.RawMessage): numbers keep their digits. (Not
// json.Number: the client's encoder, go-json-experiment's v1, writes an
// encoding/json Number as a string.)
func (f *actionFlags) parameters(cmd string) (map[string]any, error) {
	params := map[string]any{}
	if *f.params != "" && len(f.param) > 0 {
		return nil, usagef(cmd, "give the parameters as --params JSON or as --param k=v, not both")
	}
	if *f.params != "" {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(*f.params), &raw); err != nil || raw == nil {
			return nil, usagef(cmd, "--params is not a JSON object")
		}
		for k, v := range raw {
			params[k] = v
		}
	}
	for _, p := range f.param {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || k == ":" {
			return nil, usagef(cmd, "--param %q is not k=v or k:=JSON", p)
		}
		if name, isJSON := strings.CutSuffix(k, ":"); isJSON {
			if !json.Valid([]byte(v)) {
				return nil, usagef(cmd, "--param %s:=%s: the value is not JSON", name, v)
			}
			params[name] = json.RawMessage(v)
			continue
		}
		params[k] = v
	}
	return params, nil
}

func carpExecute(c *cli, args []string) error {
	const cmd = "carp execute"
	fs := c.flags(cmd, cmd+" --resolution R --action ID [--params JSON | --param k=v ...] [--timeout-ms N] [--dry-run] [--idempotency-key K] [--approval ID] [--wait D] [--agent ID]\n\n"+
		"Executes an action the resolution permits and prints the CARPExecutionResult: status, execution_id,\n"+
		"the output and its hash, the error. Exits 1 when the execution failed (failed, timeout, cancelled),\n"+
		"2 when it is held for approval (pending_approval) or refused (the CARP code is printed, e.g.\n"+
		"RATE_LIMITED: ...).\n\n"+
		"An action held at an operator's checkpoint runs once approved: with --wait D the command waits up to D\n"+
		"for the decision (saying so on stderr), then sends the same execute again under the approval\n"+
		"(--approval ID, which an agent may also give itself) and prints what that returns. A denied or\n"+
		"cancelled approval, or an execute refused with ACTION_DENIED, prints the denial ({\"denial\": {...}}\n"+
		"with -o json) and exits 2; still pending after D, it prints the pending result and exits 2.")
	af := addActionFlags(fs)
	timeout := fs.Int("timeout-ms", 0, "wait at most this long for the tool (default: the action's, at most 5m)")
	dry := fs.Bool("dry-run", false, "check and record the execution without running it")
	key := fs.String("idempotency-key", "", "an execute repeated with this key answers the first one's result")
	approvalID := fs.String("approval", "", "run under this approval (the approval_id of a pending_approval result); the request must be the approved one")
	wait := fs.Duration("wait", 0, "held for approval: wait up to this long for the operator's decision, then run or print the denial (0: do not wait)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *timeout < 0 {
		return usagef(cmd, "--timeout-ms must not be negative")
	}
	if *wait < 0 {
		return usagef(cmd, "--wait must not be negative")
	}
	cl, req, err := af.request(c, cmd, carp.OpExecute)
	if err != nil {
		return err
	}
	if *timeout > 0 || *dry {
		req.ExecutionOptions = &carp.ExecutionOptions{TimeoutMS: *timeout, DryRun: *dry}
	}
	req.IdempotencyKey = *key
	req.ApprovalID = *approvalID
	res, err := cl.CarpExecute(c.ctx, req)
	deadline := time.Now().Add(*wait)
	resent := map[string]bool{} // the approvals the execute was sent again under
	// Held: wait for the decision, then send the execute again under the
	// approval; again when that one is held at a new checkpoint, as long
	// as the wait lasts.
	for err == nil && *wait > 0 && res.Status == carp.StatusPendingApproval && res.Approval != nil {
		id := res.Approval.ApprovalID
		if resent[id] {
			break // held again at an approval it already ran under: nothing more to wait for
		}
		rem := time.Until(deadline)
		if rem > time.Second {
			rem = rem.Round(time.Second)
		}
		fmt.Fprintf(c.stderr, "wacp carp execute: execution %s is held at checkpoint %s (%s); waiting up to %s for an operator's decision\n",
			res.ExecutionID, id, orDash(res.Approval.CheckpointPending.CheckpointType), max(rem, 0).Round(time.Millisecond))
		ref, werr := c.awaitApproval(cl, id, deadline)
		if werr != nil {
			return werr
		}
		switch ref.Status {
		case approval.StatusApproved:
		case approval.StatusDenied, approval.StatusCancelled:
			if err := c.printDenial(refDenial(ref)); err != nil {
				return err
			}
			return exitError(2)
		default: // still pending at the deadline
			res.Approval = &ref
			if err := c.printResult(res); err != nil {
				return err
			}
			return exitError(2)
		}
		resent[id] = true
		fresh := cl.NewCarpRequest(carp.OpExecute, req.Requester.AgentID)
		req.RequestID, req.Timestamp, req.ApprovalID = fresh.RequestID, fresh.Timestamp, id
		res, err = cl.CarpExecute(c.ctx, req)
	}
	if err != nil {
		if d := carpDenial(err); d != nil {
			if perr := c.printDenial(d); perr != nil {
				return perr
			}
		}
		return err
	}
	if err := c.printResult(res); err != nil {
		return err
	}
	switch res.Status {
	case carp.StatusSuccess, carp.StatusPartialSuccess:
		return nil
	case carp.StatusPendingApproval:
		return exitError(2)
	}
	return exitError(1)
}

// printResult prints an execution's result: the table, then its output
// (indented when it is JSON).
func (c *cli) printResult(res carp.ExecutionResult) error {
	var output string
	if res.Result != nil {
		output = string(res.Result.Output)
		var b bytes.Buffer
		if json.Indent(&b, res.Result.Output, "", "  ") == nil {
			output = b.String()
		}
	}
	return c.printBody(res, func(w io.Writer) { printExecution(w, res) }, output)
}

// awaitApproval waits until checkpoint id is decided or deadline passes
// (each wait at most wire.MaxWait, the daemon's bound) and returns where
// it stands.
func (c *cli) awaitApproval(cl *client.Client, id string, deadline time.Time) (approval.Ref, error) {
	for {
		d := min(time.Until(deadline), wire.MaxWait)
		if d <= 0 {
			return cl.CarpApproval(c.ctx, id, 0)
		}
		ref, err := cl.CarpApproval(c.ctx, id, d)
		if err != nil || ref.Status != approval.StatusPending {
			return ref, err
		}
	}
}

// refDenial is the denial of a checkpoint that was denied or cancelled,
// with the fields of the daemon's ACTION_DENIED details.denial.
func refDenial(ref approval.Ref) map[string]any {
	d := map[string]any{"approval_id": ref.ApprovalID, "execution_id": ref.ExecutionID, "status": ref.Status,
		"reason": ref.Reason, "digest": ref.Digest, "checkpoint_type": ref.CheckpointPending.CheckpointType}
	if ref.Outcome != "" {
		d["outcome"] = string(ref.Outcome)
	}
	if ref.DecidedBy != "" {
		d["decided_by"] = ref.DecidedBy
	}
	return d
}

// carpDenial returns the details.denial of an ACTION_DENIED refusal, or
// nil.
func carpDenial(err error) map[string]any {
	var we *client.Error
	if !errors.As(err, &we) || we.Code != carp.CodeActionDenied {
		return nil
	}
	d, _ := we.Details["denial"].(map[string]any)
	return d
}

// denialOrder is the order denial fields are printed in as text; others
// follow by name.
var denialOrder = []string{"status", "approval_id", "execution_id", "outcome", "decided_by", "reason", "checkpoint_type", "digest"}

// printDenial prints denial d: {"denial": d} with -o json, else its
// fields one a line.
func (c *cli) printDenial(d map[string]any) error {
	return c.print(map[string]any{"denial": d}, func(w io.Writer) {
		fmt.Fprintln(w, "denied\tthe action does not run")
		rest := make([]string, 0, len(d))
		for k := range d {
			if !slices.Contains(denialOrder, k) {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		for _, k := range append(slices.Clone(denialOrder), rest...) {
			if v, ok := d[k]; ok && v != nil && v != "" {
				fmt.Fprintf(w, "%s\t%v\n", k, v)
			}
		}
	})
}

func printExecution(w io.Writer, res carp.ExecutionResult) {
	kv(w, "status", res.Status, "execution_id", res.ExecutionID)
	if a := res.Approval; a != nil {
		kv(w, "approval", fmt.Sprintf("%s %s (%s)", a.ApprovalID, a.Status, orDash(a.CheckpointPending.CheckpointType)))
	}
	if r := res.Result; r != nil {
		kv(w, "output_hash", r.OutputHash, "output_type", r.OutputType)
	}
	if e := res.Error; e != nil {
		msg := e.Code + ": " + e.Message
		if e.Retriable {
			msg += " (retriable)"
		}
		kv(w, "error", msg)
	}
	kv(w, "duration_ms", strconv.FormatFloat(res.Metrics.DurationMS, 'f', -1, 64))
	for _, s := range res.SideEffects {
		kv(w, "side effect", fmt.Sprintf("%s %s (reversible: %t)", s.Type, s.Target, s.Reversible))
	}
}

func carpValidate(c *cli, args []string) error {
	const cmd = "carp validate"
	fs := c.flags(cmd, cmd+" --resolution R --action ID [--params JSON | --param k=v ...] [--agent ID]\n\n"+
		"Checks an execute of the action without running it (nothing is counted): prints valid, or each\n"+
		"violation (its CARP code, the parameter, why) and exits 2.")
	af := addActionFlags(fs)
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, req, err := af.request(c, cmd, carp.OpValidate)
	if err != nil {
		return err
	}
	res, err := cl.CarpValidate(c.ctx, req)
	if err != nil {
		return err
	}
	err = c.print(res, func(w io.Writer) {
		if res.Valid {
			fmt.Fprintln(w, "valid")
			return
		}
		fmt.Fprintln(w, "CODE\tPATH\tMESSAGE")
		for _, v := range res.Violations {
			fmt.Fprintf(w, "%s\t%s\t%s\n", v.Code, orDash(v.Path), strings.Join(strings.Fields(v.Message), " "))
		}
	})
	if err == nil && !res.Valid {
		return exitError(2)
	}
	return err
}

func carpRespond(c *cli, args []string) error {
	const cmd = "carp respond"
	fs := c.flags(cmd, cmd+" --checkpoint ID [--atlas ID] (--answer QID=VALUE ... | --answers FILE|-) [--agent ID]\n\n"+
		"Answers a steward checkpoint a resolution shows pending (its checkpoints). Each --answer's VALUE is\n"+
		"JSON when it parses as JSON (true, 3, {\"k\":1}, \"quoted\"), else the text as a string; --answers reads\n"+
		"a JSON object of answers by question_id from FILE or, with -, stdin. Prints the outcome (passed,\n"+
		"warned, logged), each answer's check and what is still pending; -o json prints the CheckpointResult.\n"+
		"Answers that do not pass are refused (exit 2): CONSTRAINT_VIOLATED (answer again) or ACTION_DENIED\n"+
		"(the checkpoint blocks), with each answer's result in the error's details (-o json).")
	checkpoint := fs.String("checkpoint", "", "the checkpoint_id to answer (required)")
	atlasID := fs.String("atlas", "", "the checkpoint's atlas_id, when several atlases have the checkpoint_id")
	file := fs.String("answers", "", "a JSON object of answers by question_id, from this file or - (stdin)")
	agent := fs.String("agent", "", "requester agent_id (default: the workspace's agent)")
	var answer strs
	fs.Var(&answer, "answer", "one answer, QID=VALUE: JSON if VALUE parses as JSON, else a string; repeatable")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(cmd, [2]string{*checkpoint, "--checkpoint is required (a checkpoint_id of the resolution's checkpoints)"}); err != nil {
		return err
	}
	answers, err := c.answers(cmd, answer, *file)
	if err != nil {
		return err
	}
	cl, req, err := c.carpRequest(carp.OpRespond, *agent)
	if err != nil {
		return err
	}
	req.CheckpointResponse = &carp.CheckpointResponse{CheckpointID: *checkpoint, AtlasID: *atlasID, Answers: answers}
	res, err := cl.CarpRespond(c.ctx, req)
	if err != nil {
		return err
	}
	return c.print(res, func(w io.Writer) { printCheckpointResult(w, res) })
}

// answers returns the answers of the --answer flags or of --answers (a
// file, or - for stdin): one of the two, not both.
func (c *cli) answers(cmd string, flags []string, file string) (map[string]json.RawMessage, error) {
	switch {
	case file != "" && len(flags) > 0:
		return nil, usagef(cmd, "give the answers as --answer QID=VALUE or as --answers FILE, not both")
	case file == "" && len(flags) == 0:
		return nil, usagef(cmd, "no answers: give --answer QID=VALUE (repeatable) or --answers FILE|-")
	}
	answers := map[string]json.RawMessage{}
	if file != "" {
		b, err := c.readFileOrStdin(file)
		if err != nil {
			return nil, fmt.Errorf("read the answers: %w", err)
		}
		if err := json.Unmarshal(b, &answers); err != nil || answers == nil {
			return nil, usagef(cmd, "--answers %s is not a JSON object of answers by question_id", file)
		}
		return answers, nil
	}
	for _, a := range flags {
		qid, v, ok := strings.Cut(a, "=")
		if !ok || qid == "" {
			return nil, usagef(cmd, "--answer %q is not QID=VALUE", a)
		}
		if _, dup := answers[qid]; dup {
			return nil, usagef(cmd, "--answer %s is given twice", qid)
		}
		if json.Valid([]byte(v)) {
			answers[qid] = json.RawMessage(v)
			continue
		}
		b, _ := json.Marshal(v) // not JSON: the text, as a string
		answers[qid] = b
	}
	return answers, nil
}

// readFileOrStdin reads name, or stdin when name is "-".
func (c *cli) readFileOrStdin(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(c.stdin)
	}
	return os.ReadFile(name)
}

func printCheckpointResult(w io.Writer, res carp.CheckpointResult) {
	kv(w, "outcome", res.Outcome, "checkpoint", res.CheckpointID, "atlas", res.AtlasRef, "instance_id", res.InstanceID)
	e := res.Effects
	kv(w, "unlocked", strings.Join(e.UnlockedCapabilities, ", "), "locked", strings.Join(e.LockedCapabilities, ", "),
		"contexts", strings.Join(e.InjectedContexts, ", "), "allows", strings.Join(e.AllowActions, ", "),
		"denies", strings.Join(e.DenyActions, ", "))
	if e.Guidance {
		kv(w, "guidance", "yes (in the next resolution)")
	}
	for _, x := range res.Warnings {
		kv(w, "warning", x.Code+": "+x.Message)
	}
	if len(res.Results) > 0 {
		fmt.Fprintln(w)
		printAnswerResults(w, res.Results)
	}
	if len(res.Pending) > 0 {
		fmt.Fprintln(w)
		printPrompts(w, res.Pending)
	}
}

func printAnswerResults(w io.Writer, rs []steward.AnswerResult) {
	fmt.Fprintln(w, "QUESTION\tVALID\tREASON")
	for _, r := range rs {
		why := r.Reason
		if r.Message != "" {
			why += ": " + r.Message
		}
		fmt.Fprintf(w, "%s\t%t\t%s\n", r.QuestionID, r.Valid, orDash(strings.TrimPrefix(why, ": ")))
	}
}

// printPrompts prints the steward checkpoints that wait for the agent and
// their questions.
func printPrompts(w io.Writer, ps []steward.Prompt) {
	fmt.Fprintln(w, "CHECKPOINT\tSTATUS\tMODE\tATLAS\tQUESTIONS")
	for _, p := range ps {
		var qs []string
		for _, q := range p.Questions {
			qs = append(qs, q.QuestionID+" ("+q.ResponseType+")")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", p.CheckpointID, p.Status, p.Mode, p.AtlasRef, orDash(strings.Join(qs, ", ")))
	}
}

// carpRequest dials and returns a CARP request of op from the client's
// workspace's agent: agent, else the workspace's agent field.
func (c *cli) carpRequest(op, agent string) (*client.Client, carp.Request, error) {
	cl, err := c.dial()
	if err != nil {
		return nil, carp.Request{}, err
	}
	if agent == "" {
		w, err := cl.GetWorkspace(c.ctx, "")
		if err != nil {
			return nil, carp.Request{}, fmt.Errorf("read the workspace's agent: %w", err)
		}
		agent = w.Agent
	}
	return cl, cl.NewCarpRequest(op, agent), nil
}

// carpExit returns the exit code of a CARP refusal (err's code one of
// §5.1's), or 0 when err is none: 2 for a refusal by the protocol (the
// request, its authority, its resolution or the action's policy), 1 for a
// failure (INTERNAL_ERROR, EXECUTION_FAILED, TIMEOUT, SERVICE_UNAVAILABLE).
// The client does not know CARP's codes: wire's table has none of them.
func carpExit(err error) int {
	var we *client.Error
	if !errors.As(err, &we) {
		return 0
	}
	if _, ok := carp.Codes()[we.Code]; !ok {
		return 0
	}
	switch we.Code {
	case carp.CodeInternalError, carp.CodeExecutionFailed, carp.CodeTimeout, carp.CodeServiceUnavailable:
		return 1
	}
	return 2
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// The human highway for operators (a user token): the terminal UI, and
// headless commands for scripts.

// highwayCmd is "wacp highway": the terminal UI when a person is at a
// terminal, else (--no-tui, or stdin or stdout not a terminal) the
// headless denial; or one of its subcommands.
func highwayCmd(c *cli, args []string) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return sub("highway", map[string]func(*cli, []string) error{
			"queue": highwayQueue, "get": highwayGet, "resolve": highwayResolve, "wait": highwayWait,
			"approvals": highwayApprovals, "mode": highwayMode,
			"inject":      sendCmd("highway inject", (*client.Client).Inject),
			"escalations": highwayEscalations, "respond": highwayRespond,
			// A person's own actions, under the user's capabilities.
			"create":     func(c *cli, a []string) error { return createAs(c, a, true) },
			"abort":      workspaceOpAs("abort", true),
			"suspend":    workspaceOpAs("suspend", true),
			"resume":     workspaceOpAs("resume", true),
			"transfer":   func(c *cli, a []string) error { return transferAs(c, a, true) },
			"budget":     func(c *cli, a []string) error { return budgetAs(c, a, true) },
			"user-state": func(c *cli, a []string) error { return userStateAs(c, a, true) },
		})(c, args)
	}
	const cmd = "highway"
	fs := c.flags(cmd, cmd+" [--no-tui] [--wait D] | highway queue|get|resolve|wait|approvals|mode ...")
	noTUI := fs.Bool("no-tui", false, "no operator is present: deny the gates pending now (reject by the protocol) and exit 2 if any")
	wait := fs.Duration("wait", 0, "headless: wait this long for a first gate when none is pending")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	if !*noTUI && c.interactive() && runTUI != nil {
		return runTUI(c, cl)
	}
	return c.denyPending(cl, *wait)
}

// runTUI runs the operator's terminal UI (highway_tui.go).
var runTUI func(c *cli, cl *client.Client) error

// interactive reports whether a person can answer: stdin and stdout are
// terminals.
func (c *cli) interactive() bool {
	in, ok1 := c.stdin.(*os.File)
	out, ok2 := c.stdout.(*os.File)
	return ok1 && ok2 && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd()))
}

// denial is what wacp highway prints for a gate it denied with no
// operator present: {"denial": {...}} under -o json.
type denial struct {
	Denial struct {
		Gate    string           `json:"gate"`
		Type    highway.GateType `json:"type"`
		Subject json.RawMessage  `json:"subject"`
		Reason  string           `json:"reason"`
		Actor   string           `json:"actor"`
	} `json:"denial"`
}

// denyPending denies every gate pending now (waiting up to wait for a
// first one): each needs a person and none is present, so each is
// rejected by the protocol, never bypassed. It prints one denial per gate
// and ends with exit 2 when it denied any.
func (c *cli) denyPending(cl *client.Client, wait time.Duration) error {
	gates, err := cl.HighwayQueue(c.ctx, false)
	for deadline := time.Now().Add(wait); err == nil && len(gates) == 0 && time.Now().Before(deadline); {
		gates, err = c.nextGates(cl, time.Until(deadline))
	}
	if err != nil {
		return err
	}
	if len(gates) == 0 {
		fmt.Fprintln(c.stderr, "wacp highway: no gate is pending")
		return nil
	}
	denied := 0
	for _, g := range gates {
		out, err := cl.ResolveGate(c.ctx, g.ID, highway.Deny, nil)
		var we *client.Error
		if errors.As(err, &we) && we.Code == "invalid_transition" {
			continue // resolved meanwhile (its fallback, the protocol, another operator)
		}
		if err != nil {
			return err
		}
		denied++
		var d denial
		d.Denial.Gate, d.Denial.Type, d.Denial.Subject = out.ID, out.Type, out.Subject
		d.Denial.Reason, d.Denial.Actor = out.Resolution.Reason, out.Resolution.Actor
		if c.format == "json" {
			if err := c.jsonLine(d); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(c.stdout, "denied %s gate %s (%s, no operator present): %s\n", out.Type, out.ID, out.Resolution.Actor, out.Subject)
	}
	if denied == 0 {
		return nil
	}
	return exitError(2)
}

// nextGates waits up to d (a second at most: an entry may come before the
// subscription) for a gate_triggered entry on the live trail and returns
// the queue then.
func (c *cli) nextGates(cl *client.Client, d time.Duration) ([]highway.Gate, error) {
	ctx, cancel := context.WithTimeout(c.ctx, min(d, time.Second))
	defer cancel()
	errSeen := errors.New("seen")
	err := cl.TailTrail(ctx, "*."+string(trail.EventGateTriggered), func(trail.Entry) error { return errSeen })
	if err != nil && !errors.Is(err, errSeen) {
		return nil, err
	}
	return cl.HighwayQueue(c.ctx, false)
}

func highwayQueue(c *cli, args []string) error {
	const cmd = "highway queue"
	fs := c.flags(cmd, cmd+" [--all]")
	all := fs.Bool("all", false, "every gate, resolved ones too, by trigger time")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	gates, err := cl.HighwayQueue(c.ctx, *all)
	if err != nil {
		return err
	}
	return c.print(gates, func(w io.Writer) {
		fmt.Fprintln(w, "GATE\tTYPE\tSUBJECT\tWORKSPACE\tTRIGGERED\tDEADLINE\tRESOLUTION")
		for _, g := range gates {
			res := "pending"
			if r := g.Resolution; r != nil {
				res = string(r.Action) + " by " + r.Actor
			}
			deadline := "none"
			if g.Deadline != nil {
				deadline = *g.Deadline
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Type, g.SubjectID, deref(g.Workspace), g.Timestamp, deadline, res)
		}
	})
}

func highwayGet(c *cli, args []string) error {
	const cmd = "highway get"
	fs := c.flags(cmd, cmd+" GATE")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	g, err := cl.Gate(c.ctx, pos[0])
	if err != nil {
		return err
	}
	return c.printGate(g)
}

// printGate prints a gate: its fields, then its subject as the daemon
// sent it.
func (c *cli) printGate(g highway.Gate) error {
	return c.printBody(g, func(w io.Writer) {
		res := "pending"
		if r := g.Resolution; r != nil {
			res = string(r.Action) + " by " + r.Actor
			if r.Outcome != "" {
				res += ", outcome " + r.Outcome
			}
			if r.Reason != "" {
				res += " (" + r.Reason + ")"
			}
		}
		timeout := "none (waits indefinitely)"
		if g.Timeout != nil {
			timeout = *g.Timeout + ", then " + string(*g.Fallback)
		}
		kv(w, "gate", g.ID, "type", string(g.Type), "subject", g.SubjectID, "digest", g.SubjectDigest,
			"workspace", deref(g.Workspace), "task", deref(g.TaskRef), "graph", deref(g.GraphRef),
			"triggered", g.Timestamp, "timeout", timeout, "queue position", strconv.Itoa(g.QueuePosition),
			"irreversible", strconv.FormatBool(g.Irreversible), "resolution", res)
	}, string(g.Subject))
}

func highwayResolve(c *cli, args []string) error {
	const cmd = "highway resolve"
	fs := c.flags(cmd, cmd+" GATE --approve | --reject | --modify JSON | --deny [--outcome O] [--confirm]\n\n"+
		"Answers a pending gate. An operator's checkpoint (a CARP execute held for approval) takes an outcome:\n"+
		"--approve with continue (the default) or per_step (every later step needs its own approval), --modify\n"+
		"'{\"payload\":{\"paths\":[...],\"uses\":n,\"ttl_seconds\":n}}' (continue_modified), --reject with deny (the\n"+
		"default) or halt (the workflow stops until an operator resumes it). --outcome alone implies its answer.\n"+
		"Approving an irreversible action needs --confirm as well.")
	approve := fs.Bool("approve", false, "approve: the transition proceeds as proposed")
	reject := fs.Bool("reject", false, "reject: the transition is cancelled")
	modify := fs.String("modify", "", "modify: a JSON object of the fields changed, then approve")
	deny := fs.Bool("deny", false, "no operator decides: rejected by the protocol (no_operator_present)")
	outcome := fs.String("outcome", "", "a checkpoint's outcome: continue, per_step, continue_modified, deny or halt")
	confirm := fs.Bool("confirm", false, "the second confirmation approving an irreversible checkpoint needs")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var action highway.Action
	var mods json.RawMessage
	n := 0
	for _, o := range []struct {
		set bool
		a   highway.Action
	}{{*approve, highway.Approve}, {*reject, highway.Reject}, {*modify != "", highway.Modify}, {*deny, highway.Deny}} {
		if o.set {
			action, n = o.a, n+1
		}
	}
	if *outcome != "" {
		implied, ok := outcomeAction[approval.Outcome(*outcome)]
		switch {
		case !ok:
			return usagef(cmd, "--outcome is continue, per_step, continue_modified, deny or halt, not %q", *outcome)
		case n == 0 && implied == highway.Modify:
			return usagef(cmd, "--outcome continue_modified needs --modify with the modified envelope")
		case n == 0:
			action, n = implied, 1
		case action == highway.Deny:
			return usagef(cmd, "--deny takes no outcome: no operator decides")
		}
	}
	if n != 1 {
		return usagef(cmd, "give exactly one of --approve, --reject, --modify JSON, --deny")
	}
	if action == highway.Modify {
		if !json.Valid([]byte(*modify)) {
			return usagef(cmd, "--modify takes a JSON object of the fields changed, e.g. '{\"priority\":\"high\"}'")
		}
		mods = json.RawMessage(*modify)
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	g, err := cl.Resolve(c.ctx, highway.ResolveRequest{GateID: pos[0], Action: action, Modifications: mods,
		Outcome: *outcome, Confirm: *confirm})
	if err != nil {
		return err
	}
	return c.printGate(g)
}

// outcomeAction is the gate answer each checkpoint outcome is given with.
var outcomeAction = map[approval.Outcome]highway.Action{
	approval.OutcomeContinue: highway.Approve, approval.OutcomePerStep: highway.Approve,
	approval.OutcomeModified: highway.Modify,
	approval.OutcomeDeny:     highway.Reject, approval.OutcomeHalt: highway.Reject,
}

// highwayWait waits until gate GATE is resolved and prints it; exit 0 when
// its transition went on (approve, modify), 2 when it did not.
func highwayWait(c *cli, args []string) error {
	const cmd = "highway wait"
	fs := c.flags(cmd, cmd+" GATE [--for D]")
	d := fs.Duration("for", 0, "give up after this long (exit 1); 0 waits until the gate is resolved")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	ctx, cancel := c.ctx, context.CancelFunc(func() {})
	if *d > 0 {
		ctx, cancel = context.WithTimeout(c.ctx, *d)
	}
	defer cancel()
	id := pos[0]
	resolvedNow := errors.New("resolved")
	for {
		g, err := cl.Gate(c.ctx, id)
		if err != nil {
			return err
		}
		if !g.Pending() {
			if err := c.printGate(g); err != nil {
				return err
			}
			if a := g.Resolution.Action; a == highway.Approve || a == highway.Modify {
				return nil
			}
			return exitError(2)
		}
		// Wait for the gate's gate_resolved entry, then look again; at
		// least every second, as the entry may come before the
		// subscription.
		tick, stop := context.WithTimeout(ctx, time.Second)
		err = cl.TailTrail(tick, "*."+string(trail.EventGateResolved), func(e trail.Entry) error {
			var b struct {
				GateID string `json:"gate_id"`
			}
			if json.Unmarshal(e.Body, &b) == nil && b.GateID == id {
				return resolvedNow
			}
			return nil
		})
		stop()
		switch {
		case errors.Is(err, resolvedNow):
		case err != nil:
			return err
		case c.ctx.Err() != nil:
			return c.ctx.Err()
		case ctx.Err() != nil:
			return fmt.Errorf("gate %s is still pending after %s", id, *d)
		}
	}
}

func highwayEscalations(c *cli, args []string) error {
	const cmd = "highway escalations"
	fs := c.flags(cmd, cmd+" [--all]")
	all := fs.Bool("all", false, "every escalation, resolved ones too")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	xs, err := cl.Escalations(c.ctx, *all)
	if err != nil {
		return err
	}
	return c.print(xs, func(w io.Writer) {
		fmt.Fprintln(w, "ESCALATION\tWORKSPACE\tOWNER\tDELIVERY\tRAISED\tDEADLINE\tRESOLUTION\tREASON")
		for _, x := range xs {
			res, deadline := "pending", "none"
			if r := x.Resolution; r != nil {
				res = string(r.Response) + " by " + r.Actor
			}
			if x.Deadline != nil {
				deadline = *x.Deadline
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.ID, x.Workspace, x.Owner, x.Delivery, x.Timestamp, deadline, res, x.Reason)
		}
	})
}

// highwayRespond answers an escalation.
func highwayRespond(c *cli, args []string) error {
	const cmd = "highway respond"
	fs := c.flags(cmd, cmd+" ESCALATION --envelope TEXT [--type T] | --abort | --delegate")
	text := fs.String("envelope", "", "answer with an envelope carrying this text to the blocked workspace")
	typ := fs.String("type", "", "the answer's envelope type (default feedback)")
	abort := fs.Bool("abort", false, "fail the workspace (aborted_by_human)")
	delegate := fs.Bool("delegate", false, "hand it to the coordinator")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var resp highway.Response
	var answer *wire.EscalationAnswer
	n := 0
	if *text != "" {
		resp, n = highway.RespondEnvelope, n+1
		answer = &wire.EscalationAnswer{Type: *typ}
		answer.Payload.Content = *text
	}
	if *abort {
		resp, n = highway.RespondAbort, n+1
	}
	if *delegate {
		resp, n = highway.RespondDelegation, n+1
	}
	if n != 1 {
		return usagef(cmd, "give exactly one of --envelope TEXT, --abort, --delegate")
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	x, err := cl.RespondEscalation(c.ctx, pos[0], resp, answer)
	if err != nil {
		return err
	}
	return c.print(x, func(w io.Writer) {
		kv(w, "escalation", x.ID, "workspace", x.Workspace, "response", string(x.Resolution.Response),
			"ref", x.Resolution.Ref, "actor", x.Resolution.Actor)
	})
}

// Command wacp is the command-line client of wacpd, for agents,
// coordinators, auditors and operators: a thin shell over package client.
// Run "wacp -h" for the commands.
//
// Exit codes (wire-v1 §1): 0 done, 1 usage or internal error, 2 refused by
// the protocol (a rejection, a denial, a NATS permission violation, a broken
// trail or TRACE chain, a CARP refusal such as ACTION_NOT_PERMITTED or
// RATE_LIMITED), 5 daemon unreachable. trace diff, like diff(1), exits 1
// when the sessions differ. carp execute exits 1 when the execution failed
// (status failed, timeout or cancelled) and 2 when it is held for approval
// (pending_approval, also when still pending after --wait) or an
// operator's checkpoint denied it (the denial printed, {"denial": ...}
// under -o json: a denied or cancelled approval, or ACTION_DENIED); carp
// validate exits 2 when the action is not valid; carp respond exits 2 when
// the answers do not pass (CONSTRAINT_VIOLATED, ACTION_DENIED).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wacpd/wacpd/client"
)

const usage = `usage: wacp [global flags] <command> [flags] [args]

Finds the daemon through -url/-token, else $WACP_URL/$WACP_TOKEN, else the
data dir's wacpd.json and admin.token. An agent acts as its own workspace:
-ws or $WACP_WORKSPACE.

commands:
  info                                   daemon version, root workspace, taxonomy
  workspace create --role R [flags]      create a workspace; prints it and its agent token
  workspace get [ID]                     show a workspace (default: your own)
  workspace list [--parent P] [--state S]
  workspace abort|suspend|resume ID [--reason R]
  workspace transfer ID --owner USER [--reason R]   give a workspace to another user
  workspace budget ID --budget JSON      raise limits of a workspace's budget
  workspace grant ID --target WS --reason R   make WS visible to workspace ID
  workspace priority ID P                change an active or blocked workspace's priority
  group abort GROUP [--reason R]         abort a group's workspaces (coordinator)
  group priority GROUP P                 change the priority of a group's active and blocked workspaces
  rights list [WS]                       port rights WS (default: your own) holds and those held to it
  rights revoke RIGHT_ID [--reason R]    revoke a port right (coordinator)
  user state USER active|suspended|blocked|deactivated [--reason R] [--condition C]
  user capabilities USER [--grant C,...] [--revoke C,...]
  envelope send --to WS --type T [--content C | --file F | -] [flags]
  inbox next [--wait D] [--no-ack]       take the next envelope of your inbox, print it, acknowledge it
  inbox ack ID                           acknowledge an envelope (it leaves your inbox)
  checkpoint create --type T --intent I --status S --confidence C [flags]
  checkpoint get ID
  checkpoint list [--workspace WS] [--after ID] [--limit N]
  checkpoint head [--workspace WS] [--final]
  signal emit TYPE [--reason R] [--ref REF]
  integrate WS --decision accept|revise|reject [--strategy S] [--mode normal|salvage]
  watch [--durable NAME] [--all] [--workspace WS]   follow signals until Ctrl-C
  trail read [--after ID] [--limit N] [--workspace WS] [--type T] [--actor A] [--since T] [--until T]
  trail aggregate [--group F] [--sum body.PATH] [filters as read]   count, group and sum entries
  trail tail [-f] [--workspace WS] [--type T]  follow the live trail as a timeline until Ctrl-C
  trail verify [--workspace WS]          recompute the hash chains
  trail verify --bundle FILE | --dir DATADIR [--public-key K]   verify offline, no daemon
  trail export [-f FILE]                 write a verifiable bundle of the signed trail
  trail prove CHECKPOINT_ID [--public-key K]   prove a checkpoint is in the signed trail
  trail replay                           rebuild states from the trail; compare with the live state
  trace export [--session S] [--out FILE] [--sth FILE]   a session's TRACE events as JSONL (default: your own)
  trace verify FILE                      check a session's TRACE export (JSONL) offline, no daemon; exit 2 if broken
  trace diff A B                         compare two sessions' TRACE exports, ids and times left out; exit 1 if they differ
  task create --file F | -               create tasks (a task.create body); each waits at task_approval
  task get ID [--transitive]             a task; with its transitive dependencies and dependents
  task list [--graph G] [--status S] [--ready]
  task bind ID --workspace WS            bind a pending task to an idle workspace
  task cancel ID [--reason R]            cancel a task (aborts its bound workspace)
  task retry ID                          a failed task back to pending
  task graph ID                          a task graph and its tasks
  highway                                the operator's terminal UI (a user token); headless: denies what is pending
  highway --no-tui [--wait D]            no operator present: deny the pending gates, exit 2 with the denials
  highway queue [--all]                  the pending gates, FIFO
  highway get GATE                       a gate and its subject
  highway resolve GATE --approve|--reject|--modify JSON|--deny [--outcome O] [--confirm]   O: a checkpoint's continue|per_step|continue_modified|deny|halt; --confirm: approve an irreversible one
  highway approvals [--workspace WS]     sessions' checkpoint mode and envelope, trust, permits, checkpoints
  highway mode WS always|policy|never [--reason R]   a session's checkpoint mode
  highway inject --to WS --type T [--content C | --file F | -]   send an envelope as a person (origin human)
  highway escalations [--all]            the escalations routed to owners
  highway respond ESCALATION --envelope TEXT | --abort | --delegate
  highway wait GATE [--for D]            wait until a gate is resolved; exit 0 if its transition went on, else 2
  highway create|abort|suspend|resume|transfer|budget ...   as "workspace ...", as a person, under the user's capabilities
  highway user-state USER deactivated|active         deactivate or reactivate a user (deactivate_user)
  permit list [--workspace WS]           the permits approvals issued, with their state (a user token)
  permit revoke PERMIT_ID [--reason R]   revoke a permit, at once (a user token)
  trust restore WS BOUNDARY [--reason R]   trust a boundary again after a violation, e.g. tool:file.delete, path:src/a.go (a user token)
  carp resolve --goal TEXT [--risk-tier T] [--hint H]... [--atlas ID]... [--actions PATTERN]...   what context and actions a task may use
  carp execute --resolution R --action ID [--params JSON | --param k=v ...] [--timeout-ms N] [--dry-run] [--idempotency-key K] [--approval ID] [--wait D]
  carp validate --resolution R --action ID [--params JSON | --param k=v ...]   check an execute without running it
  carp respond --checkpoint ID [--atlas ID] (--answer QID=VALUE ... | --answers FILE|-)   answer a steward checkpoint
  mcp                                    serve your workspace's agent contract to an MCP host (an LLM agent) over stdio
  atlas load FILE|DIR                    load or replace an Atlas manifest (coordinator); validated here first
  atlas unload ID                        unload an atlas (coordinator)
  atlas list                             the loaded atlases
  token create --kind user|auditor|tool --name N [--capabilities C,...]   (or NAME instead of --name)
  token revoke --kind user|auditor|tool --name N [--reason R]

"wacp <command> [subcommand] -h" shows a command's flags.

global flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stdin: os.Stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("wacp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&c.opts.URL, "url", "", "daemon NATS URL (default $WACP_URL, else from the data dir)")
	fs.StringVar(&c.opts.Token, "token", "", "bearer token (default $WACP_TOKEN, else the data dir's admin.token)")
	fs.StringVar(&c.opts.DataDir, "data", "", "daemon data dir (default ./wacp-data)")
	fs.StringVar(&c.opts.Workspace, "ws", "", "workspace to act as (default $WACP_WORKSPACE, else the root)")
	fs.StringVar(&c.opts.Daemon, "daemon", "", "on a deployment of several daemons: call this daemon's own system, audit and highway endpoints (default $WACP_DAEMON, else the home daemon's)")
	fs.StringVar(&c.format, "o", "table", "output: table or json")
	fs.DurationVar(&c.opts.Timeout, "timeout", client.DefaultTimeout, "request timeout")
	if err := fs.Parse(args); err != nil {
		return exitParse(err)
	}
	if c.format != "table" && c.format != "json" {
		return c.fail(usagef("", "-o must be table or json, not %q", c.format))
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 1
	}
	cmd, ok := commands[fs.Arg(0)]
	if !ok {
		return c.fail(usagef("", "unknown command %q; run 'wacp -h' for the list", fs.Arg(0)))
	}
	defer c.close()
	return c.fail(cmd(c, fs.Args()[1:]))
}

// commands maps each command to its function; a command with subcommands
// dispatches again.
var commands = map[string]func(*cli, []string) error{
	"info":       infoCmd,
	"workspace":  sub("workspace", map[string]func(*cli, []string) error{"create": workspaceCreate, "get": workspaceGet, "list": workspaceList, "abort": workspaceOp("abort"), "suspend": workspaceOp("suspend"), "resume": workspaceOp("resume"), "transfer": workspaceTransfer, "budget": workspaceBudget, "grant": workspaceGrant, "priority": workspacePriority}),
	"group":      sub("group", map[string]func(*cli, []string) error{"abort": groupAbort, "priority": groupPriority}),
	"rights":     sub("rights", map[string]func(*cli, []string) error{"list": rightsList, "revoke": rightsRevoke}),
	"user":       sub("user", map[string]func(*cli, []string) error{"state": userState, "capabilities": userCapabilities}),
	"envelope":   sub("envelope", map[string]func(*cli, []string) error{"send": envelopeSend}),
	"inbox":      sub("inbox", map[string]func(*cli, []string) error{"next": inboxNext, "ack": inboxAck}),
	"checkpoint": sub("checkpoint", map[string]func(*cli, []string) error{"create": checkpointCreate, "get": checkpointGet, "list": checkpointList, "head": checkpointHead}),
	"signal":     sub("signal", map[string]func(*cli, []string) error{"emit": signalEmit}),
	"integrate":  integrateCmd,
	"watch":      watchCmd,
	"trail":      sub("trail", map[string]func(*cli, []string) error{"read": trailRead, "aggregate": trailAggregate, "tail": trailTail, "verify": trailVerify, "export": trailExport, "prove": trailProve, "replay": trailReplay, "quarantine": trailQuarantine}),
	"token":      sub("token", map[string]func(*cli, []string) error{"create": tokenCreate, "revoke": tokenRevoke}),
	"task": sub("task", map[string]func(*cli, []string) error{"create": taskCreate, "get": taskGet, "list": taskList,
		"bind": taskBind, "cancel": taskCancel, "retry": taskRetry, "graph": taskGraph}),
	"highway": highwayCmd,
	"trace": sub("trace", map[string]func(*cli, []string) error{
		"verify": traceVerify,
		"diff":   traceDiff,
		"export": traceExport,
	}),
	"carp":   sub("carp", map[string]func(*cli, []string) error{"resolve": carpResolve, "execute": carpExecute, "validate": carpValidate, "respond": carpRespond}),
	"atlas":  sub("atlas", map[string]func(*cli, []string) error{"load": atlasLoad, "unload": atlasUnload, "list": atlasList}),
	"permit": sub("permit", map[string]func(*cli, []string) error{"list": permitList, "revoke": permitRevoke}),
	"trust":  sub("trust", map[string]func(*cli, []string) error{"restore": trustRestore}),
	"mcp":    mcpCmd,
}

// sub returns a command that dispatches to its subcommands.
func sub(name string, subs map[string]func(*cli, []string) error) func(*cli, []string) error {
	return func(c *cli, args []string) error {
		if len(args) == 0 {
			return usagef(name, "needs a subcommand: %s", keys(subs))
		}
		if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			fmt.Fprintf(c.stderr, "usage: wacp %s <%s> [flags]; wacp %s <subcommand> -h for its flags\n",
				name, strings.ReplaceAll(keys(subs), ", ", "|"), name)
			return flag.ErrHelp
		}
		f, ok := subs[args[0]]
		if !ok {
			return usagef(name, "unknown subcommand %q; one of %s", args[0], keys(subs))
		}
		return f(c, args[1:])
	}
}

// exitParse returns the exit code of a flag parse error, which the flag
// package has already printed with the usage.
func exitParse(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 1
}

// fail prints err as the user should see it and returns the exit code.
func (c *cli) fail(err error) int {
	var (
		ue *usageError
		xe exitError
	)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &xe):
		return int(xe)
	}
	code, hint := 1, ""
	if errors.As(err, &ue) {
		err = ue
	} else {
		if errors.Is(err, client.ErrUnreachable) {
			hint = "is wacpd running? start it with `go run ./cmd/wacpd`, or set WACP_URL / -data"
		}
		if x := carpExit(err); x != 0 {
			code = x
		} else if x := client.ExitCode(err); x != 0 {
			code = x
		}
	}
	if c.format == "json" {
		c.failJSON(err, ue != nil, hint, code)
		return code
	}
	fmt.Fprintln(c.stderr, "wacp:", err)
	if hint != "" {
		fmt.Fprintln(c.stderr, "hint:", hint)
	}
	return code
}

// jsonError is an error as `wacp -o json` prints it on stderr: the wire
// contract's error body (code, message, details), with the CLI's exit code
// and hint. Errors that did not come from the daemon have the code "usage"
// (bad arguments) or "client" (the daemon was not reached or the reply was
// unreadable).
type jsonError struct {
	Error struct {
		Code     string         `json:"code"`
		Message  string         `json:"message"`
		Details  map[string]any `json:"details"`
		Hint     string         `json:"hint,omitempty"`
		ExitCode int            `json:"exit_code"`
	} `json:"error"`
}

func (c *cli) failJSON(err error, usage bool, hint string, exit int) {
	var j jsonError
	j.Error.Code, j.Error.Message, j.Error.Details = "client", err.Error(), map[string]any{}
	var we *client.Error
	switch {
	case usage:
		j.Error.Code = "usage"
	case errors.As(err, &we) && we.Code != "":
		j.Error.Code, j.Error.Message = we.Code, we.Message
		if we.Details != nil {
			j.Error.Details = we.Details
		}
	}
	j.Error.Hint, j.Error.ExitCode = hint, exit
	b, _ := json.Marshal(j)
	fmt.Fprintln(c.stderr, string(b))
}

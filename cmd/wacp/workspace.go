package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/workspace"
)

func workspaceCreate(c *cli, args []string) error { return createAs(c, args, false) }

// createAs is "workspace create" (an agent's token: the coordinator or a
// delegate), or with person "highway create" (a user token: the workspace
// is the person's doing, its originator the user).
func createAs(c *cli, args []string, person bool) error {
	cmd := "workspace create"
	if person {
		cmd = "highway create"
	}
	fs := c.flags(cmd, cmd+" --role R [--parent P] [--delegate] [--owner O] [--timeout D] [--priority P] [--group G] [--context JSON] [--visibility ids] [--budget JSON] [--injection ENVELOPE]")
	var req client.CreateRequest
	var context, visibility, budget string
	fs.StringVar(&req.Role, "role", "", "role of the new workspace's agent, e.g. worker (required)")
	fs.StringVar(&req.Parent, "parent", "", "parent workspace (default: yours)")
	fs.BoolVar(&req.Delegate, "delegate", false, "let the new agent create and manage workspaces under it")
	fs.StringVar(&req.Owner, "owner", "", "owning user id (default: inherited)")
	fs.StringVar(&req.Timeout, "timeout", "", "fail the workspace after this duration, e.g. 30m")
	fs.StringVar(&req.Priority, "priority", "", "critical, interactive, normal or background")
	fs.StringVar(&req.Group, "group", "", "group name")
	fs.StringVar(&context, "context", "", "context object (JSON)")
	fs.StringVar(&visibility, "visibility", "", "comma-separated workspace ids the agent may see")
	fs.StringVar(&budget, "budget", "", `budget (JSON), e.g. {"compute_budget":{"token_limit":100000}}`)
	if !person {
		fs.StringVar(&req.Injection, "injection", "", "the person's envelope (a highway injection sent to you) that causes this workspace: its originator is that person")
	}
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(cmd, [2]string{req.Role, "--role is required (the role of the new workspace's agent, e.g. worker)"}); err != nil {
		return err
	}
	if context != "" {
		if !json.Valid([]byte(context)) {
			return usagef(cmd, "--context is not valid JSON")
		}
		req.Context = json.RawMessage(context)
	}
	req.Visibility = list(visibility)
	if budget != "" {
		req.Budget = new(workspace.Budget)
		if err := strictjson.Decode([]byte(budget), req.Budget); err != nil {
			return usagef(cmd, "--budget: %v", err)
		}
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	create := cl.CreateWorkspace
	if person {
		create = cl.PersonCreateWorkspace
	}
	created, err := create(c.ctx, req)
	var we *client.Error
	if errors.As(err, &we) && we.Code == "gate_pending" && c.format != "json" {
		// The token is the caller's now, and shown once: print it with
		// the error (under -o json it is in the error's details).
		fmt.Fprintf(c.stderr, "workspace\t%v\ntoken\t%v\ngate\t%v\n", we.Details["workspace_id"], we.Details["token"], we.Details["gate_id"])
	}
	if err != nil {
		return err
	}
	return c.print(created, func(w io.Writer) {
		printWorkspace(w, created.Workspace)
		kv(w, "token", created.Token)
	})
}

func workspaceGet(c *cli, args []string) error {
	fs := c.flags("workspace get", "workspace get [ID]   (default: your own)")
	pos, cl, err := c.parseDial(fs, args, 0, 1)
	if err != nil {
		return err
	}
	w, err := cl.GetWorkspace(c.ctx, first(pos))
	if err != nil {
		return err
	}
	return c.print(w, func(out io.Writer) { printWorkspace(out, w) })
}

func workspaceList(c *cli, args []string) error {
	fs := c.flags("workspace list", "workspace list [--parent P] [--state S]")
	parent := fs.String("parent", "", "only children of this workspace")
	state := fs.String("state", "", "only workspaces in this state, e.g. active")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	ws, err := cl.ListWorkspaces(c.ctx, *parent, workspace.State(*state))
	if err != nil {
		return err
	}
	return c.print(ws, func(w io.Writer) {
		fmt.Fprintln(w, "ID\tROLE\tSTATE\tPARENT\tPRIORITY\tCREATED")
		for _, x := range ws {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", x.ID, x.Role, x.State, orDash(x.ParentID()), x.Priority, x.CreatedAt)
		}
	})
}

// workspaceOp is abort, suspend or resume.
func workspaceOp(op string) func(*cli, []string) error { return workspaceOpAs(op, false) }

// workspaceOpAs is workspaceOp, or with person the highway's (a user
// token, under the user's capabilities).
func workspaceOpAs(op string, person bool) func(*cli, []string) error {
	return func(c *cli, args []string) error {
		cmd := "workspace " + op
		if person {
			cmd = "highway " + op
		}
		fs := c.flags(cmd, cmd+" ID [--reason R]")
		reason := fs.String("reason", "", "why (recorded in the trail)")
		pos, err := parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		cl, err := c.dial()
		if err != nil {
			return err
		}
		var w *workspace.Workspace
		switch {
		case op == "abort" && person:
			w, err = cl.PersonAbort(c.ctx, pos[0], *reason)
		case op == "abort":
			w, err = cl.Abort(c.ctx, pos[0], *reason)
		case op == "suspend" && person:
			w, err = cl.PersonSuspend(c.ctx, pos[0], *reason)
		case op == "suspend":
			w, err = cl.Suspend(c.ctx, pos[0], *reason)
		case person:
			w, err = cl.PersonResume(c.ctx, pos[0])
		default:
			w, err = cl.Resume(c.ctx, pos[0], *reason)
		}
		if err != nil {
			return err
		}
		return c.print(w, func(out io.Writer) { fmt.Fprintf(out, "%s\t%s\n", w.ID, w.State) })
	}
}

func printWorkspace(w io.Writer, x *workspace.Workspace) {
	if x == nil {
		return
	}
	var ctx bytes.Buffer
	if len(x.Context) > 0 {
		json.Compact(&ctx, x.Context)
	}
	kv(w, "workspace", x.ID, "role", x.Role, "state", string(x.State), "parent", x.ParentID(),
		"owner", x.Owner, "originator", x.Originator, "delegate", fmt.Sprint(x.Delegate),
		"priority", x.Priority, "group", x.Group, "timeout", x.Timeout,
		"visibility", strings.Join(x.Visibility, ","), "context", ctx.String(),
		"created", x.CreatedAt, "updated", x.UpdatedAt, "reason", x.Reason)
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

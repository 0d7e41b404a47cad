package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/wire"
)

// Tasks and task graphs (the coordinator's plan).

func taskCreate(c *cli, args []string) error {
	const cmd = "task create"
	fs := c.flags(cmd, cmd+" --file F | -   (a task.create body: {\"graph\"?, \"tasks\": [...]})")
	file := fs.String("file", "", "read the task.create body from this file")
	pos, err := parse(fs, args, 0, 1)
	if err != nil {
		return err
	}
	stdin := len(pos) == 1 && pos[0] == "-"
	if len(pos) == 1 && !stdin {
		return usagef(cmd, "unexpected argument %q; give the body as --file F or - (stdin)", pos[0])
	}
	body, err := c.content(cmd, *file, stdin)
	if err != nil {
		return err
	}
	if body == "" {
		return usagef(cmd, "give the body as --file F or - (stdin)")
	}
	var req task.CreateRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		return usagef(cmd, "the body is not a task.create request: %v", err)
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	out, err := cl.CreateTasks(c.ctx, req)
	if err != nil {
		return err
	}
	return c.print(out, func(w io.Writer) {
		fmt.Fprintf(w, "graph\t%s\n\n", out.Graph.ID)
		taskTable(w, out.Tasks)
	})
}

func taskTable(w io.Writer, tasks []task.Task) {
	fmt.Fprintln(w, "TASK\tNAME\tSTATUS\tREADY\tPRIORITY\tWORKSPACE\tDEPENDS ON")
	for _, k := range tasks {
		fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\t%s\t%s\n", k.ID, k.Name, k.Status, k.Ready, k.Priority,
			deref(k.WorkspaceRef), strings.Join(k.DependsOn, ","))
	}
}

func taskGet(c *cli, args []string) error {
	const cmd = "task get"
	fs := c.flags(cmd, cmd+" ID [--transitive]")
	transitive := fs.Bool("transitive", false, "also list every task it requires and every task that requires it")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	info, err := cl.GetTask(c.ctx, pos[0], *transitive)
	if err != nil {
		return err
	}
	k := info.Task
	return c.print(info, func(w io.Writer) {
		kv(w, "task", k.ID, "name", k.Name, "status", string(k.Status), "ready", fmt.Sprint(k.Ready),
			"graph", k.GraphRef, "priority", string(k.Priority), "workspace", deref(k.WorkspaceRef),
			"attempts", fmt.Sprint(len(k.WorkspaceHistory)), "checkpoint", deref(k.CheckpointRef),
			"depends on", strings.Join(k.DependsOn, ","), "requires", strings.Join(info.Requires, ","),
			"required by", strings.Join(info.RequiredBy, ","), "description", k.Description)
	})
}

func taskList(c *cli, args []string) error {
	const cmd = "task list"
	fs := c.flags(cmd, cmd+" [--graph G] [--status S] [--ready]")
	var q wire.TaskListRequest
	fs.StringVar(&q.Graph, "graph", "", "only this graph's tasks")
	status := fs.String("status", "", "only tasks in this status")
	ready := fs.Bool("ready", false, "only ready tasks (their dependencies are met)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	q.Status = task.Status(*status)
	if isSet(fs, "ready") {
		q.Ready = ready
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	tasks, err := cl.ListTasks(c.ctx, q)
	if err != nil {
		return err
	}
	return c.print(tasks, func(w io.Writer) { taskTable(w, tasks) })
}

func taskBind(c *cli, args []string) error {
	const cmd = "task bind"
	fs := c.flags(cmd, cmd+" ID --workspace WS")
	ws := fs.String("workspace", "", "the idle workspace that will execute the task (required)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := required(cmd, [2]string{*ws, "--workspace is required (an idle workspace to bind the task to)"}); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	k, err := cl.BindTask(c.ctx, pos[0], *ws)
	return c.printTask(k, err)
}

func taskCancel(c *cli, args []string) error {
	const cmd = "task cancel"
	fs := c.flags(cmd, cmd+" ID [--reason R]")
	reason := fs.String("reason", "", "why (recorded; a bound workspace is aborted)")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	k, err := cl.CancelTask(c.ctx, pos[0], *reason)
	return c.printTask(k, err)
}

func taskRetry(c *cli, args []string) error {
	const cmd = "task retry"
	fs := c.flags(cmd, cmd+" ID")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	k, err := cl.RetryTask(c.ctx, pos[0])
	return c.printTask(k, err)
}

func (c *cli) printTask(k task.Task, err error) error {
	if err != nil {
		return err
	}
	return c.print(k, func(w io.Writer) { taskTable(w, []task.Task{k}) })
}

func taskGraph(c *cli, args []string) error {
	const cmd = "task graph"
	fs := c.flags(cmd, cmd+" ID")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	g, err := cl.GetGraph(c.ctx, pos[0])
	if err != nil {
		return err
	}
	return c.print(g, func(w io.Writer) {
		fmt.Fprintf(w, "graph\t%s\nroot task\t%s\n\n", g.Graph.ID, g.Graph.RootTask)
		taskTable(w, g.Tasks)
	})
}

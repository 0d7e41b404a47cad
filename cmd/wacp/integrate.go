package main

import (
	"io"

	"github.com/wacpd/wacpd/client"
)

func integrateCmd(c *cli, args []string) error {
	const cmd = "integrate"
	fs := c.flags(cmd, cmd+" WS --decision accept|revise|reject [--strategy S] [--mode normal|salvage]")
	var req client.IntegrateRequest
	fs.StringVar(&req.Decision, "decision", "", "accept, revise or reject (required)")
	fs.StringVar(&req.Strategy, "strategy", "", "direct, layered or evaluated (default direct)")
	fs.StringVar(&req.Mode, "mode", "", "normal or salvage (default normal)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	req.Workspace = pos[0]
	if err := required(cmd, [2]string{req.Decision, "--decision is required (accept, revise or reject the workspace's final checkpoint)"}); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	res, err := cl.Integrate(c.ctx, req)
	if err != nil {
		return err
	}
	return c.print(res, func(w io.Writer) {
		state := ""
		if res.Workspace != nil {
			state = string(res.Workspace.State)
		}
		kv(w, "workspace", req.Workspace, "outcome", res.Outcome, "state", state, "checkpoint", res.Checkpoint)
	})
}

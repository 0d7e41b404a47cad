package main

import (
	"fmt"
	"io"

	"github.com/wacpd/wacpd/client"
)

// rightsList is "rights list [WS]": the port rights WS (default the
// caller's workspace) holds and those held to it.
func rightsList(c *cli, args []string) error {
	const cmd = "rights list"
	fs := c.flags(cmd, cmd+" [WS]")
	pos, err := parse(fs, args, 0, 1)
	if err != nil {
		return err
	}
	ws := ""
	if len(pos) == 1 {
		ws = pos[0]
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	rs, err := cl.Rights(c.ctx, ws)
	if err != nil {
		return err
	}
	return c.print(rs, func(out io.Writer) {
		fmt.Fprintf(out, "workspace\t%s\n", rs.Workspace)
		for _, r := range rs.Outbound {
			printRight(out, "out", r)
		}
		for _, r := range rs.Inbound {
			printRight(out, "in", r)
		}
	})
}

// rightsRevoke is "rights revoke RIGHT_ID [--reason R]" (the coordinator).
func rightsRevoke(c *cli, args []string) error {
	const cmd = "rights revoke"
	fs := c.flags(cmd, cmd+" RIGHT_ID [--reason R]")
	reason := fs.String("reason", "", "why (recorded in port_right_revoked; default coordinator_request)")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	r, err := cl.RevokeRight(c.ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	return c.print(r, func(out io.Writer) { printRight(out, "revoked", r) })
}

// printRight writes one right as a table row: dir, id, type, holder ->
// target, and the envelope carrying it if in transit.
func printRight(out io.Writer, dir string, r client.PortRight) {
	fmt.Fprintf(out, "%s\t%s\t%s\t%s -> %s", dir, r.RightID, r.RightType, r.Holder, r.Target)
	if r.InTransit != "" {
		fmt.Fprintf(out, "\tin transit (%s)", r.InTransit)
	}
	fmt.Fprintln(out)
}

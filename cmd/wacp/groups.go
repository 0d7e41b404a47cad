package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/wacpd/wacpd/client"
)

// workspaceGrant is "workspace grant ID --target WS --reason R": make WS
// visible to workspace ID.
func workspaceGrant(c *cli, args []string) error {
	const cmd = "workspace grant"
	fs := c.flags(cmd, cmd+" ID --target WS --reason R")
	target := fs.String("target", "", "the workspace to make visible (required)")
	reason := fs.String("reason", "", "why (recorded in visibility_granted; required)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := required(cmd, [2]string{*target, "--target is required"}, [2]string{*reason, "--reason is required"}); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	w, err := cl.GrantVisibility(c.ctx, pos[0], *target, *reason)
	if err != nil {
		return err
	}
	return c.print(w, func(out io.Writer) {
		fmt.Fprintf(out, "workspace\t%s\nvisibility\t%s\n", w.ID, strings.Join(w.Visibility, ","))
	})
}

// workspacePriority is "workspace priority ID P".
func workspacePriority(c *cli, args []string) error {
	const cmd = "workspace priority"
	fs := c.flags(cmd, cmd+" ID critical|interactive|normal|background")
	pos, cl, err := c.parseDial(fs, args, 2, 2)
	if err != nil {
		return err
	}
	w, err := cl.SetPriority(c.ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	return c.print(w, func(out io.Writer) { fmt.Fprintf(out, "%s\t%s\n", w.ID, w.Priority) })
}

// groupAbort is "group abort G [--reason R]".
func groupAbort(c *cli, args []string) error {
	const cmd = "group abort"
	fs := c.flags(cmd, cmd+" GROUP [--reason R]")
	reason := fs.String("reason", "", "why (recorded as each transition's detail)")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	b, err := cl.AbortGroup(c.ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	return c.print(b, func(out io.Writer) { printBatch(out, b) })
}

// groupPriority is "group priority G P".
func groupPriority(c *cli, args []string) error {
	const cmd = "group priority"
	fs := c.flags(cmd, cmd+" GROUP critical|interactive|normal|background")
	pos, cl, err := c.parseDial(fs, args, 2, 2)
	if err != nil {
		return err
	}
	b, err := cl.SetGroupPriority(c.ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	return c.print(b, func(out io.Writer) { printBatch(out, b) })
}

func printBatch(out io.Writer, b client.Batch) {
	fmt.Fprintf(out, "group\t%s\n", b.GroupID)
	if b.NewPriority != "" {
		fmt.Fprintf(out, "priority\t%s -> %s\n", b.OldPriority, b.NewPriority)
	}
	fmt.Fprintf(out, "affected\t%s\nskipped\t%s\n", strings.Join(b.Affected, ","), strings.Join(b.Skipped, ","))
}

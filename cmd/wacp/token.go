package main

import (
	"fmt"
	"io"
)

func tokenCreate(c *cli, args []string) error {
	const cmd = "token create"
	fs := c.flags(cmd, cmd+" --kind user|auditor --name N\n\nPrints the new token; it is not shown again.")
	kind := fs.String("kind", "", "user or auditor (required)")
	name := fs.String("name", "", "who holds it, without spaces or dots (required)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(cmd,
		[2]string{*kind, "--kind is required (user for a human, auditor to read and verify the trail)"},
		[2]string{*name, "--name is required (who holds the token)"},
	); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	tok, err := cl.CreateToken(c.ctx, *kind, *name)
	if err != nil {
		return err
	}
	out := map[string]string{"token": tok, "kind": *kind, "name": *name}
	return c.print(out, func(w io.Writer) { fmt.Fprintln(w, tok) })
}

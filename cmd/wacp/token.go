package main

import (
	"fmt"
	"io"

	"github.com/wacpd/wacpd/user"
)

func tokenCreate(c *cli, args []string) error {
	const cmd = "token create"
	fs := c.flags(cmd, cmd+" --kind user|auditor|tool --name N [--capabilities C,...]   (or NAME instead of --name)\n\n"+
		"Prints the new token; it is not shown again. A tool token serves CARP executions of the actions\n"+
		"(wacp.v1.tool.<action_id>) and nothing else.")
	kind := fs.String("kind", "", "user, auditor or tool (required)")
	name := fs.String("name", "", "who holds it, without spaces or dots (required)")
	caps := fs.String("capabilities", "", "a new user's capabilities, comma-separated (e.g. create_workspace,approve_integration; docs/api.md)")
	pos, err := parse(fs, args, 0, 1)
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		if *name != "" && *name != pos[0] {
			return usagef(cmd, "give the name once: --name %s or %s", *name, pos[0])
		}
		*name = pos[0]
	}
	if err := required(cmd,
		[2]string{*kind, "--kind is required (user for a human, auditor to read and verify the trail, tool for a tool service)"},
		[2]string{*name, "--name N (or NAME) is required (who holds the token)"},
	); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	var cs []user.Capability
	for _, v := range list(*caps) {
		cs = append(cs, user.Capability(v))
	}
	tok, err := cl.CreateToken(c.ctx, *kind, *name, cs...)
	if err != nil {
		return err
	}
	out := map[string]string{"token": tok, "kind": *kind, "name": *name}
	return c.print(out, func(w io.Writer) { fmt.Fprintln(w, tok) })
}

func tokenRevoke(c *cli, args []string) error {
	const cmd = "token revoke"
	fs := c.flags(cmd, cmd+" --kind user|auditor|tool --name N [--reason R]\n\nRevokes every token of that user, auditor or tool service and closes their connections.")
	kind := fs.String("kind", "", "user, auditor or tool (required)")
	name := fs.String("name", "", "whose tokens (required)")
	reason := fs.String("reason", "", "recorded in the trail's user_deactivated entry")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(cmd,
		[2]string{*kind, "--kind is required (user, auditor or tool)"},
		[2]string{*name, "--name is required (whose tokens to revoke)"},
	); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	n, err := cl.RevokeToken(c.ctx, *kind, *name, *reason)
	if err != nil {
		return err
	}
	out := map[string]any{"revoked": n, "kind": *kind, "name": *name}
	return c.print(out, func(w io.Writer) { fmt.Fprintf(w, "revoked %d token(s) of %s %s\n", n, *kind, *name) })
}

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// Users, for the coordinator.

func userState(c *cli, args []string) error { return userStateAs(c, args, false) }

// userStateAs is "user state" (the coordinator), or with person "highway
// user-state" (a user token with deactivate_user: deactivated, or active
// again).
func userStateAs(c *cli, args []string, person bool) error {
	cmd, states := "user state", "active|suspended|blocked|deactivated"
	if person {
		cmd, states = "highway user-state", "deactivated|active"
	}
	fs := c.flags(cmd, cmd+" USER "+states+" [--reason R] [--condition C]")
	var req wire.UserStateRequest
	fs.StringVar(&req.Reason, "reason", "", "why (recorded)")
	fs.StringVar(&req.Condition, "condition", "", "blocked: the blocking condition; unblocking: the condition resolved")
	pos, err := parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	req.User, req.State = pos[0], user.State(pos[1])
	cl, err := c.dial()
	if err != nil {
		return err
	}
	set := cl.SetUserState
	if person {
		set = cl.PersonSetUserState
	}
	u, err := set(c.ctx, req)
	return c.printUser(u, err)
}

func userCapabilities(c *cli, args []string) error {
	const cmd = "user capabilities"
	fs := c.flags(cmd, cmd+" USER [--grant C,...] [--revoke C,...] [--reason R]")
	grant := fs.String("grant", "", "capabilities to grant, comma-separated")
	revoke := fs.String("revoke", "", "capabilities to revoke, comma-separated")
	reason := fs.String("reason", "", "why (recorded with the revocations)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	req := wire.UserCapabilitiesRequest{User: pos[0], Reason: *reason}
	for _, v := range list(*grant) {
		req.Grant = append(req.Grant, user.Capability(v))
	}
	for _, v := range list(*revoke) {
		req.Revoke = append(req.Revoke, user.Capability(v))
	}
	if len(req.Grant)+len(req.Revoke) == 0 {
		return usagef(cmd, "give --grant or --revoke")
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	u, err := cl.SetCapabilities(c.ctx, req)
	return c.printUser(u, err)
}

func (c *cli) printUser(u user.User, err error) error {
	if err != nil {
		return err
	}
	caps := make([]string, len(u.Capabilities))
	for i, x := range u.Capabilities {
		caps[i] = string(x)
	}
	return c.print(u, func(w io.Writer) {
		kv(w, "user", u.ID, "state", string(u.State), "capabilities", strings.Join(caps, ","),
			"blocking condition", u.Condition, "updated", u.UpdatedAt)
	})
}

func workspaceTransfer(c *cli, args []string) error { return transferAs(c, args, false) }

// transferAs is "workspace transfer" (the coordinator), or with person
// "highway transfer" (a user token with transfer_ownership).
func transferAs(c *cli, args []string, person bool) error {
	cmd := "workspace transfer"
	if person {
		cmd = "highway transfer"
	}
	fs := c.flags(cmd, cmd+" ID --owner USER [--reason R]")
	owner := fs.String("owner", "", "the user who becomes the owner (required)")
	reason := fs.String("reason", "", "why (recorded)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := required(cmd, [2]string{*owner, "--owner is required (a user with a record)"}); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	transfer := cl.TransferOwnership
	if person {
		transfer = cl.PersonTransfer
	}
	w, err := transfer(c.ctx, pos[0], *owner, *reason)
	if err != nil {
		return err
	}
	return c.print(w, func(tw io.Writer) { fmt.Fprintf(tw, "workspace\t%s\nowner\t%s\n", w.ID, w.Owner) })
}

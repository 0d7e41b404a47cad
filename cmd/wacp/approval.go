package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/wire"
)

// Operator approvals (issue 16), for an operator (a user token): a
// session's envelope, trust, permits and checkpoints; its checkpoint
// mode; revoking a permit; restoring a boundary's trust. Checkpoints are
// answered with highway resolve.

func highwayApprovals(c *cli, args []string) error {
	const cmd = "highway approvals"
	fs := c.flags(cmd, cmd+" [--workspace WS]\n\n"+
		"Prints each session's approvals: its envelope (checkpoint mode, policy versions, provider classes,\n"+
		"per-step), the trust of each boundary with an event, its permits and its checkpoints.\n"+
		"-o json prints the daemon's reply.")
	ws := fs.String("workspace", "", "only this session (a workspace id); default every session with approvals")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	out, err := cl.Approvals(c.ctx, *ws)
	if err != nil {
		return err
	}
	return c.print(out, func(w io.Writer) {
		if len(out.Sessions) == 0 {
			fmt.Fprintln(w, "no session has approvals")
		}
		for i, s := range out.Sessions {
			if i > 0 {
				fmt.Fprintln(w)
			}
			printApprovalState(w, s)
		}
	})
}

// printApprovalState prints one session's approvals as blocks separated
// by blank lines (each block aligned on its own).
func printApprovalState(w io.Writer, s wire.ApprovalState) {
	printApprovalEnvelope(w, s.Session, s.Envelope)
	fmt.Fprintln(w)
	if len(s.Trust) == 0 {
		fmt.Fprintln(w, "trust: every boundary trusted (no violation recorded)")
	} else {
		fmt.Fprintln(w, "BOUNDARY\tTRUST\tVIOLATIONS\tSINCE\tREASON")
		for _, b := range s.Trust {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", b.Boundary, b.State, b.Violations, orDash(b.Since), orDash(b.Reason))
		}
	}
	fmt.Fprintln(w)
	if len(s.Permits) == 0 {
		fmt.Fprintln(w, "permits: none")
	} else {
		printPermits(w, s.Permits, false)
	}
	fmt.Fprintln(w)
	if len(s.Checkpoints) == 0 {
		fmt.Fprintln(w, "checkpoints: none")
		return
	}
	fmt.Fprintln(w, "CHECKPOINT\tTOOL\tSTATUS\tOUTCOME\tTYPE\tDECIDED BY")
	for _, cp := range s.Checkpoints {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", cp.ApprovalID, cp.Tool, cp.Status, orDash(string(cp.Outcome)),
			orDash(cp.Pending.CheckpointType), orDash(cp.DecidedBy))
	}
}

// printPermits prints permits as a table, with their session when
// session is set.
func printPermits(w io.Writer, ps []wire.PermitView, session bool) {
	head := "PERMIT\tTOOL\tSTATUS\tUSES\tEXPIRES\tSCOPE"
	if session {
		head = "PERMIT\tSESSION\tTOOL\tSTATUS\tUSES\tEXPIRES\tSCOPE"
	}
	fmt.Fprintln(w, head)
	for _, p := range ps {
		scope := "exact request " + p.Digest
		if p.Digest == "" {
			scope = "envelope"
		}
		if len(p.Paths) > 0 {
			scope += "; paths " + strings.Join(p.Paths, ", ")
		}
		if r := p.Revoked; r != nil {
			scope += fmt.Sprintf("; revoked by %s (%s)", r.By, r.Reason)
		}
		cols := []string{p.ID, p.Tool, p.Status, fmt.Sprintf("%d/%d", len(p.Uses), p.MaxUses), p.ExpiresAt.UTC().Format(time.RFC3339), scope}
		if session {
			cols = append([]string{p.ID, p.Session}, cols[1:]...)
		}
		fmt.Fprintln(w, strings.Join(cols, "\t"))
	}
}

func highwayMode(c *cli, args []string) error {
	const cmd = "highway mode"
	fs := c.flags(cmd, cmd+" WS always|policy|never [--reason R]\n\n"+
		"Sets session WS's checkpoint mode: always (every governed execute waits for an operator), policy (the\n"+
		"atlases' rules; the default) or never (only the mandatory checkpoints; refused unless every loaded\n"+
		"atlas allows it). Prints the session's envelope.")
	reason := fs.String("reason", "", "why, for the record")
	pos, err := parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	if _, err := approval.ParseMode(pos[1]); err != nil || pos[1] == "" {
		return usagef(cmd, "the mode is always, policy or never, not %q", pos[1])
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	env, err := cl.SetApprovalMode(c.ctx, pos[0], pos[1], *reason)
	if err != nil {
		return err
	}
	return c.print(env, func(w io.Writer) { printApprovalEnvelope(w, pos[0], env) })
}

func permitList(c *cli, args []string) error {
	const cmd = "permit list"
	fs := c.flags(cmd, cmd+" [--workspace WS]\n\n"+
		"Lists the permits operators' approvals issued (a user token): each with its session, tool, state\n"+
		"(active, used, expired, revoked, cancelled), uses of the most it allows, expiry and scope.\n"+
		"-o json prints them as a JSON array.")
	ws := fs.String("workspace", "", "only this session's (a workspace id)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	out, err := cl.Approvals(c.ctx, *ws)
	if err != nil {
		return err
	}
	ps := []wire.PermitView{}
	for _, s := range out.Sessions {
		ps = append(ps, s.Permits...)
	}
	return c.print(ps, func(w io.Writer) {
		if len(ps) == 0 {
			fmt.Fprintln(w, "no permit")
			return
		}
		printPermits(w, ps, true)
	})
}

func permitRevoke(c *cli, args []string) error {
	const cmd = "permit revoke"
	fs := c.flags(cmd, cmd+" PERMIT_ID [--reason R]\n\n"+
		"Revokes a permit, effective at once: no execute runs under it after this (a user token).")
	reason := fs.String("reason", "", "why (default revoked_by_operator)")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	p, err := cl.RevokePermit(c.ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	return c.print(p, func(w io.Writer) {
		by, why := "", ""
		if r := p.Revoked; r != nil {
			by, why = r.By, r.Reason
		}
		kv(w, "permit", p.ID, "session", p.Session, "tool", p.Tool, "approval", p.ApprovalID,
			"uses", fmt.Sprintf("%d/%d", len(p.Uses), p.MaxUses), "revoked by", by, "reason", why)
	})
}

func trustRestore(c *cli, args []string) error {
	const cmd = "trust restore"
	fs := c.flags(cmd, cmd+" WS BOUNDARY [--reason R]\n\n"+
		"Makes a boundary of session WS trusted again after a violation (a user token). A boundary is\n"+
		"tool:<action>, path:<path>, provider:<class> or workflow:<atlas>, e.g. tool:file.delete or\n"+
		"path:src/a.go. A boundary that is trusted is refused.")
	reason := fs.String("reason", "", "why, for the record")
	pos, err := parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	if _, _, err := approval.ParseBoundary(pos[1]); err != nil {
		return usagef(cmd, "%v", err)
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	b, err := cl.RestoreTrust(c.ctx, pos[0], pos[1], *reason)
	if err != nil {
		return err
	}
	return c.print(b, func(w io.Writer) {
		kv(w, "session", pos[0], "boundary", b.Boundary, "trust", b.State, "violations", strconv.Itoa(b.Violations),
			"since", b.Since, "reason", b.Reason)
	})
}

// versions is an envelope's policy versions, atlas by atlas.
func versions(m map[string]string) string {
	var out []string
	for _, a := range slices.Sorted(maps.Keys(m)) {
		out = append(out, a+"="+m[a])
	}
	return strings.Join(out, ", ")
}

// printApprovalEnvelope prints session's approval envelope; a mode never set is the
// default, policy.
func printApprovalEnvelope(w io.Writer, session string, e approval.Envelope) {
	mode := string(e.Mode)
	if mode == "" {
		mode = string(approval.ModePolicy) + " (default)"
	}
	kv(w, "session", session, "mode", mode, "policy versions", orDash(versions(e.PolicyVersions)),
		"providers", orDash(strings.Join(e.Providers, ", ")), "per_step", strconv.FormatBool(e.PerStep))
}

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/trail"
)

func trailRead(c *cli, args []string) error {
	const cmd = "trail read"
	fs := c.flags(cmd, cmd+" [--after ID] [--limit N] [--workspace WS] [--type T] [--actor A] [--since T] [--until T] [--body k=v]...\n\nReads the global trail (coordinator, user or auditor token).")
	var q client.TrailQuery
	var typ string
	fs.StringVar(&q.After, "after", "", "start after this entry id")
	fs.IntVar(&q.Limit, "limit", 0, "at most this many entries (default 100, at most 1000)")
	trailFilterFlags(fs, &q.Workspace, &typ, &q.Actor, &q.Since, &q.Until, &q.Body)
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	q.EventType = trail.EventType(typ)
	cl, err := c.dial()
	if err != nil {
		return err
	}
	page, err := cl.ReadTrail(c.ctx, q)
	if err != nil {
		return err
	}
	err = c.print(page, func(w io.Writer) {
		fmt.Fprintln(w, "ID\tTIME\tWORKSPACE\tACTOR\tEVENT")
		for _, e := range page.Entries {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.Timestamp, orDash(e.Workspace), e.Actor, e.EventType)
		}
	})
	if err == nil && page.Next != nil && c.format != "json" {
		fmt.Fprintf(c.stderr, "more: wacp trail read --after %s\n", *page.Next)
	}
	return err
}

func trailTail(c *cli, args []string) error {
	const cmd = "trail tail"
	fs := c.flags(cmd, cmd+" [-f] [--workspace WS] [--type T]\n\nPrints a timeline line per trail entry as it is committed, until Ctrl-C (no replay: use trail read).")
	ws := fs.String("workspace", "", "only this workspace's entries (_system for system entries; an agent sees only its own)")
	typ := fs.String("type", "", "only this event type")
	fs.Bool("f", true, "follow (always on: tail follows the live trail)")
	fs.Bool("follow", true, "same as -f")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	filter := ""
	switch {
	case *ws != "" && *typ != "":
		filter = *ws + "." + *typ
	case *ws != "":
		filter = *ws + ".>"
	case *typ != "":
		filter = "*." + *typ
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	return cl.TailTrail(c.ctx, filter, func(e trail.Entry) error {
		if c.format == "json" {
			return c.jsonLine(e)
		}
		_, err := fmt.Fprintln(c.stdout, timeline(e))
		return err
	})
}

func trailVerify(c *cli, args []string) error {
	const cmd = "trail verify"
	fs := c.flags(cmd, cmd+" [--workspace WS] | --bundle FILE [--public-key K] | --dir DATADIR... [--public-key K]...\n\n"+
		"Recomputes every entry hash and both chain kinds; exits 2 if the trail is broken. With --bundle\n"+
		"or --dir it runs offline, without a daemon, and also checks the signed tree head, the Merkle root\n"+
		"and the checkpoint objects. --dir given several times checks the stopped daemons of one deployment:\n"+
		"each data dir alone, then the set (one root workspace, hash algorithm and taxonomy, no daemon twice,\n"+
		"no workspace in two); --public-key then goes once per --dir, in the same order.")
	ws := fs.String("workspace", "", "check only this workspace's chain")
	bundle := fs.String("bundle", "", "verify this bundle (wacp trail export) offline; - for stdin")
	var dirs, keys strs
	fs.Var(&dirs, "dir", "verify this stopped daemon's data dir offline (repeatable: a deployment's daemons)")
	fs.Var(&keys, "public-key", "with --bundle or --dir: the tree-head key you trust (default: the bundle's or trail.pub); once per --dir")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	dir, key := "", ""
	if len(dirs) > 0 {
		dir = dirs[0]
	}
	if len(keys) > 0 {
		key = keys[0]
	}
	switch {
	case *bundle != "" && dir != "":
		return usagef(cmd, "give --bundle or --dir, not both")
	case (*bundle != "" || dir != "") && *ws != "":
		return usagef(cmd, "--workspace is for the online check; --bundle and --dir check the whole trail")
	case len(dirs) > 1 && len(keys) > 0 && len(keys) != len(dirs):
		return usagef(cmd, "give --public-key once per --dir (%d), in the same order, or not at all", len(dirs))
	case len(dirs) > 1:
		return verifyDirs(c, dirs, keys)
	case len(keys) > 1:
		return usagef(cmd, "one --public-key for one --bundle or --dir")
	case *bundle != "" || dir != "":
		return verifyOffline(c, *bundle, dir, key)
	case key != "":
		return usagef(cmd, "--public-key goes with --bundle or --dir")
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	res, err := cl.VerifyTrail(c.ctx, *ws)
	if err != nil {
		return err
	}
	err = c.print(res, func(w io.Writer) {
		if res.OK {
			fmt.Fprintf(w, "ok: %d entries\n", res.Entries)
			return
		}
		fmt.Fprintf(w, "broken: %s: %s", where(res.FirstBad), res.Violation)
		if res.Detail != "" {
			fmt.Fprintf(w, " (%s)", res.Detail)
		}
		fmt.Fprintf(w, " after %d good entries\n", res.Entries)
	})
	if err == nil && !res.OK {
		return exitError(2)
	}
	return err
}

// verifyDirs verifies the data dirs of a deployment's stopped daemons
// (datadir.VerifySet) and prints a row per dir and the set's verdict.
func verifyDirs(c *cli, dirs, keys []string) error {
	if len(keys) == 0 {
		keys = nil
	}
	set, err := datadir.VerifySet(dirs, keys)
	if err != nil {
		return err
	}
	err = c.print(set, func(w io.Writer) {
		fmt.Fprintln(w, "DIR\tENTRIES\tSIGNED SIZE\tSIGNED ROOT\tRESULT")
		for _, m := range set.Members {
			r := m.Report
			result := "ok"
			if !r.OK {
				result = fmt.Sprintf("broken: %s: %s", where(r.FirstBad), r.Violation)
				if r.Detail != "" {
					result += " (" + r.Detail + ")"
				}
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", m.Name, r.Entries, r.Size, orDash(r.Root), result)
		}
		if set.OK {
			fmt.Fprintf(w, "ok: %d daemons of one deployment, root workspace %s\n", len(set.Members), set.Root)
			if len(keys) == 0 {
				fmt.Fprintln(w, "(checked with each data dir's trail.pub: compare them with the daemons', or pass --public-key per --dir)")
			}
			return
		}
		fmt.Fprintf(w, "broken: %s: %s", set.Member, set.Violation)
		if set.Other != "" {
			fmt.Fprintf(w, " with %s", set.Other)
		}
		fmt.Fprintf(w, ": %s\n", set.Detail)
	})
	if err == nil && !set.OK {
		return exitError(2)
	}
	return err
}

func trailQuarantine(c *cli, args []string) error {
	const cmd = "trail quarantine"
	fs := c.flags(cmd, cmd+" --dir DATADIR\n\nLists the trail entries the recovery procedure moved out of a stopped daemon's trail (its\nquarantine, docs/operations.md), with why and when. -o json includes their stored bytes.")
	dir := fs.String("dir", "", "the stopped daemon's data dir")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *dir == "" {
		return usagef(cmd, "needs --dir")
	}
	qs, err := datadir.Quarantine(*dir)
	if err != nil {
		return err
	}
	return c.print(nonNilList(qs), func(w io.Writer) {
		if len(qs) == 0 {
			fmt.Fprintln(w, "no quarantined entries")
			return
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tID\tEVENT\tWORKSPACE\tQUARANTINED\tREASON")
		for _, q := range qs {
			id, ev, ws := orDash(q.ID), orDash(string(q.EventType)), orDash(q.Workspace)
			if q.Missing {
				ev = "(missing)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", q.Seq, id, ev, ws, q.At, q.Reason)
		}
		tw.Flush()
	})
}

func nonNilList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// trailFilterFlags defines the flags of the trail's filters, which
// audit.trail.read and audit.trail.aggregate share (AND-combined).
func trailFilterFlags(fs *flag.FlagSet, workspace, typ, actor, since, until *string, body *map[string]string) {
	fs.StringVar(workspace, "workspace", "", "only this workspace's entries")
	fs.StringVar(typ, "type", "", "only this event type, e.g. checkpoint_created")
	fs.StringVar(actor, "actor", "", "only this actor (a role, protocol, or a user id)")
	fs.StringVar(since, "since", "", "only entries at or after this RFC 3339 time")
	fs.StringVar(until, "until", "", "only entries before this RFC 3339 time")
	fs.Func("body", "only entries whose body field k has value v (k=v; repeat to AND)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("--body wants k=v, got %q", s)
		}
		if *body == nil {
			*body = map[string]string{}
		}
		(*body)[k] = v
		return nil
	})
}

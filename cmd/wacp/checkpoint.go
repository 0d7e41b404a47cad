package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
)

const checkpointCreateUsage = `checkpoint create --type T --intent I --status S --confidence C
       [--parent ID | --parent-head] [--file F | -] [--files-changed a,b] [--artifacts x,y]
       [--tokens N] [--wall-time D] [--cost X]

The content comes from --file F, or from stdin with -. The first checkpoint
of a workspace has no parent; each later one names the chain head.
--parent-head reads the head first and uses it: a convenience for a single
writer, which can race with another writer of the same workspace (the daemon
then rejects it with invalid_parent, and nothing is written).`

func checkpointCreate(c *cli, args []string) error {
	const cmd = "checkpoint create"
	fs := c.flags(cmd, checkpointCreateUsage)
	var req client.CheckpointRequest
	fs.StringVar(&req.Type, "type", "", "checkpoint type, e.g. artifact (required)")
	fs.StringVar(&req.Intent, "intent", "", "why this checkpoint exists (required)")
	fs.StringVar(&req.Status, "status", "", "provisional or final (required)")
	fs.StringVar(&req.Confidence, "confidence", "", "high, medium or low (required)")
	parent := fs.String("parent", "", "id of the current chain head (omit for the first checkpoint)")
	parentHead := fs.Bool("parent-head", false, "use the current chain head as parent (may race)")
	file := fs.String("file", "", "read the content from this file")
	files := fs.String("files-changed", "", "comma-separated paths the work changed")
	artifacts := fs.String("artifacts", "", "comma-separated artifact references")
	tokens := fs.Int64("tokens", 0, "tokens consumed since the previous checkpoint")
	wall := fs.Duration("wall-time", 0, "wall time spent since the previous checkpoint, e.g. 1m30s")
	cost := fs.Float64("cost", 0, "cost since the previous checkpoint")
	pos, err := parse(fs, args, 0, 1)
	if err != nil {
		return err
	}
	if err := required(cmd,
		[2]string{req.Type, "--type is required (the checkpoint type, e.g. artifact)"},
		[2]string{req.Intent, "--intent is required (why this checkpoint exists)"},
		[2]string{req.Status, "--status is required (provisional or final)"},
		[2]string{req.Confidence, "--confidence is required (high, medium or low)"},
	); err != nil {
		return err
	}
	if *parent != "" && *parentHead {
		return usagef(cmd, "give --parent ID or --parent-head, not both")
	}
	stdin := len(pos) == 1
	if stdin && pos[0] != "-" {
		return usagef(cmd, "unexpected argument %q; give the content with --file F or - (stdin)", pos[0])
	}
	if req.Payload.Content, err = c.content(cmd, *file, stdin); err != nil {
		return err
	}
	req.Payload.FilesChanged, req.Payload.Artifacts = list(*files), list(*artifacts)
	if isSet(fs, "tokens") || isSet(fs, "wall-time") || isSet(fs, "cost") {
		req.ResourceUsage = &checkpointchain.ResourceUsage{}
		if isSet(fs, "tokens") {
			req.ResourceUsage.TokensConsumed = tokens
		}
		if isSet(fs, "wall-time") {
			d := wall.String()
			req.ResourceUsage.WallTime = &d
		}
		if isSet(fs, "cost") {
			req.ResourceUsage.Cost = cost
		}
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	if *parent != "" {
		req.Parent = parent
	}
	if *parentHead {
		head, err := cl.Head(c.ctx, "", false)
		var e *client.Error
		switch {
		case errors.As(err, &e) && e.Code == "not_found":
			// An empty chain: the first checkpoint has no parent.
		case err != nil:
			return err
		default:
			req.Parent = &head.ID
		}
	}
	cp, err := cl.CreateCheckpoint(c.ctx, req)
	if err != nil {
		return err
	}
	return c.print(cp, func(w io.Writer) { printCheckpoint(w, cp) })
}

func checkpointGet(c *cli, args []string) error {
	fs := c.flags("checkpoint get", "checkpoint get ID")
	pos, cl, err := c.parseDial(fs, args, 1, 1)
	if err != nil {
		return err
	}
	cp, err := cl.GetCheckpoint(c.ctx, pos[0])
	if err != nil {
		return err
	}
	return c.printBody(cp, func(w io.Writer) { printCheckpoint(w, cp) }, cp.Payload.Content)
}

func checkpointList(c *cli, args []string) error {
	fs := c.flags("checkpoint list", "checkpoint list [--workspace WS] [--after ID] [--limit N]")
	ws := fs.String("workspace", "", "whose chain (default: yours)")
	after := fs.String("after", "", "start after this checkpoint")
	limit := fs.Int("limit", 0, "at most this many (default: the daemon's)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	cps, err := cl.ListCheckpoints(c.ctx, *ws, *after, *limit)
	if err != nil {
		return err
	}
	return c.print(cps, func(w io.Writer) {
		fmt.Fprintln(w, "ID\tTYPE\tSTATUS\tCONFIDENCE\tTIME\tINTENT")
		for _, cp := range cps {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", cp.ID, cp.Type, cp.Status, cp.Confidence, cp.Timestamp, oneLine(cp.Intent, 60))
		}
	})
}

func checkpointHead(c *cli, args []string) error {
	fs := c.flags("checkpoint head", "checkpoint head [--workspace WS] [--final]")
	ws := fs.String("workspace", "", "whose chain (default: yours)")
	final := fs.Bool("final", false, "the most recent final checkpoint instead of the head")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	cp, err := cl.Head(c.ctx, *ws, *final)
	if err != nil {
		return err
	}
	return c.printBody(cp, func(w io.Writer) { printCheckpoint(w, cp) }, cp.Payload.Content)
}

func printCheckpoint(w io.Writer, cp checkpointchain.Checkpoint) {
	kv(w, "checkpoint", cp.ID, "workspace", cp.Workspace, "type", cp.Type,
		"status", cp.Status, "confidence", cp.Confidence, "parent", orDash(cp.ParentID()),
		"intent", oneLine(cp.Intent, 200), "files changed", strings.Join(cp.Payload.FilesChanged, ","),
		"artifacts", strings.Join(cp.Payload.Artifacts, ","), "time", cp.Timestamp, "digest", cp.Digest.String())
	if u := cp.ResourceUsage; u != nil {
		var parts []string
		if u.TokensConsumed != nil {
			parts = append(parts, fmt.Sprintf("%d tokens", *u.TokensConsumed))
		}
		if u.WallTime != nil {
			parts = append(parts, *u.WallTime)
		}
		if u.Cost != nil {
			parts = append(parts, fmt.Sprintf("cost %g", *u.Cost))
		}
		kv(w, "usage", strings.Join(parts, ", "))
	}
}

// oneLine shortens s to one line of at most n runes for a table cell.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/trail"
)

func trailExport(c *cli, args []string) error {
	const cmd = "trail export"
	fs := c.flags(cmd, cmd+" [-f FILE]\n\nWrites a self-contained bundle of the trail: the latest signed tree head, its entries and\nthe checkpoints they reference. Check it anywhere with 'wacp trail verify --bundle FILE'.")
	var file string
	fs.StringVar(&file, "f", "", "write the bundle to FILE (default stdout)")
	fs.StringVar(&file, "file", "", "same as -f")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	if file == "" || file == "-" {
		_, err := cl.Export(c.ctx, c.stdout)
		return err
	}
	// Write next to FILE and rename, so FILE is either the old one or a
	// complete bundle.
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("create bundle: %w", err)
	}
	defer os.Remove(tmp.Name())
	th, err := cl.Export(c.ctx, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	fmt.Fprintf(c.stderr, "exported %d entries to %s (tree head signed %s, root %s)\n", th.Size, file, th.Timestamp, th.Root)
	return nil
}

// verifyOffline is trail verify --bundle or --dir: no daemon.
func verifyOffline(c *cli, bundle, dir, key string) error {
	var rep auditor.Report
	var err error
	switch {
	case bundle == "-":
		rep, err = auditor.VerifyWithKey(c.stdin, key)
	case bundle != "":
		f, ferr := os.Open(bundle)
		if ferr != nil {
			return fmt.Errorf("open bundle: %w", ferr)
		}
		defer f.Close()
		rep, err = auditor.VerifyWithKey(f, key)
	default:
		rep, err = datadir.VerifyWithKey(dir, key)
	}
	if err != nil {
		return err
	}
	err = c.print(rep, func(w io.Writer) {
		if rep.OK {
			fmt.Fprintf(w, "ok: %d entries, %d workspaces, %d objects, signed size %d\n", rep.Entries, rep.Workspaces, rep.Objects, rep.Size)
			fmt.Fprintf(w, "tree head: %s size %d root %s signed %s\n", rep.Origin, rep.Size, rep.Root, rep.Timestamp)
			fmt.Fprintf(w, "public key: %s\n", rep.PublicKey)
			if key == "" {
				fmt.Fprintln(w, "(checked with the key the bundle names: compare it with the daemon's, or pass --public-key)")
			}
			return
		}
		fmt.Fprintf(w, "broken: %s: %s", where(rep.FirstBad), rep.Violation)
		if rep.Detail != "" {
			fmt.Fprintf(w, " (%s)", rep.Detail)
		}
		fmt.Fprintf(w, " after %d good entries\n", rep.Entries)
	})
	if err == nil && !rep.OK {
		return exitError(2)
	}
	return err
}

// where names a Report's FirstBad for people.
func where(firstBad string) string {
	switch {
	case firstBad == "sth":
		return "tree head"
	case strings.HasPrefix(firstBad, "blake3:"):
		return "object " + firstBad
	case strings.HasPrefix(firstBad, "line "), strings.HasPrefix(firstBad, "#"):
		return firstBad
	case strings.HasSuffix(firstBad, ".sst"):
		return "table file " + firstBad
	case firstBad == "db":
		return "database"
	case strings.HasPrefix(firstBad, "t/"), strings.HasPrefix(firstBad, "k/"):
		return "record " + firstBad
	}
	return "entry " + firstBad
}

func trailProve(c *cli, args []string) error {
	const cmd = "trail prove"
	fs := c.flags(cmd, cmd+" CHECKPOINT_ID [--public-key K]\n\nProves that a checkpoint is in the signed trail: finds its checkpoint_created entry, checks the\nlatest tree head's signature, and checks an inclusion proof of the entry against the signed root\nand the checkpoint's content against the entry's digest. Exits 2 if any check fails.")
	key := fs.String("public-key", "", "the tree-head key you trust (default: the one system.info publishes)")
	wait := fs.Duration("wait", 5*time.Second, "how long to wait for a signed tree head covering the entry")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	id := pos[0]
	cl, err := c.dial()
	if err != nil {
		return err
	}
	out, err := cl.ProveCheckpoint(c.ctx, id, *key, *wait)
	var np *auditor.NotProvedError
	if errors.As(err, &np) {
		fmt.Fprintln(c.stdout, np.Error())
		return exitError(2)
	}
	if err != nil {
		return err
	}
	return c.print(out, func(w io.Writer) {
		fmt.Fprintf(w, "proved: checkpoint %s is in the signed trail\n", id)
		kv(w, "checkpoint", fmt.Sprintf("%s (workspace %s, %s, %s)", id, out.Workspace, out.Type, out.Status),
			"content", out.Digest+" (the checkpoint's canonical bytes hash to it)",
			"entry", fmt.Sprintf("%s, #%d of the global trail, entry_hash %s", out.Entry, out.Index+1, out.EntryHash),
			"tree head", fmt.Sprintf("size %d, root %s, signed %s", out.Size, out.Root, out.Signed),
			"key", out.PublicKey,
			"proof", fmt.Sprintf("%d hashes, verified against the signed root", out.Path))
	})
}

func trailReplay(c *cli, args []string) error {
	const cmd = "trail replay"
	fs := c.flags(cmd, cmd+"\n\nRebuilds every workspace's state and checkpoint chain from the trail alone and compares them\nwith the live state (coordinator token). Exits 2 if they differ.")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	st, diffs, err := cl.ReplayDiff(c.ctx, 0)
	if errors.Is(err, auditor.ErrInconsistent) {
		fmt.Fprintf(c.stdout, "inconsistent: %v\n", err)
		return exitError(2)
	}
	if err != nil {
		return err
	}
	out := struct {
		OK          bool                 `json:"ok"`
		Workspaces  int                  `json:"workspaces"`
		Checkpoints int                  `json:"checkpoints"`
		Differences []auditor.Difference `json:"differences"`
	}{len(diffs) == 0, len(st.Workspaces), st.Checkpoints(), diffs}
	if out.Differences == nil {
		out.Differences = []auditor.Difference{}
	}
	err = c.print(out, func(w io.Writer) {
		if len(diffs) == 0 {
			fmt.Fprintf(w, "replay matches the live state: %d workspaces, %d checkpoints\n", out.Workspaces, out.Checkpoints)
			return
		}
		fmt.Fprintf(w, "replay differs from the live state in %d places:\n", len(diffs))
		for _, d := range diffs {
			fmt.Fprintf(w, "  %s\n", d)
		}
	})
	if err == nil && len(diffs) > 0 {
		return exitError(2)
	}
	return err
}

// timeline returns one readable line for a trail entry: time, workspace,
// actor, event and the body fields that say what happened.
func timeline(e trail.Entry) string {
	ts := e.Timestamp
	if t, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		ts = t.UTC().Format("15:04:05.000")
	}
	ws := "system"
	if e.Workspace != "" {
		ws = short(e.Workspace)
	}
	line := fmt.Sprintf("%s  %-8s  %-12s  %-26s", ts, ws, e.Actor, e.EventType)
	if d := details(e); d != "" {
		line += "  " + d
	}
	return strings.TrimRight(line, " ")
}

// short returns the last 8 characters of an id: for ULIDs, the random
// part that tells ids of the same millisecond apart.
func short(id string) string {
	if len(id) <= 8 {
		return id
	}
	return id[len(id)-8:]
}

// details says what an entry records, from its body.
func details(e trail.Entry) string {
	var b map[string]any
	if json.Unmarshal(e.Body, &b) != nil {
		return ""
	}
	s := func(k string) string {
		switch v := b[k].(type) {
		case string:
			return v
		case nil:
			return ""
		default:
			return fmt.Sprint(v)
		}
	}
	switch e.EventType {
	case trail.EventCheckpointCreated:
		d := fmt.Sprintf("%s %s %s", s("type"), s("status"), s("checkpoint_id"))
		if p := s("parent"); p != "" {
			d += " after " + short(p)
		}
		return d
	case trail.EventWorkspaceStateChanged:
		d := fmt.Sprintf("%s→%s (%s)", s("from_state"), s("to_state"), s("trigger"))
		if r := s("reason"); r != "" {
			d += " " + r
		}
		return d
	case trail.EventWorkspaceCreated:
		if p := s("parent"); p != "" {
			return fmt.Sprintf("%s %s under %s", s("role"), s("workspace_id"), short(p))
		}
		return fmt.Sprintf("%s %s (root)", s("role"), s("workspace_id"))
	case trail.EventWorkspaceReparented:
		return fmt.Sprintf("parent %s→%s (%s)", short(s("old_parent")), short(s("new_parent")), s("reason"))
	case trail.EventSignalEmitted:
		d := s("type") + " to the parent"
		if r := s("reason"); r != "" {
			d += " (" + r + ")"
		}
		if ref := s("ref"); ref != "" {
			d += " ref " + ref
		}
		return d
	case trail.EventEnvelopeCreated, trail.EventEnvelopeDelivered:
		return strings.TrimSpace(fmt.Sprintf("%s %s→%s", s("type"), short(s("from")), short(s("to"))))
	}
	// Any other event: its registry fields, in spec order, that have a
	// short scalar value.
	var parts []string
	for _, k := range e.EventType.RequiredFields() {
		switch k {
		case "workspace_id", "workspace", "timestamp":
			continue
		}
		switch b[k].(type) {
		case string, float64, bool:
			v := s(k)
			if len(v) > 40 {
				v = v[:37] + "..."
			}
			if v != "" {
				parts = append(parts, k+"="+v)
			}
		}
		if len(parts) == 4 {
			break
		}
	}
	return strings.Join(parts, " ")
}

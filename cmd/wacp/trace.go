package main

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/trace"
	"github.com/wacpd/wacpd/wire"
)

// traceReport is what trace verify prints with -o json.
type traceReport struct {
	OK        bool            `json:"ok"`
	Events    int             `json:"events"`
	SessionID string          `json:"session_id"` // the first event's (one session's export)
	Sessions  int             `json:"sessions"`   // the sessions in the file, each chain checked
	Error     *traceViolation `json:"error,omitempty"`
	// TreeHead is what --sth checked: the signed head, and whether the
	// export's first Size events have its root.
	TreeHead *traceHeadCheck `json:"tree_head,omitempty"`
}

type traceHeadCheck struct {
	Size    uint64 `json:"size"`
	Root    string `json:"root"`
	Matches bool   `json:"matches"`
}

type traceViolation struct {
	Kind    string `json:"kind"` // trace.HashMismatch, ChainBroken, SequenceGap or InvalidGenesis
	Index   int    `json:"index"`
	Message string `json:"message"`
}

func traceVerify(c *cli, args []string) error {
	const cmd = "trace verify"
	fs := c.flags(cmd, cmd+" FILE [--sth FILE [--public-key K]]\n\nChecks a TRACE export (JSONL, one event per line; - for stdin) offline, without a daemon: for\n"+
		"each session in it, the genesis, then each event's hash, its link to the event before and its\n"+
		"sequence. With --sth (a whole-log export: trace export --all --sth FILE) it also checks the signed\n"+
		"TRACE tree head with the daemon's key and that the export's first events have its Merkle root.\n"+
		"Prints the first violation, its kind and index, and exits 2 if there is one.")
	sthFile := fs.String("sth", "", "the signed TRACE tree head (JSON, from trace export --sth) to check the export against")
	key := fs.String("public-key", "", "with --sth: the tree-head key you trust, or a file holding it (default: the data dir's trail.pub)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *key != "" && *sthFile == "" {
		return usagef(cmd, "--public-key goes with --sth")
	}
	events, err := readTrace(c, pos[0])
	if err != nil {
		return err
	}
	rep := traceReport{OK: true, Events: len(events)}
	if len(events) > 0 {
		rep.SessionID = events[0].SessionID
	}
	if v := verifySessions(events, &rep.Sessions); v != nil {
		rep.OK, rep.Error = false, v
	}
	if *sthFile != "" && rep.OK {
		th, err := openTraceHead(c, *sthFile, *key)
		if err != nil {
			return err
		}
		if uint64(len(events)) < th.Size {
			return fmt.Errorf("%s: the export has %d events and the head covers %d: check a whole-log export (trace export --all)", cmd, len(events), th.Size)
		}
		root, err := trace.Root(events[:th.Size])
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		rep.TreeHead = &traceHeadCheck{Size: th.Size, Root: th.Root, Matches: "sha256:"+hex.EncodeToString(root) == th.Root}
		if !rep.TreeHead.Matches {
			rep.OK, rep.Error = false, &traceViolation{Kind: "root_mismatch", Index: int(th.Size),
				Message: fmt.Sprintf("the first %d events have root sha256:%x, the signed head %s", th.Size, root, th.Root)}
		}
	}
	err = c.print(rep, func(w io.Writer) {
		if !rep.OK {
			fmt.Fprintf(w, "%s at index %d: %s\n", rep.Error.Kind, rep.Error.Index, rep.Error.Message)
			return
		}
		if rep.Sessions > 1 {
			fmt.Fprintf(w, "ok: %d events, %d sessions", rep.Events, rep.Sessions)
		} else {
			fmt.Fprintf(w, "ok: %d events, session %s", rep.Events, orDash(rep.SessionID))
		}
		if rep.TreeHead != nil {
			fmt.Fprintf(w, "; the first %d have the signed head's root %s", rep.TreeHead.Size, rep.TreeHead.Root)
		}
		fmt.Fprintln(w)
	})
	if err == nil && !rep.OK {
		return exitError(2)
	}
	return err
}

// verifySessions checks the chain of every session in events (a whole-log
// export interleaves them; each keeps its order) and counts them. The
// index of a violation is the event's in the file.
func verifySessions(events []trace.Event, sessions *int) *traceViolation {
	var order []string
	bySession := map[string][]int{}
	for i, ev := range events {
		if _, ok := bySession[ev.SessionID]; !ok {
			order = append(order, ev.SessionID)
		}
		bySession[ev.SessionID] = append(bySession[ev.SessionID], i)
	}
	*sessions = len(order)
	var first *traceViolation
	for _, s := range order {
		idx := bySession[s]
		evs := make([]trace.Event, len(idx))
		for j, i := range idx {
			evs[j] = events[i]
		}
		if v := trace.Verify(evs); v != nil {
			at := idx[v.Index]
			if first == nil || at < first.Index {
				first = &traceViolation{Kind: v.Kind, Index: at, Message: v.Detail}
			}
		}
	}
	return first
}

// openTraceHead reads a signed TRACE head (JSON) from file and opens its
// note with key: the key itself, a file holding it, or the data dir's
// trail.pub.
func openTraceHead(c *cli, file, key string) (trace.TreeHead, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return trace.TreeHead{}, fmt.Errorf("read the tree head: %w", err)
	}
	var th trace.TreeHead
	if err := json.Unmarshal(b, &th); err != nil {
		return trace.TreeHead{}, fmt.Errorf("%s is not a TRACE tree head: %w", file, err)
	}
	if key == "" {
		key = filepath.Join(cmp.Or(c.opts.DataDir, "wacp-data"), datadir.PublicKeyFile)
	}
	if kb, err := os.ReadFile(key); err == nil {
		key = string(kb)
	}
	opened, err := trace.OpenTreeHead(th.Note, strings.TrimSpace(key))
	if err != nil {
		return trace.TreeHead{}, err
	}
	return opened, nil
}

func traceDiff(c *cli, args []string) error {
	const cmd = "trace diff"
	fs := c.flags(cmd, cmd+" A B\n\nCompares two sessions' TRACE exports (JSONL; one of them may be - for stdin) event by event and\n"+
		"prints each difference on a line, leaving out what differs between any two runs: ids, times,\n"+
		"hashes (payload members named *_id, *_hash, *_at, timestamp, duration_ms, evaluation_time_ms).\n"+
		"Exits 0 when there is none and 1 when there are some, like diff(1).")
	pos, err := parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	if pos[0] == "-" && pos[1] == "-" {
		return usagef(cmd, "only one of A and B can be - (stdin)")
	}
	a, err := readTrace(c, pos[0])
	if err != nil {
		return err
	}
	b, err := readTrace(c, pos[1])
	if err != nil {
		return err
	}
	changes := trace.Diff(a, b)
	if c.format == "json" {
		err = c.print(nonNilList(changes), nil)
	} else {
		for _, ch := range changes {
			if _, err = fmt.Fprintln(c.stdout, ch); err != nil {
				break
			}
		}
	}
	if err == nil && len(changes) > 0 {
		return exitError(1)
	}
	return err
}

func traceExport(c *cli, args []string) error {
	const cmd = "trace export"
	fs := c.flags(cmd, cmd+" [--session S | --all] [--out FILE] [--sth FILE]\n\n"+
		"Writes a session's TRACE events as JSONL, one event per line in sequence order, for trace verify\n"+
		"and trace diff: without --session your own (an agent's token), with --session any one, with --all\n"+
		"the whole log in commit order (a coordinator, auditor or user token with view_trail_any). --sth\n"+
		"writes the TRACE log's signed tree head as JSON (it comes with --session's and --all's\n"+
		"audit.trace.read); trace verify --sth checks a whole-log export against it. FILE is replaced once\n"+
		"complete.")
	session := fs.String("session", "", "the session (workspace id) to export; default your own")
	all := fs.Bool("all", false, "export the whole TRACE log, every session, in commit order")
	out := fs.String("out", "", "write the events to FILE (default stdout)")
	sth := fs.String("sth", "", "write the signed TRACE tree head (JSON) to FILE")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	switch {
	case *all && *session != "":
		return usagef(cmd, "give --session or --all, not both")
	case *sth != "" && *session == "" && !*all:
		return usagef(cmd, "--sth needs --session or --all: the signed head comes with audit.trace.read")
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	events, head, err := readTraceLog(c, cl, *session, *all)
	if err != nil {
		return err
	}
	if *sth != "" && head == nil {
		return fmt.Errorf("%s: the daemon has not signed a TRACE tree head yet", cmd)
	}
	if *out == "" || *out == "-" {
		if len(events) == 0 {
			// audit.trace.read answers an empty page for a session
			// that does not exist, too: say so, a typo verifies.
			fmt.Fprintf(c.stderr, "wacp: trace export: no TRACE events in session %s\n", cmp.Or(*session, cl.Workspace()))
		}
		err = trace.WriteJSONL(c.stdout, events)
	} else {
		err = writeFile(*out, func(w io.Writer) error { return trace.WriteJSONL(w, events) })
	}
	if err != nil {
		return fmt.Errorf("write trace export: %w", err)
	}
	if *sth != "" {
		err := writeFile(*sth, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(head)
		})
		if err != nil {
			return fmt.Errorf("write tree head: %w", err)
		}
	}
	if *out != "" && *out != "-" {
		what := "session " + cmp.Or(*session, cl.Workspace())
		if *all {
			what = "the whole log"
		}
		fmt.Fprintf(c.stderr, "exported %d events of %s to %s\n", len(events), what, *out)
	}
	return nil
}

// writeFile writes file with write, next to it first and then renamed, so
// file is either the old one or complete.
func writeFile(file string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// readTraceLog reads a session's TRACE events page by page: the client's
// own (trace) when session is empty, else session's (audit.trace.read)
// with the log's latest signed head.
func readTraceLog(c *cli, cl *client.Client, session string, all bool) ([]trace.Event, *trace.TreeHead, error) {
	var events []trace.Event
	var head *trace.TreeHead
	var from uint64
	for {
		var page wire.TracePage
		var err error
		if session == "" && !all {
			page, err = cl.Trace(c.ctx, from, 0)
		} else {
			page, err = cl.AuditTrace(c.ctx, wire.TraceRequest{Session: session, From: from})
		}
		if err != nil {
			return nil, nil, err
		}
		events = append(events, page.Events...)
		if page.TreeHead != nil && head == nil {
			// The first page's head: signed before any event was read,
			// so the export holds every event it covers.
			head = page.TreeHead
		}
		if page.Next == nil {
			return events, head, nil
		}
		if *page.Next <= from {
			return nil, nil, fmt.Errorf("trace export: the daemon's next page (%d) does not follow %d", *page.Next, from)
		}
		from = *page.Next
	}
}

// readTrace reads a TRACE export from file, or stdin for "-".
func readTrace(c *cli, file string) ([]trace.Event, error) {
	r := c.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("open trace export: %w", err)
		}
		defer f.Close()
		r = f
	}
	events, err := trace.ReadJSONL(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return events, nil
}

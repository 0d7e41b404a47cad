package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/trace"
	"github.com/wacpd/wacpd/wire"
)

// traceReport is what trace verify prints with -o json.
type traceReport struct {
	OK        bool            `json:"ok"`
	Events    int             `json:"events"`
	SessionID string          `json:"session_id"`
	Error     *traceViolation `json:"error,omitempty"`
}

type traceViolation struct {
	Kind    string `json:"kind"` // trace.HashMismatch, ChainBroken, SequenceGap or InvalidGenesis
	Index   int    `json:"index"`
	Message string `json:"message"`
}

func traceVerify(c *cli, args []string) error {
	const cmd = "trace verify"
	fs := c.flags(cmd, cmd+" FILE\n\nChecks a session's TRACE export (JSONL, one event per line; - for stdin) offline, without a\n"+
		"daemon: the genesis, then each event's hash, its link to the event before and its sequence.\n"+
		"Prints the first violation, its kind and index, and exits 2 if there is one.")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	events, err := readTrace(c, pos[0])
	if err != nil {
		return err
	}
	rep := traceReport{OK: true, Events: len(events)}
	if len(events) > 0 {
		rep.SessionID = events[0].SessionID
	}
	if v := trace.Verify(events); v != nil {
		rep.OK, rep.Error = false, &traceViolation{Kind: v.Kind, Index: v.Index, Message: v.Detail}
	}
	err = c.print(rep, func(w io.Writer) {
		if rep.OK {
			fmt.Fprintf(w, "ok: %d events, session %s\n", rep.Events, orDash(rep.SessionID))
			return
		}
		fmt.Fprintf(w, "%s at index %d: %s\n", rep.Error.Kind, rep.Error.Index, rep.Error.Message)
	})
	if err == nil && !rep.OK {
		return exitError(2)
	}
	return err
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
	fs := c.flags(cmd, cmd+" [--session S] [--out FILE] [--sth FILE]\n\n"+
		"Writes a session's TRACE events as JSONL, one event per line in sequence order, for trace verify\n"+
		"and trace diff: without --session your own (an agent's token), with --session any one (a\n"+
		"coordinator, auditor or user token with view_trail_any). --sth writes the TRACE log's signed\n"+
		"tree head as JSON (it comes with --session's audit.trace.read). FILE is replaced once complete.")
	session := fs.String("session", "", "the session (workspace id) to export; default your own")
	out := fs.String("out", "", "write the events to FILE (default stdout)")
	sth := fs.String("sth", "", "write the signed TRACE tree head (JSON) to FILE")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *sth != "" && *session == "" {
		return usagef(cmd, "--sth needs --session: the signed head comes with audit.trace.read")
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	events, head, err := readTraceLog(c, cl, *session)
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
		fmt.Fprintf(c.stderr, "exported %d events of session %s to %s\n", len(events), cmp.Or(*session, cl.Workspace()), *out)
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
func readTraceLog(c *cli, cl *client.Client, session string) ([]trace.Event, *trace.TreeHead, error) {
	var events []trace.Event
	var head *trace.TreeHead
	var from uint64
	for {
		var page wire.TracePage
		var err error
		if session == "" {
			page, err = cl.Trace(c.ctx, from, 0)
		} else {
			page, err = cl.AuditTrace(c.ctx, wire.TraceRequest{Session: session, From: from})
		}
		if err != nil {
			return nil, nil, err
		}
		events = append(events, page.Events...)
		if page.TreeHead != nil {
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

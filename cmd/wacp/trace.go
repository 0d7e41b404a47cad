package main

import (
	"fmt"
	"io"
	"os"

	"github.com/wacpd/wacpd/trace"
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

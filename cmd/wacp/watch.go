package main

import (
	"fmt"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/signal"
)

const watchUsage = `watch [--durable NAME] [--all] [--workspace WS]

Prints one line per signal delivered to the workspace (its children's
signals) until Ctrl-C; JSON lines with -o json. With --durable, a later
watch with the same name resumes after the last signal printed. An agent's
token may use one durable consumer only, named after its workspace:
--durable <its workspace id>; the coordinator may use any name. Signals are
delivered at least once: drop repeats by id. A message on a signal subject
that is not a signal is reported on stderr and skipped.`

func watchCmd(c *cli, args []string) error {
	fs := c.flags("watch", watchUsage)
	var opts client.WatchOptions
	fs.StringVar(&opts.Durable, "durable", "", "durable consumer name, to resume where the last watch stopped")
	fs.BoolVar(&opts.DeliverAll, "all", false, "start from the first stored signal instead of now")
	fs.StringVar(&opts.Workspace, "workspace", "", "whose signals (default: yours; coordinator only)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	opts.OnUndecodable = func(subject string, data []byte, err error) {
		fmt.Fprintf(c.stderr, "wacp: watch: skipped a message on %s that is not a signal (%d bytes): %v\n", subject, len(data), err)
	}
	return cl.Watch(c.ctx, opts, func(s signal.Signal) error {
		if c.format == "json" {
			return c.jsonLine(s)
		}
		line := fmt.Sprintf("%s  %s  %s", s.Timestamp, s.From, s.Type)
		if s.Ref != nil {
			line += "  ref=" + *s.Ref
		}
		if s.Reason != nil {
			line += fmt.Sprintf("  reason=%q", *s.Reason)
		}
		_, err := fmt.Fprintln(c.stdout, line)
		return err
	})
}

package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/wacpd/wacpd/bench"
)

// output is what the flags say about the run's output, beside bench.Config.
type output struct {
	json                   bool
	cpuprofile, memprofile string
}

// parseFlags turns the command line into a bench.Config.
func parseFlags(args []string, stderr io.Writer) (bench.Config, output, error) {
	fs := flag.NewFlagSet("wacp-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.Config
	var o output
	fs.StringVar(&cfg.URL, "url", "", "NATS URL of a running daemon, or the comma-separated servers of its NATS cluster; default: start one in-process under -dir")
	fs.StringVar(&cfg.Token, "token", "", "admin token for -url (default $WACP_TOKEN)")
	fs.StringVar(&cfg.NATSToken, "nats-token", os.Getenv("WACP_NATS_TOKEN"), "NATS token for -url when the daemon runs on an external NATS server (wacpd -nats-url; default $WACP_NATS_TOKEN)")
	fs.Func("pid", "NAME=PID of a process (a wacpd or nats-server behind -url) whose CPU time over the load to report per checkpoint; repeatable; Linux only", func(v string) error {
		p, err := bench.ParseProcess(v)
		cfg.Processes = append(cfg.Processes, p)
		return err
	})
	fs.StringVar(&cfg.Dir, "dir", "", "parent of the temporary daemon and floor directories (default $TMPDIR)")
	fs.IntVar(&cfg.Clients, "clients", 1, "agent workspaces writing at once")
	fs.IntVar(&cfg.Size, "size", 1024, "payload bytes per checkpoint and per floor write")
	fs.DurationVar(&cfg.Duration, "duration", 0, "load duration (default 10s)")
	fs.IntVar(&cfg.N, "n", 0, "total checkpoints instead of -duration")
	fs.DurationVar(&cfg.FloorDuration, "floor-duration", 0, "floor duration (default 2s)")
	fs.IntVar(&cfg.FloorN, "floor-n", 0, "floor writes instead of -floor-duration")
	fs.BoolVar(&cfg.Bounds, "bounds", false, "also measure this machine's bounds: the transport alone and a hand-built service (see docs/performance.md)")
	fs.DurationVar(&cfg.BoundsDuration, "bounds-duration", 0, "duration of each bound (default 3s; -n counts requests instead)")
	memLimit := fs.Int64("memory-limit-mb", 0, "the in-process daemon's -memory-limit-mb (0: none)")
	fs.DurationVar(&cfg.QuietBelow, "quiet-below", 0, "first wait until the machine line's fixed computation takes at most this long twice in a row (this machine: 535-560ms when quiet); 0: do not wait")
	fs.DurationVar(&cfg.QuietWait, "quiet-wait", 0, "the longest wait for -quiet-below (default 30m)")
	fs.IntVar(&cfg.Window, "window", 0, "checkpoints per window of a long load (default 100000; shown for two windows or more)")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	verbose := fs.Bool("v", false, "log progress to stderr")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&o.memprofile, "memprofile", "", "write an allocation profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return cfg, o, err
	}
	cfg.MemoryLimit = *memLimit << 20
	if fs.NArg() > 0 {
		return cfg, o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	return cfg, o, nil
}

// Command wacp-bench measures wacpd's checkpoint path against the disk's own
// limit: it runs agents creating checkpoints over NATS TCP against an
// in-process daemon (or -url) and a bare Badger floor on the same disk, and
// prints the figures and their ratios. See docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/wacpd/wacpd/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "wacp-bench:", err)
		os.Exit(1)
	}
}

// run is main without the process: tests call it with their own ctx and args.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("wacp-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.Config
	fs.StringVar(&cfg.URL, "url", "", "NATS URL of a running daemon; default: start one in-process under -dir")
	fs.StringVar(&cfg.Token, "token", "", "admin token for -url (default $WACP_TOKEN)")
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
	asJSON := fs.Bool("json", false, "print the report as JSON")
	verbose := fs.Bool("v", false, "log progress to stderr")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memprofile := fs.String("memprofile", "", "write an allocation profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.MemoryLimit = *memLimit << 20
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *memprofile != "" {
		f, err := os.Create(*memprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteText(stdout)
}

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
	cfg, o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
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
	if o.memprofile != "" {
		f, err := os.Create(o.memprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
	}
	if o.json {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteText(stdout)
}

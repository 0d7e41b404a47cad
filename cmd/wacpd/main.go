// Command wacpd is the WACP runtime daemon: it serves the wire contract v1
// over NATS (embedded by default). See README.md and docs/api.md.
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
	"syscall"
	"time"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/dbupkeep"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "wacpd:", err)
		switch {
		case errors.Is(err, flag.ErrHelp):
			os.Exit(0)
		case errors.Is(err, daemon.ErrTrailCorrupt):
			os.Exit(2) // a failed verification (wire-v1 §1)
		}
		os.Exit(1)
	}
}

// run is main without the process: tests call it with their own ctx and args.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("wacpd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := daemon.Config{Version: version, Stdout: stdout}
	fs.StringVar(&cfg.DataDir, "data", "./wacp-data", "data directory (database, tokens, wacpd.json)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:4222", "embedded NATS server address; port 0 picks a free port")
	fs.StringVar(&cfg.TaxonomyFile, "taxonomy", "", "WACP taxonomy file (YAML or JSON); default: base taxonomy")
	fs.StringVar(&cfg.HighwayFile, "highway", "", "human highway: a preset (autonomous, supervised, gated) or a YAML file with a highway: block; default: only task_approval gated, 15m, reject")
	fs.StringVar(&cfg.NATSURL, "nats-url", "", "use this NATS server (with JetStream) instead of the embedded one; a comma-separated list names a cluster's seed servers")
	fs.IntVar(&cfg.Replicas, "replicas", 0, "replica count of the JetStream streams wacpd makes, 1 to 5; 0: 3 when -nats-url is a cluster, else 1")
	fs.IntVar(&cfg.Deployment.Partitions, "partitions", 0, "one of several daemons on the NATS cluster at -nats-url: the deployment's partition count, as in the cluster's subject mapping (docs/scale-out.md §2); 0: a single daemon")
	fs.Func("own", "the partitions this daemon serves, such as 0-3 or 0,2 (with -partitions; fixed for the data dir)", func(v string) error {
		ps, err := daemon.ParsePartitions(v)
		cfg.Deployment.Own = ps
		return err
	})
	fs.StringVar(&cfg.Deployment.DaemonID, "daemon-id", "", "the daemon's name in its deployment (with -partitions): letters, digits, - and _")
	fs.DurationVar(&cfg.Deployment.LeaseTTL, "lease-ttl", 30*time.Second, "with -partitions: how long a partition's lease lasts unrenewed; a killed daemon's restart waits for it")
	fs.StringVar(&cfg.NATSToken, "nats-token", os.Getenv("WACPD_NATS_TOKEN"), "token for -nats-url (or $WACPD_NATS_TOKEN)")
	fs.StringVar(&cfg.MetricsAddr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (HOST:PORT; port 0 picks a free port); default off")
	fs.DurationVar(&cfg.GCInterval, "gc-interval", 10*time.Minute, "period of Badger value-log garbage collection; negative turns it off")
	fs.DurationVar(&cfg.DeliveryLease, "delivery-lease", 30*time.Second, "base lease of an envelope taken with inbox.next: delivery n is redelivered unless acknowledged within n times this")
	fs.BoolVar(&cfg.FullCheck, "full-check", false, "check every trail entry at start, not only those written since the last start")
	memLimit := fs.Int64("memory-limit-mb", 0, "MiB of memory to stay within: sizes Badger's memtables and caches and sets the Go runtime's soft memory limit (docs/operations.md); 0: no limit")
	minFree := fs.Int64("min-free-mb", 128, "MiB the data dir's disk must keep free; below it no work is admitted (degraded mode); negative turns the guard off")
	sigBytes := fs.Int64("signals-max-bytes", 1<<30, "size limit of the WACP_SIGNALS stream in bytes; past it the oldest signals are discarded")
	fs.DurationVar(&cfg.SignalsMaxAge, "signals-max-age", 720*time.Hour, "age limit of signals in WACP_SIGNALS; negative keeps them until -signals-max-bytes bites")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", time.Minute, "bound on the whole shutdown after SIGTERM; past it wacpd exits 1 and the next start recovers")
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", 256, "requests worked on at once; each principal gets at most an eighth (docs/security.md, fair admission)")
	fs.DurationVar(&cfg.TrailWarmRetention, "trail-warm-retention", 0, "archive the archivable trail entries of workspaces closed or failed this long ago to db/cold (trail compaction); 0: off")
	fs.IntVar(&cfg.BudgetWarnPercent, "budget-warn-percent", 80, "budget_warning threshold: percent of a budget limit, 1 to 99")
	fs.IntVar(&cfg.Capacity.MaxLiveWorkspaces, "max-live-workspaces", 10000, "admission: workspaces not closed or failed, the root included; negative: no bound")
	wsMem := fs.Int64("workspace-memory-mb", 1, "admission: MiB one live workspace is reckoned to hold, checked against -memory-limit-mb")
	wsDisk := fs.Int64("workspace-disk-mb", 16, "admission: MiB of free disk a new workspace needs above -min-free-mb")
	fs.Func("atlas", "Atlas manifest to load at start: a JSON file or a package directory (repeatable)", func(v string) error {
		cfg.AtlasPaths = append(cfg.AtlasPaths, v)
		return nil
	})
	fs.StringVar(&cfg.HTTPAddr, "http", "", "serve CARP over HTTP at http://ADDR/carp/v1/ (HOST:PORT; port 0 picks a free port); default off")
	level := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintln(stdout, "wacpd", version)
		return nil
	}
	cfg.MinFreeBytes = *minFree << 20
	if *minFree < 0 {
		cfg.MinFreeBytes = -1
	} else if *minFree == 0 {
		cfg.MinFreeBytes = 1 // zero would mean the default; 1 byte is as good as none
	}
	cfg.SignalsMaxBytes = *sigBytes
	cfg.Capacity.MemoryPerWorkspace, cfg.Capacity.StoragePerWorkspace = *wsMem<<20, *wsDisk<<20
	switch {
	case *memLimit < 0:
		return fmt.Errorf("-memory-limit-mb %d: want 0 (no limit) or a size in MiB", *memLimit)
	case *memLimit > 0 && *memLimit<<20 < dbupkeep.MinMemoryBudget:
		return fmt.Errorf("-memory-limit-mb %d: below the smallest budget, %d MiB", *memLimit, dbupkeep.MinMemoryBudget>>20)
	}
	cfg.MemoryLimit = *memLimit << 20
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	rt, err := daemon.New(cfg)
	if err != nil {
		return err
	}
	return rt.Run(ctx)
}

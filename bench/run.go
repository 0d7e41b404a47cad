package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"
)

// Run measures the floor, the bounds if asked, then the daemon under load,
// and returns the report. The floor and bounds run first, before the daemon
// starts, so that none disturbs another; both use temporary directories under cfg.Dir, which
// Run removes.
func Run(ctx context.Context, cfg Config) (_ *Report, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp(cfg.Dir, "wacp-bench-")
	if err != nil {
		return nil, fmt.Errorf("create work dir: %w", err)
	}
	defer os.RemoveAll(base)

	var before, waited time.Duration
	if cfg.QuietBelow > 0 {
		cfg.Logger.Info("waiting for a quiet machine", "below", cfg.QuietBelow, "at most", cfg.QuietWait)
		if before, waited, err = waitQuiet(ctx, cfg.QuietBelow, cfg.QuietWait, calibrate); err != nil {
			return nil, err
		}
	} else {
		before = calibrate()
	}
	diskBefore, err := syncProbe(base)
	if err != nil {
		return nil, err
	}
	cfg.Logger.Info("floor", "dir", base, "duration", cfg.FloorDuration, "n", cfg.FloorN)
	floor, err := Floor(ctx, filepath.Join(base, "floor"), cfg.Size, cfg.FloorDuration, cfg.FloorN)
	if err != nil {
		return nil, err
	}
	rep := &Report{Daemon: cfg.URL, Dir: base, Clients: cfg.Clients, Size: cfg.Size, Floor: floor, Machine: Machine{Waited: waited, Before: before, DiskBefore: diskBefore}}
	if cfg.Bounds {
		cfg.Logger.Info("bounds", "duration", cfg.BoundsDuration, "n", cfg.N)
		b, err := measureBounds(ctx, filepath.Join(base, "bounds"), cfg.Clients, cfg.Size, cfg.BoundsDuration, cfg.N, cfg.Window)
		if err != nil {
			return nil, err
		}
		rep.Bounds = &b
	}
	// The floor's and the bounds' memory is garbage now: return it to the
	// system before the peak is reset, so that the peak is the load's.
	debug.FreeOSMemory()
	reset := resetPeakRSS()

	dial, dataDir := dialer{url: cfg.URL, token: cfg.Token, natsToken: cfg.NATSToken}, ""
	var d *inProcess
	if cfg.URL == "" {
		dataDir = filepath.Join(base, "daemon")
		rep.MemoryLimit = cfg.MemoryLimit
		if d, err = startDaemon(ctx, dataDir, cfg.MemoryLimit); err != nil {
			return nil, err
		}
		defer func() {
			if d == nil {
				return
			}
			if serr := d.stop(); serr != nil {
				err = errors.Join(err, fmt.Errorf("stop daemon: %w", serr))
			}
		}()
		rep.Daemon, dial = "in-process", dialer{url: d.url, token: d.token}
	}
	res, err := runLoad(ctx, cfg, dial, dataDir)
	if err != nil {
		return nil, err
	}
	rep.PeakRSS, rep.RSSScope = peakRSS(), rssScope(cfg.URL == "", reset)
	rep.PeakRSSAnon = res.anon
	rep.Elapsed, rep.Acks, rep.Rate = res.elapsed, Summarize(res.acks), rate(len(res.acks), res.elapsed)
	rep.CPU, rep.Processes = perOp(res.cpu, len(res.acks)), res.others
	if n := len(res.acks); n > 0 {
		rep.Allocs, rep.AllocBytes = float64(res.allocs)/float64(n), float64(res.allocBytes)/float64(n)
	}
	rep.Signals, rep.Verify = Summarize(res.signals), res.verify
	rep.Windows, rep.Growth = res.windows, growth(res.windows)
	if d != nil {
		if n := float64(len(res.acks)); n > 0 {
			rep.Written = &Written{PutsPerCheckpoint: float64(res.puts) / n, BytesPerCheckpoint: float64(res.written) / n,
				SegmentPerCheckpoint: float64(res.segment) / n, RawPerCheckpoint: float64(res.raw) / n}
		}
		cfg.Logger.Info("restart and store", "dir", dataDir)
		stopped := d
		d = nil
		if rep.After, err = afterLoad(ctx, stopped, dataDir, len(res.acks), cfg.MemoryLimit); err != nil {
			return nil, err
		}
		rep.Verify.Bound = rate(int(rep.Verify.Entries), rep.After.Store.Read)
		rep.Verify.OverBound = ratio(rep.Verify.Rate, rep.Verify.Bound)
		if shape := shapeOf(rep.Written); rep.Bounds != nil && shape != nil {
			cfg.Logger.Info("volume bound", "puts", shape.Puts, "value", shape.Value)
			v, c, err := measureVolume(ctx, filepath.Join(base, "bounds"), cfg.Clients, cfg.Size, cfg.BoundsDuration, cfg.N, cfg.Window, *shape)
			if err != nil {
				return nil, err
			}
			rep.Bounds.Volume, rep.Bounds.Contract, rep.Bounds.Shape = &v, &c, shape
		}
	}
	rep.Ratios = rep.ratios()
	rep.Targets = rep.targets()
	rep.Machine.After = calibrate()
	if rep.Machine.DiskAfter, err = syncProbe(base); err != nil {
		return nil, err
	}
	return rep, nil
}

// afterLoad stops the daemon d, times a restart on its data dir, stops
// that one too and measures the store.
func afterLoad(ctx context.Context, d *inProcess, dataDir string, checkpoints int, memoryLimit int64) (*AfterReport, error) {
	if err := d.stop(); err != nil {
		return nil, fmt.Errorf("stop daemon: %w", err)
	}
	d, took, err := restartTime(ctx, dataDir, memoryLimit)
	if err != nil {
		return nil, err
	}
	if err := d.stop(); err != nil {
		return nil, fmt.Errorf("stop restarted daemon: %w", err)
	}
	store, err := measureStore(dataDir, checkpoints)
	if err != nil {
		return nil, fmt.Errorf("measure store: %w", err)
	}
	return &AfterReport{Restart: took, Store: store}, nil
}

// rssScope says what the peak RSS covers.
func rssScope(inProcess, reset bool) string {
	s := "this process only, not the daemon's"
	if inProcess {
		s = "this process: clients and in-process daemon"
	}
	if reset {
		return s + ", from the start of the load"
	}
	return s + ", floor and bounds included"
}

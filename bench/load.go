package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/taxonomy"
)

// committed is an acknowledged checkpoint and its timestamp.
type committed struct {
	id ulid.ULID // not a string: see receipts
	at int64     // its timestamp, Unix nanoseconds
}

// worker is one agent's share of the load.
type worker struct {
	acks []ack
	cps  []committed
}

// plan says when workers stop: after end, or when tickets, if not nil,
// runs out.
type plan struct {
	end     time.Time
	tickets *atomic.Int64
}

// newPlan is a plan that ends after d or, if n is positive, after n
// checkpoints in all.
func newPlan(d time.Duration, n int) plan {
	p := plan{end: time.Now().Add(d)}
	if n > 0 {
		p.tickets = new(atomic.Int64)
		p.tickets.Store(int64(n))
	}
	return p
}

// checkpointRequest is the agents' checkpoint request: an artifact with
// content, child of parent.
func checkpointRequest(content string, parent *string) client.CheckpointRequest {
	return client.CheckpointRequest{
		Type: taxonomy.CheckpointArtifact, Intent: "benchmark", Parent: parent,
		Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceHigh,
		Payload: checkpointchain.Payload{Content: content, FilesChanged: []string{"bench.txt"}},
	}
}

// next reports whether a worker should create another checkpoint.
func (p plan) next() bool {
	if p.tickets != nil {
		return p.tickets.Add(-1) >= 0
	}
	return time.Now().Before(p.end)
}

// run creates checkpoints on one chain, each the child of the last, until
// p says stop.
func (w *worker) run(ctx context.Context, c *client.Client, content string, p plan) error {
	var parent *string
	for p.next() {
		req := checkpointRequest(content, parent)
		t0 := time.Now()
		cp, err := c.CreateCheckpoint(ctx, req)
		end := time.Now()
		if err != nil {
			return fmt.Errorf("checkpoint %d of %s: %w", len(w.acks)+1, c.Workspace(), err)
		}
		at, err := time.Parse(time.RFC3339Nano, cp.Timestamp)
		if err != nil {
			return fmt.Errorf("checkpoint %s: timestamp: %w", cp.ID, err)
		}
		id, err := ulid.ParseStrict(cp.ID)
		if err != nil {
			return fmt.Errorf("checkpoint %s: id: %w", cp.ID, err)
		}
		w.acks = append(w.acks, ack{end: end, d: end.Sub(t0)})
		w.cps = append(w.cps, committed{id, at.UnixNano()})
		parent = &cp.ID
	}
	return nil
}

// loadResult is what the agents measured.
type loadResult struct {
	acks    []time.Duration
	signals []time.Duration
	elapsed time.Duration
	verify  VerifyReport
	windows []Window
	anon    int64 // the largest anonymous resident set sampled during the load
	// puts and written are what Badger was given during the load, in this
	// process (badgerWrites): the in-process daemon's writes.
	puts, written int64
	// segment and raw are what the segment files were given
	// (segmentWrites).
	segment, raw int64
	cpu          time.Duration // this process's CPU time over the load
	others       []ProcessCPU  // Config.Processes' over the load
	// allocs and allocBytes are what this process allocated on the heap
	// over the load (heapAllocs).
	allocs, allocBytes uint64
}

// runLoad sets up the workers, runs them under the coordinator's watch,
// waits for their signals and verifies the trail. dataDir is the
// in-process daemon's data dir, whose size the windows report, or "".
func runLoad(ctx context.Context, cfg Config, d dialer, dataDir string) (loadResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	coord, err := dialCoordinator(ctx, d)
	if err != nil {
		return loadResult{}, err
	}
	defer coord.Close()
	cfg.Logger.Info("creating workers", "clients", cfg.Clients)
	workers, err := newWorkers(ctx, coord, d, cfg.Clients)
	if err != nil {
		return loadResult{}, err
	}
	defer closeAll(workers)

	rc := newReceipts(workers)
	wctx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Go(func() {
		durable := "wacp-bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		err := coord.Watch(wctx, client.WatchOptions{Durable: durable, DeliverAll: true}, rc.record)
		if err != nil {
			cancel(fmt.Errorf("watch signals: %w", err))
		}
	})
	defer watching.Wait()
	defer stopWatch()

	cfg.Logger.Info("load", "clients", cfg.Clients, "duration", cfg.Duration, "n", cfg.N)
	res, cps, err := drive(ctx, cfg, workers, dataDir, cancel)
	if err != nil {
		return loadResult{}, err
	}
	cfg.Logger.Info("waiting for signals", "checkpoints", len(cps))
	if err := rc.wait(ctx, len(cps), cfg.SignalWait); err != nil {
		return loadResult{}, err
	}
	stopWatch()
	watching.Wait()
	res.signals = rc.latencies(cps)

	cfg.Logger.Info("verifying the trail")
	t0 := time.Now()
	v, err := coord.VerifyTrail(ctx, "")
	if err != nil {
		return loadResult{}, fmt.Errorf("verify trail: %w", err)
	}
	took := time.Since(t0)
	res.verify = VerifyReport{OK: v.OK, Entries: v.Entries, Elapsed: took, Rate: rate(int(v.Entries), took)}
	return res, nil
}

// drive runs one goroutine per worker and returns their acks, in windows
// too, and checkpoints. The first error cancels the others.
func drive(ctx context.Context, cfg Config, clients []*client.Client, dataDir string, cancel context.CancelCauseFunc) (loadResult, []committed, error) {
	p := newPlan(cfg.Duration, cfg.N)
	content := string(payload(cfg.Size))
	ws := make([]worker, len(clients))
	var wg sync.WaitGroup
	smp := startSampler(dataDir)
	puts0, written0 := badgerWrites()
	seg0, raw0 := segmentWrites()
	allocs0, allocBytes0 := heapAllocs()
	others0, err := processesCPU(cfg.Processes)
	if err != nil {
		smp.stop()
		return loadResult{}, nil, err
	}
	start, cpu0 := time.Now(), processCPU()
	for i, c := range clients {
		wg.Go(func() {
			if err := ws[i].run(ctx, c, content, p); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	res := loadResult{elapsed: time.Since(start), cpu: processCPU() - cpu0}
	others1, othersErr := processesCPU(cfg.Processes)
	allocs1, allocBytes1 := heapAllocs()
	res.allocs, res.allocBytes = allocs1-allocs0, allocBytes1-allocBytes0
	puts1, written1 := badgerWrites()
	res.puts, res.written = puts1-puts0, written1-written0
	seg1, raw1 := segmentWrites()
	res.segment, res.raw = seg1-seg0, raw1-raw0
	samples := smp.stop()
	res.anon = peakAnon(samples)
	if ctx.Err() != nil {
		return res, nil, context.Cause(ctx)
	}
	if othersErr != nil {
		return res, nil, othersErr
	}
	var cps []committed
	var all []ack
	for _, w := range ws {
		for _, a := range w.acks {
			res.acks = append(res.acks, a.d)
		}
		all = append(all, w.acks...)
		cps = append(cps, w.cps...)
	}
	res.others = processesUsed(cfg.Processes, others0, others1, len(res.acks))
	if len(all) >= 2*cfg.Window {
		res.windows = windows(all, cfg.Window, samples, start)
	}
	return res, cps, nil
}

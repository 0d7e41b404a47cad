package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Machine is how busy the machine was around the run: the time one
// goroutine took for a fixed computation (calibrate) just before the run
// and just after it. The figures of a run are those of a quiet machine
// only when both are near the machine's quiet time (docs/performance.md
// gives this machine's); on the shared machine the bench was written on,
// another load sharing the cores made it 10-60 % longer, and the rates
// and ratios moved more than any change measured beside them.
//
// The computation does not see the disk: a run whose bound or load met a
// stall of the disk (a sync of hundreds of milliseconds; the shared
// machine had them) is not of a quiet machine either. DiskBefore and
// DiskAfter are a probe of the disk the run writes to (syncProbe), just
// before the run and just after it.
type Machine struct {
	// Waited is how long the run waited for a quiet machine
	// (Config.QuietBelow).
	Waited     time.Duration `json:"waited_ns,omitempty"`
	Before     time.Duration `json:"before_ns"`
	After      time.Duration `json:"after_ns"`
	DiskBefore SyncProbe     `json:"disk_before"`
	DiskAfter  SyncProbe     `json:"disk_after"`
}

// SyncProbe is how long a write of 4 KiB and its sync took, over
// syncProbes of them in a row: the median and the longest.
type SyncProbe struct {
	P50 time.Duration `json:"p50_ns"`
	Max time.Duration `json:"max_ns"`
}

// syncProbes is how many writes syncProbe syncs.
const syncProbes = 32

// syncProbe appends 4 KiB to a new file in dir and syncs it (as a
// segment block is written and synced), syncProbes times, and removes
// the file.
func syncProbe(dir string) (SyncProbe, error) {
	f, err := os.CreateTemp(dir, "sync-probe-")
	if err != nil {
		return SyncProbe{}, fmt.Errorf("disk probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	b := make([]byte, 4096)
	took := make([]time.Duration, 0, syncProbes)
	for range syncProbes {
		start := time.Now()
		if _, err := f.Write(b); err != nil {
			return SyncProbe{}, fmt.Errorf("disk probe: %w", err)
		}
		if err := f.Sync(); err != nil {
			return SyncProbe{}, fmt.Errorf("disk probe: sync %s: %w", filepath.Base(f.Name()), err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return SyncProbe{P50: took[len(took)/2], Max: took[len(took)-1]}, nil
}

// calibrate times the fixed computation: SHA-256 over 300 MiB, then a map
// of 3,000,000 entries filled (the hashing measures the core, the map the
// memory and the allocator).
func calibrate() time.Duration {
	b := make([]byte, 1<<20)
	start := time.Now()
	var sum [32]byte
	for range 300 {
		sum = sha256.Sum256(b)
		b[0] = sum[0] // each round depends on the last
	}
	m := make(map[int]int)
	for i := range 3_000_000 {
		m[i*7] = i
	}
	return time.Since(start)
}

// quietPause is the pause between two computations while waitQuiet waits.
var quietPause = 5 * time.Second

// waitQuiet waits until calibrate takes at most below twice in a row, for
// at most wait, and returns the last computation's time (the run's Before)
// and how long it waited; measure is calibrate outside tests. A run of a quiet machine is the acceptance's condition
// (docs/performance.md); another load on a shared host comes and goes.
func waitQuiet(ctx context.Context, below, wait time.Duration, measure func() time.Duration) (last, waited time.Duration, err error) {
	start := time.Now()
	streak := 0
	for {
		took := measure()
		if took <= below {
			if streak++; streak == 2 {
				return took, time.Since(start), nil
			}
			continue
		}
		streak = 0
		if time.Since(start) > wait {
			return took, time.Since(start), fmt.Errorf("the machine was not quiet within %s: the fixed computation took %s, more than %s", wait, took.Round(time.Millisecond), below)
		}
		select {
		case <-ctx.Done():
			return took, time.Since(start), ctx.Err()
		case <-time.After(quietPause):
		}
	}
}

package bench

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// BenchmarkVolumeSoak runs the volume bound (the daemon's writes per
// checkpoint in Badger, with group commit) and the same with the values in
// an append-only segment file and only pointers in Badger, each for
// WACP_BENCH_N requests (default 1,000,000) from 64 requesters, and
// reports each one's rate, its last window over its first (of ten) for
// the rate and the ack p99, its CPU per request and its peak RSS: whether
// a store that does not rewrite immutable data holds its rate where an LSM
// tree does not (docs/performance.md). It is a measurement, run by hand:
//
//	go test -run - -bench VolumeSoak -benchtime 1x ./bench
func BenchmarkVolumeSoak(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("WACP_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	msgs, err := newBoundMessages(1024)
	if err != nil {
		b.Fatal(err)
	}
	// The daemon's writes per checkpoint at 64 clients (docs/performance.md).
	shape := Shape{Puts: 15, Value: 358}
	for _, tc := range []struct {
		name  string
		store boundStore
	}{{"badger", storeGrouped}, {"segments", storeSegmented}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				run, err := runBound(context.Background(), b.TempDir(), ManyClients, msgs, 0, n,
					boundSpec{store: tc.store, shape: shape, window: n / 10})
				if err != nil {
					b.Fatal(err)
				}
				if run.Stored != n || run.Growth == nil {
					b.Fatalf("stored %d of %d, growth %v", run.Stored, n, run.Growth)
				}
				for _, w := range run.Windows {
					b.Logf("requests %d-%d: %.0f/s, ack p99 %s", w.From, w.To, w.Rate, w.Acks.P99)
				}
				b.ReportMetric(run.Rate, "requests/s")
				b.ReportMetric(run.Growth.Rate, "rate-last/first")
				b.ReportMetric(run.Growth.P99, "p99-last/first")
				b.ReportMetric(float64(run.CPU.Microseconds()), "cpu-µs/request")
				b.ReportMetric(float64(run.PeakRSS>>20), "peak-MiB")
			}
		})
	}
}

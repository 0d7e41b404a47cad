package bench

import (
	"context"
	"testing"
	"time"
)

// BenchmarkOneWrite runs the volume bound with the daemon's shape of the
// fifth session of issue 13 (its Badger keys and bytes, and its segment
// bytes synced before each group's transaction) at 1 and 64 requesters,
// for 5 s each, two ways: with Badger's synchronous write after the
// segment's, as the daemon writes now, and with the segment's sync alone
// (Badger without synchronous writes), as the one-write design would
// (docs/performance.md). It reports each one's rate, ack p50 and CPU per
// request. A measurement, run by hand:
//
//	go test -run - -bench OneWrite -benchtime 1x ./bench
func BenchmarkOneWrite(b *testing.B) {
	msgs, err := newBoundMessages(1024)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		clients int
		shape   Shape
	}{
		{"1", 1, Shape{Puts: 18, Value: 122, Segment: 1996}},
		{"64", ManyClients, Shape{Puts: 15, Value: 122, Segment: 600}},
	} {
		for _, one := range []bool{false, true} {
			name := tc.name + "-two-writes"
			if one {
				name = tc.name + "-one-write"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					run, err := runBound(context.Background(), b.TempDir(), tc.clients, msgs, 5*time.Second, 0,
						boundSpec{store: storeGrouped, shape: tc.shape, oneWrite: one})
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(run.Rate, "requests/s")
					b.ReportMetric(float64(run.Acks.P50.Microseconds()), "ack-p50-µs")
					b.ReportMetric(float64(run.CPU.Microseconds()), "cpu-µs/request")
				}
			})
		}
	}
}

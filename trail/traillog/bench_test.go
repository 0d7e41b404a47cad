package traillog

import (
	"context"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

// BenchmarkAppend appends one checkpoint_created entry per transaction to
// an in-memory database: the trail's share of a commit (canonical body,
// two hashes, Merkle nodes, keys) without the sync.
func BenchmarkAppend(b *testing.B) {
	tl := newMemLog(b)
	b.ReportAllocs()
	for b.Loop() {
		tl.append(tl.ev("ws1", "worker", trail.EventCheckpointCreated))
	}
}

// BenchmarkVerify verifies a trail of 10,000 entries in three workspaces
// and the system scope, and reports entries/s.
func BenchmarkVerify(b *testing.B) {
	const n = 10_000
	tl := newMemLog(b)
	tl.interleaved(n, "ws1", "ws2", "ws3")
	b.ReportAllocs()
	for b.Loop() {
		res, err := tl.log.Verify(context.Background(), "")
		if err != nil || !res.OK || res.Entries != n {
			b.Fatalf("Verify = %+v, %v; want ok over %d entries", res, err, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkHash hashes a typical checkpoint_created entry.
func BenchmarkHash(b *testing.B) {
	tl := newMemLog(b)
	e := tl.append(tl.ev("ws1", "worker", trail.EventCheckpointCreated))[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := trail.Hash(e); err != nil {
			b.Fatal(err)
		}
	}
}

package traillog

import (
	"fmt"
	"testing"
)

// BenchmarkOpen opens a trail of 10,000 workspaces of three entries each,
// whose heads Open derives (layout 4: each stored head is its workspace's
// first, so each is read from its last entry). 70-85 ms an Open here, 7-8.5
// µs a workspace, with one iterator for all of them (300-340 ms with one
// each).
func BenchmarkOpen(b *testing.B) {
	tl := newTestLog(b)
	const workspaces = 10_000
	for range 3 {
		for i := 0; i < workspaces; i += 100 {
			evs := make([]Event, 0, 100)
			for j := i; j < i+100; j++ {
				evs = append(evs, tl.wsEv(fmt.Sprintf("ws-%05d", j)))
			}
			tl.append(evs...)
		}
	}
	tl.reopen()
	for b.Loop() {
		l, err := Open(tl.db, tl.seg)
		if err != nil {
			b.Fatal(err)
		}
		if got := l.LocalLen("ws-00042"); got != 3 {
			b.Fatalf("LocalLen = %d, want 3", got)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/workspaces, "µs/workspace")
}

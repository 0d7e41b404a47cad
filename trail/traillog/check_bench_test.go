package traillog

import (
	"context"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

// BenchmarkCheck checks an on-disk trail of 100,000 entries in 50
// workspaces and the system scope, with a signed trail.Head over all of them: the
// integrity check at start. "full" reads every entry; "after-mark" reads
// the 1,000 entries written since a mark left at 99,000. It reports
// entries/s of the trail's size.
func BenchmarkCheck(b *testing.B) {
	const n, tail = 100_000, 1_000
	tl := newTestLog(b)
	var batch []Event
	for i := range n {
		if i%4 == 3 {
			batch = append(batch, tl.sysEv())
		} else {
			batch = append(batch, tl.ev("workspace-"+string(rune('A'+i%50)), "worker", trail.EventCheckpointCreated))
		}
		if len(batch) == 500 {
			tl.append(batch...)
			batch = nil
		}
		if i+1 == n-tail {
			tl.append(batch...)
			batch = nil
			res, err := Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, Full: true})
			if err != nil || !res.OK() {
				b.Fatalf("Check = %+v, %v", res, err)
			}
			if err := MarkChecked(tl.db, res); err != nil {
				b.Fatal(err)
			}
		}
	}
	tl.reopen() // read from disk, not the memtable only
	root, err := tl.log.Root(n)
	if err != nil {
		b.Fatal(err)
	}
	for _, full := range []bool{true, false} {
		name := "after-mark"
		if full {
			name = "full"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				res, err := Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, SignedSize: n, SignedRoot: root, Full: full})
				if err != nil || !res.OK() || res.Valid != n || (!full && res.Examined != tail) {
					b.Fatalf("Check = %+v, %v; want OK over %d entries", res, err, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

package runtime

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/workspace"
)

// benchContent is a typical 1 KiB checkpoint payload.
var benchContent = strings.Repeat("abcdefgh", 128)

// benchReq is a checkpoint request with a 1 KiB payload.
func benchReq(parent *string) []byte {
	return mustJSON(map[string]any{
		"type": "artifact", "intent": "benchmark", "parent": parent, "status": "provisional", "confidence": "high",
		"payload": map[string]any{"files_changed": []string{"a.go"}, "content": benchContent, "artifacts": []string{}},
	})
}

// BenchmarkCreateCheckpoint appends checkpoints to one chain, one durable
// commit each (Badger on disk with synchronous writes): the engine's commit
// path without NATS.
func BenchmarkCreateCheckpoint(b *testing.B) {
	e := openTest(b)
	w := newWorker(b, e)
	var parent *string
	for b.Loop() {
		cp, err := e.CreateCheckpoint(ctx, w.ID, benchReq(parent))
		if err != nil {
			b.Fatalf("CreateCheckpoint: %v", err)
		}
		parent = &cp.ID
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "checkpoints/s")
}

// BenchmarkCreateCheckpointParallel appends from 16 goroutines per CPU,
// each to its own workspace's chain: what group commit buys, since the
// operations that arrive together share one transaction and one sync.
func BenchmarkCreateCheckpointParallel(b *testing.B) {
	const perCPU = 16
	e := openTest(b)
	ws := make([]*workspace.Workspace, perCPU*goruntime.GOMAXPROCS(0))
	for i := range ws {
		ws[i] = newWorker(b, e)
	}
	var next atomic.Int64
	b.SetParallelism(perCPU)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := ws[next.Add(1)-1]
		var parent *string
		for pb.Next() {
			cp, err := e.CreateCheckpoint(ctx, w.ID, benchReq(parent))
			if err != nil {
				b.Errorf("CreateCheckpoint(%s): %v", w.ID, err)
				return
			}
			parent = &cp.ID
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "checkpoints/s")
}

// BenchmarkVerifyTrail verifies a trail of 20,000 checkpoints (60,000
// entries and more) written as one agent writes them (a batch, and a
// segment block, per checkpoint) or as 16 agents do (about 16 per batch),
// through the engine as audit.trail.verify does (a full check). It reports
// the trail's entries verified per second.
func BenchmarkVerifyTrail(b *testing.B) {
	const n = 20_000
	for _, agents := range []int{1, 16} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			e := openTest(b)
			var wg sync.WaitGroup
			for range agents {
				w := newWorker(b, e)
				wg.Go(func() {
					var parent *string
					for range n / agents {
						cp, err := e.CreateCheckpoint(ctx, w.ID, benchReq(parent))
						if err != nil {
							b.Errorf("CreateCheckpoint: %v", err)
							return
						}
						parent = &cp.ID
					}
				})
			}
			wg.Wait()
			entries := e.Trail().Len()
			for b.Loop() {
				res, err := e.VerifyTrail(ctx, "")
				if err != nil || !res.OK {
					b.Fatalf("VerifyTrail = %+v, %v", res, err)
				}
			}
			b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// BenchmarkCarpResolve resolves through the engine (one durable commit
// with the TRACE events each) against the seed's atlas without its
// checkpoints and with them (onboarding answered): what steward
// checkpoints cost a resolve end to end, next to the resolve itself.
func BenchmarkCarpResolve(b *testing.B) {
	for _, withCheckpoints := range []bool{false, true} {
		name := "plain"
		if withCheckpoints {
			name = "checkpoints"
		}
		b.Run(name, func(b *testing.B) {
			e := openTest(b)
			if withCheckpoints {
				loadAcmeWith(b, e, nil)
			} else {
				loadAcme(b, e)
			}
			w := activeWorkspace(b, e, "worker")
			if withCheckpoints {
				if _, err := e.CarpRespond(ctx, w.ID, respondReq(b, e, w.ID, "onboarding", map[string]string{"agree-terms": "true"})); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				i++
				req := carpReq(b, w, carp.OpResolve, func(r *carp.Request) { r.Task.Goal = fmt.Sprint("answer ticket T-", i) })
				if _, err := e.CarpResolve(ctx, w.ID, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

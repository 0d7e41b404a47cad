package runtime

import (
	"fmt"
	"testing"

	"github.com/wacpd/wacpd/wire"
)

// TestIntegrateEngine_SalvageIgnoresConfidence (Integration §9 "Salvage
// confidence override"): a salvaged checkpoint is treated as low
// confidence whatever it says of itself. wacpd makes no decision by
// confidence; what salvage mode imposes is the handling the spec gives
// low-confidence work: only the evaluated strategy (the coordinator
// judges the content), never direct or layered, and all four conflict
// types detected. A final checkpoint marked high is salvaged exactly as
// one marked low: the same refusals, the same conflicts.
func TestIntegrateEngine_SalvageIgnoresConfidence(t *testing.T) {
	conflicts := map[string]string{}
	for _, confidence := range []string{"high", "low"} {
		t.Run(confidence, func(t *testing.T) {
			e := openVerified(t)
			// First a normal integration into the root changes a.go.
			a := newWorker(t, e)
			checkpoint(t, e, a.ID, nil, "final")
			emitOK(t, e, a.ID, `{"type":"complete"}`)
			if res, err := e.Integrate(ctx, e.Root(), integrateBody(a.ID, DecisionAccept)); err != nil || res.Outcome != "closed" {
				t.Fatalf("Integrate(%s) = %+v, %v; want closed", a.ID, res, err)
			}
			// Then a failed workspace's final checkpoint, changing a.go too.
			b := newWorker(t, e)
			if _, err := e.CreateCheckpoint(ctx, b.ID, cpBody(nil, func(m map[string]any) {
				m["status"], m["confidence"] = "final", confidence
			})); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Abort(ctx, e.Root(), b.ID, ""); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{StrategyDirect, StrategyLayered} {
				_, err := e.Integrate(ctx, e.Root(), integrateBody(b.ID, DecisionAccept, "mode", ModeSalvage, "strategy", s))
				wantCode(t, fmt.Sprintf("Integrate(salvage %s, confidence %s)", s, confidence), err, wire.CodeInvalidStructure)
			}
			res, err := e.Integrate(ctx, e.Root(), integrateBody(b.ID, DecisionAccept, "mode", ModeSalvage, "strategy", StrategyEvaluated))
			if err != nil || res.Outcome != "salvaged" || res.Record == nil {
				t.Fatalf("Integrate(salvage evaluated, confidence %s) = %+v, %v; want salvaged with a record", confidence, res, err)
			}
			if len(res.Record.Conflicts) == 0 {
				t.Fatalf("salvage of a checkpoint marked %s: no conflicts, want a.go's overlap detected", confidence)
			}
			var types []string
			for _, c := range res.Record.Conflicts {
				types = append(types, c.ConflictType+" "+fmt.Sprint(c.Resources))
			}
			conflicts[confidence] = fmt.Sprint(types)
		})
	}
	if conflicts["high"] != conflicts["low"] {
		t.Errorf("salvage conflicts: marked high %s, marked low %s; want the same", conflicts["high"], conflicts["low"])
	}
}

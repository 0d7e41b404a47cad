package runtime

// Integration strategies, the integration register and conflicts through
// the Engine (WACP Integration §3–§6, docs/design.md "Integration"),
// against real Badger.

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/integration"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// work is a checkpoint payload and the worker's creation extras.
type work struct {
	files     []string
	content   string
	artifacts []string
	create    map[string]any
}

// finished returns a worker under the root, integrating, whose final
// checkpoint carries w's payload.
func finished(t testing.TB, e *Engine, w work) (*workspace.Workspace, checkpointchain.Checkpoint) {
	t.Helper()
	req := map[string]any{"role": "worker"}
	for k, v := range w.create {
		req[k] = v
	}
	ws, err := e.CreateWorkspace(ctx, e.Root(), mustJSON(req))
	if err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	directive(t, e, e.Root(), ws.ID)
	if w.files == nil {
		w.files = []string{}
	}
	if w.artifacts == nil {
		w.artifacts = []string{}
	}
	cp, err := e.CreateCheckpoint(ctx, ws.ID, mustJSON(map[string]any{
		"type": "artifact", "intent": "because", "parent": nil, "status": "final", "confidence": "high",
		"payload": map[string]any{"files_changed": w.files, "content": w.content, "artifacts": w.artifacts},
	}))
	if err != nil {
		t.Fatalf("CreateCheckpoint: %v", err)
	}
	emitOK(t, e, ws.ID, `{"type":"complete"}`)
	return ws, cp
}

func accept(t testing.TB, e *Engine, ws, strategy string) wire.IntegrateResult {
	t.Helper()
	res, err := e.Integrate(ctx, e.Root(), integrateBody(ws, DecisionAccept, "strategy", strategy))
	if err != nil {
		t.Fatalf("Integrate(%s, %s): %v", ws, strategy, err)
	}
	return res
}

func register(t testing.TB, e *Engine, target string) []integration.Record {
	t.Helper()
	recs, err := e.IntegrationRecords(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if err := integration.Verify(recs); err != nil {
		t.Fatalf("the register of %s: %v", target, err)
	}
	return recs
}

// TestIntegration_MergeRecord: an accepted integration appends a record to
// its target's register with its provenance (source, checkpoint and
// digest, strategy, mode, files, content keys); a salvage too, with mode
// salvage; revise and reject merge nothing.
func TestIntegration_MergeRecord(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	w, cp := finished(t, e, work{files: []string{"b.go", "a.go", "a.go"}, content: `{"plan":"x"}`})
	res := accept(t, e, w.ID, StrategyEvaluated)
	if res.Outcome != "closed" || res.Record == nil {
		t.Fatalf("Integrate = %+v, want closed with a record", res)
	}
	r, _ := finished(t, e, work{files: []string{"c.go"}})
	if _, err := e.Integrate(ctx, root, integrateBody(r.ID, DecisionReject)); err != nil {
		t.Fatal(err)
	}
	s := newWorker(t, e)
	sp := checkpoint(t, e, s.ID, nil, "provisional")
	emitOK(t, e, s.ID, `{"type":"failed","reason":"r"}`)
	sres, err := e.Integrate(ctx, root, integrateBody(s.ID, DecisionAccept, "mode", ModeSalvage, "strategy", StrategyEvaluated))
	if err != nil || sres.Outcome != "salvaged" {
		t.Fatalf("salvage = %+v, %v", sres, err)
	}
	recs := register(t, e, root)
	if len(recs) != 2 {
		t.Fatalf("register = %d records, want 2 (the accept and the salvage)", len(recs))
	}
	got := recs[0]
	if got.Target != root || got.Seq != 1 || got.Prev != nil || got.Source != w.ID || got.Owner != w.Owner ||
		got.CheckpointRef != cp.ID || got.CheckpointDigest != cp.Digest.String() ||
		got.Strategy != StrategyEvaluated || got.Mode != ModeNormal || got.Result != integration.ResultSuccess ||
		!slices.Equal(got.Files, []string{"a.go", "b.go"}) || len(got.Keys) != 1 || got.Keys["plan"] == "" {
		t.Errorf("record 1 = %+v", got)
	}
	if res.Record.Digest != got.Digest {
		t.Errorf("the reply's record %s, the register's %s", res.Record.Digest, got.Digest)
	}
	if sv := recs[1]; sv.Source != s.ID || sv.CheckpointRef != sp.ID || sv.Mode != ModeSalvage || sv.Prev == nil || *sv.Prev != got.Digest {
		t.Errorf("record 2 = %+v, want the salvage of %s linked to record 1", sv, sp.ID)
	}
	// The register survives a reopen (it is in Badger, written in the
	// commit of integration_completed).
	if other, _ := e.IntegrationRecords(ctx, w.ID); len(other) != 0 {
		t.Errorf("the source's own register = %+v, want none", other)
	}
}

// TestIntegration_SequentialConcurrent: integrations into one target run
// one at a time, each merged onto all earlier ones. Eight direct
// integrations started at once give a register of eight records in one
// chain (seq 1..8, each prev the digest of the one before, no two on one
// base), and the file all eight changed comes from the last. Eight layered
// ones at once: the first closes, the second sees it (content_overlap,
// conflicted) and the others are refused while that integration is open;
// once it is resolved they go one at a time, each conflicting with the
// integrations before it.
func TestIntegration_SequentialConcurrent(t *testing.T) {
	const n = 8
	start := func(e *Engine, strategy string) ([]*workspace.Workspace, []error, []wire.IntegrateResult) {
		ws := make([]*workspace.Workspace, n)
		for i := range ws {
			ws[i], _ = finished(t, e, work{files: []string{"shared.go", fmt.Sprintf("own%d.go", i)}})
		}
		errs, outs := make([]error, n), make([]wire.IntegrateResult, n)
		var wg sync.WaitGroup
		for i := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], errs[i] = e.Integrate(ctx, e.Root(), integrateBody(ws[i].ID, DecisionAccept, "strategy", strategy))
			}()
		}
		wg.Wait()
		return ws, errs, outs
	}
	t.Run("direct", func(t *testing.T) {
		e := openVerified(t)
		ws, errs, _ := start(e, StrategyDirect)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Integrate(%s): %v", ws[i].ID, err)
			}
		}
		recs := register(t, e, e.Root())
		if len(recs) != n {
			t.Fatalf("register = %d records, want %d", len(recs), n)
		}
		sources := map[string]bool{}
		for _, r := range recs {
			sources[r.Source] = true
			if len(r.Conflicts) != 0 {
				t.Errorf("direct record %d has conflicts %+v", r.Seq, r.Conflicts)
			}
		}
		if len(sources) != n {
			t.Errorf("register sources = %d distinct, want %d", len(sources), n)
		}
		st := integration.Fold(recs)
		if p := st.Files["shared.go"]; p.Seq != n || p.Source != recs[n-1].Source {
			t.Errorf("shared.go from %+v, want the last integration (%s)", p, recs[n-1].Source)
		}
	})
	t.Run("layered", func(t *testing.T) {
		e := openVerified(t)
		ws, errs, outs := start(e, StrategyLayered)
		var closed, conflicted string
		var refused []string
		for i, err := range errs {
			switch {
			case err != nil && Code(err) == wire.CodeInvalidTransition:
				refused = append(refused, ws[i].ID)
			case err != nil:
				t.Fatalf("Integrate(%s): %v", ws[i].ID, err)
			case outs[i].Outcome == "closed" && closed == "":
				closed = ws[i].ID
			case outs[i].Outcome == "conflicted" && conflicted == "":
				conflicted = ws[i].ID
			default:
				t.Fatalf("a second %s: %s", outs[i].Outcome, ws[i].ID)
			}
		}
		if closed == "" || conflicted == "" || len(refused) != n-2 {
			t.Fatalf("closed %q, conflicted %q, refused %d; want one, one and %d", closed, conflicted, len(refused), n-2)
		}
		got, _ := e.GetWorkspace(ctx, e.Root(), conflicted)
		if len(got.Conflicts) != 1 || got.Conflicts[0].ConflictType != workspace.ConflictContentOverlap ||
			!slices.Equal(got.Conflicts[0].Resources, []string{"shared.go"}) {
			t.Fatalf("conflicts = %+v, want content_overlap on shared.go", got.Conflicts)
		}
		for _, id := range refused {
			if s := wsState(t, e, id); s != workspace.Integrating {
				t.Errorf("refused %s is %s, want still integrating", id, s)
			}
			if len(trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": id})) != 0 {
				t.Errorf("a refused integration of %s wrote integration_started", id)
			}
		}
		if err := resolveConflict(e, conflicted, ResolveCoordinator); err != nil {
			t.Fatal(err)
		}
		for i, id := range refused {
			res := accept(t, e, id, StrategyLayered)
			if res.Outcome != "conflicted" || len(res.Workspace.Conflicts) != 1 {
				t.Fatalf("integration %d of the refused = %+v, want conflicted", i, res)
			}
			// It conflicts with the integration just before it: it sees it.
			recs := register(t, e, e.Root())
			last := recs[len(recs)-1]
			if want := fmt.Sprintf("integration %d of workspace %s", last.Seq, last.Source); !strings.Contains(res.Workspace.Conflicts[0].Description, want) {
				t.Errorf("conflict %q does not name %q", res.Workspace.Conflicts[0].Description, want)
			}
			if err := resolveConflict(e, id, ResolveCoordinator); err != nil {
				t.Fatal(err)
			}
		}
		if recs := register(t, e, e.Root()); len(recs) != n {
			t.Errorf("register = %d records, want %d", len(recs), n)
		}
	})
}

// TestIntegration_DetectionByStrategy: each conflict type's scenario
// integrated with each strategy. direct detects nothing (closed, the
// incoming wins), layered only content_overlap, evaluated all four.
func TestIntegration_DetectionByStrategy(t *testing.T) {
	type scenario struct {
		name      string
		typ       string
		resources []string
		// prior integrates what comes before (direct) and returns the
		// incoming work.
		prior func(t *testing.T, e *Engine) work
	}
	scenarios := []scenario{
		{"overlap", workspace.ConflictContentOverlap, []string{"shared.go"}, func(t *testing.T, e *Engine) work {
			p, _ := finished(t, e, work{files: []string{"shared.go", "p.go"}})
			accept(t, e, p.ID, StrategyDirect)
			return work{files: []string{"shared.go", "own.go"}}
		}},
		{"semantic", workspace.ConflictSemanticContradiction, []string{"content:approach"}, func(t *testing.T, e *Engine) work {
			p, _ := finished(t, e, work{files: []string{"a.md"}, content: `{"approach":"X","lang":"go"}`})
			accept(t, e, p.ID, StrategyDirect)
			return work{files: []string{"b.md"}, content: `{"approach":"Y","lang":"go"}`}
		}},
		{"dependency", workspace.ConflictDependencyViolation, []string{"api.go"}, func(t *testing.T, e *Engine) work {
			a, acp := finished(t, e, work{files: []string{"api.go"}})
			accept(t, e, a.ID, StrategyDirect)
			c, _ := finished(t, e, work{files: []string{"api.go"}}) // changes the API after A
			accept(t, e, c.ID, StrategyDirect)
			return work{files: []string{"client.go"}, artifacts: []string{acp.ID, "https://example.com/spec"}}
		}},
		{"constraint", workspace.ConflictConstraintBreach, []string{"src/x.go"}, func(t *testing.T, e *Engine) work {
			return work{files: []string{"docs/a.md", "src/x.go"}, create: map[string]any{"authority": []string{"docs/"}}}
		}},
	}
	for _, sc := range scenarios {
		for _, strategy := range []string{StrategyDirect, StrategyLayered, StrategyEvaluated} {
			t.Run(sc.name+"/"+strategy, func(t *testing.T) {
				e := openVerified(t)
				w, _ := finished(t, e, sc.prior(t, e))
				res := accept(t, e, w.ID, strategy)
				if !integration.Detects(strategy, sc.typ) {
					if res.Outcome != "closed" || len(res.Workspace.Conflicts) != 0 {
						t.Fatalf("%s on %s = %s %+v, want closed without conflicts", strategy, sc.name, res.Outcome, res.Workspace.Conflicts)
					}
					if n := len(trailWhere(t, e, trail.EventConflictDetected, map[string]string{"workspace_id": w.ID})); n != 0 {
						t.Errorf("conflict_detected = %d, want 0", n)
					}
					return
				}
				if res.Outcome != "conflicted" || len(res.Workspace.Conflicts) != 1 {
					t.Fatalf("%s on %s = %s %+v, want conflicted with one conflict", strategy, sc.name, res.Outcome, res.Workspace.Conflicts)
				}
				cf := res.Workspace.Conflicts[0]
				if cf.ConflictType != sc.typ || !slices.Equal(cf.Resources, sc.resources) || cf.Description == "" {
					t.Errorf("conflict = %+v, want %s on %v", cf, sc.typ, sc.resources)
				}
				det := trailWhere(t, e, trail.EventConflictDetected, map[string]string{"workspace_id": w.ID})
				if len(det) != 1 {
					t.Fatalf("conflict_detected = %d, want 1", len(det))
				}
				wantBody(t, "conflict_detected", entryBody(t, det[0]), map[string]any{"conflict_type": sc.typ})
				before := len(register(t, e, e.Root()))
				if err := resolveConflict(e, w.ID, ResolveCoordinator); err != nil {
					t.Fatal(err)
				}
				recs := register(t, e, e.Root())
				last := recs[len(recs)-1]
				if len(recs) != before+1 || last.Source != w.ID || last.Result != integration.ResultConflictResolved ||
					len(last.Conflicts) != 1 || last.Conflicts[0].ResolutionStrategy != ResolveCoordinator {
					t.Errorf("after coordinator_resolve the register's last record = %+v", last)
				}
			})
		}
	}
}

// TestIntegration_TaskDependencyViolation: integrating a task's work
// before the work of a task it depends on is a dependency_violation
// (evaluated); after the dependency is integrated it is not.
func TestIntegration_TaskDependencyViolation(t *testing.T) {
	cfg := highway.Default()
	cfg.Gates[highway.TaskApproval] = false
	e := openVerified(t, withHighway(cfg))
	out := createTasks(t, e, `{"tasks":[{"key":"a","name":"api"},{"name":"client","depends_on":["a"]},{"name":"docs","depends_on":["a"]}]}`)
	a, b, c := out.Tasks[0], out.Tasks[1], out.Tasks[2]
	bindDo := func(k task.Task, files ...string) *workspace.Workspace {
		w := idleWorker(t, e, e.Root())
		if _, err := e.BindTask(ctx, e.Root(), wire.TaskBindRequest{ID: k.ID, Workspace: w.ID}); err != nil {
			t.Fatal(err)
		}
		directive(t, e, e.Root(), w.ID)
		if _, err := e.CreateCheckpoint(ctx, w.ID, mustJSON(map[string]any{
			"type": "artifact", "intent": "because", "parent": nil, "status": "final", "confidence": "high",
			"payload": map[string]any{"files_changed": files, "content": "", "artifacts": []string{}},
		})); err != nil {
			t.Fatal(err)
		}
		emitOK(t, e, w.ID, `{"type":"complete"}`)
		return w
	}
	wa := bindDo(a, "api.go")
	wb := bindDo(b, "client.go")
	res := accept(t, e, wb.ID, StrategyEvaluated)
	if res.Outcome != "conflicted" || len(res.Workspace.Conflicts) != 1 ||
		res.Workspace.Conflicts[0].ConflictType != workspace.ConflictDependencyViolation ||
		!slices.Equal(res.Workspace.Conflicts[0].Resources, []string{"task:" + a.ID}) {
		t.Fatalf("client before api = %s %+v, want dependency_violation on task:%s", res.Outcome, res.Workspace.Conflicts, a.ID)
	}
	if err := resolveConflict(e, wb.ID, ResolveAgentRework); err != nil {
		t.Fatal(err)
	}
	if res := accept(t, e, wa.ID, StrategyEvaluated); res.Outcome != "closed" {
		t.Fatalf("api = %+v, want closed", res)
	}
	if got := getTask(t, e, a.ID).Status; got != task.Integrated {
		t.Fatalf("task a = %s, want integrated", got)
	}
	// Another task that depends on a, done now, integrates cleanly: its
	// dependency is integrated.
	wc := bindDo(getTask(t, e, c.ID), "docs.md")
	if res := accept(t, e, wc.ID, StrategyEvaluated); res.Outcome != "closed" {
		t.Fatalf("docs after api = %s %+v, want closed", res.Outcome, res.Workspace.Conflicts)
	}
}

// TestIntegration_ConflictResolution: two conflicts of one integration,
// each conflict_detected paired with one conflict_resolved, for every way
// a conflict ends: coordinator_resolve (closed, merged), agent_rework
// (failed, nothing merged), escalate approved (closed) and rejected
// (failed), escalate timing out (the gate's fallback: approve closes), and
// the workspace's timeout (failed, conflict_timeout, resolution_strategy
// timeout).
func TestIntegration_ConflictResolution(t *testing.T) {
	type end struct {
		name     string
		strategy string // recorded resolution_strategy
		outcome  workspace.State
		reason   string
		run      func(t *testing.T, e *Engine, clk *fakeClock, ws string)
	}
	ends := []end{
		{"coordinator_resolve", ResolveCoordinator, workspace.Closed, "", func(t *testing.T, e *Engine, _ *fakeClock, ws string) {
			if err := resolveConflict(e, ws, ResolveCoordinator); err != nil {
				t.Fatal(err)
			}
		}},
		{"agent_rework", ResolveAgentRework, workspace.Failed, "revision_required", func(t *testing.T, e *Engine, _ *fakeClock, ws string) {
			if err := resolveConflict(e, ws, ResolveAgentRework); err != nil {
				t.Fatal(err)
			}
		}},
		{"escalate approved", ResolveEscalate, workspace.Closed, "", func(t *testing.T, e *Engine, _ *fakeClock, ws string) {
			id := heldAt(t, "escalate", resolveConflict(e, ws, ResolveEscalate), highway.ConflictResolution)
			if _, err := resolve(t, e, "op", id, "approve"); err != nil {
				t.Fatal(err)
			}
		}},
		{"escalate rejected", ResolveEscalate, workspace.Failed, ReasonGateRejected, func(t *testing.T, e *Engine, _ *fakeClock, ws string) {
			id := heldAt(t, "escalate", resolveConflict(e, ws, ResolveEscalate), highway.ConflictResolution)
			if _, err := resolve(t, e, "op", id, "reject"); err != nil {
				t.Fatal(err)
			}
		}},
		{"escalate timed out", ResolveEscalate, workspace.Closed, "", func(t *testing.T, e *Engine, clk *fakeClock, ws string) {
			heldAt(t, "escalate", resolveConflict(e, ws, ResolveEscalate), highway.ConflictResolution)
			clk.Advance(2 * time.Minute)
			if n, err := e.ExpireGates(ctx, clk.Now()); err != nil || n != 1 {
				t.Fatalf("ExpireGates = %d, %v; want 1", n, err)
			}
		}},
		{"workspace timeout", "timeout", workspace.Failed, "conflict_timeout", func(t *testing.T, e *Engine, clk *fakeClock, ws string) {
			clk.Advance(2 * time.Hour)
			if n, err := e.ExpireTimeouts(ctx, clk.Now()); err != nil || n != 1 {
				t.Fatalf("ExpireTimeouts = %d, %v; want 1", n, err)
			}
		}},
	}
	for _, tt := range ends {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			cfg := highway.Default()
			minute := time.Minute
			cfg.Overrides = map[highway.GateType]highway.Policy{highway.ConflictResolution: {Timeout: &minute, Fallback: highway.FallbackApprove}}
			e := openVerified(t, withFakeClock(clk), withHighway(cfg))
			mkUser(t, e, "op", user.ApproveIntegrationAny)
			p, _ := finished(t, e, work{files: []string{"shared.go"}, content: `{"approach":"X"}`})
			accept(t, e, p.ID, StrategyDirect)
			w, _ := finished(t, e, work{files: []string{"shared.go"}, content: `{"approach":"Y"}`, create: map[string]any{"timeout": "1h"}})
			if res := accept(t, e, w.ID, StrategyEvaluated); res.Outcome != "conflicted" || len(res.Workspace.Conflicts) != 2 {
				t.Fatalf("Integrate = %s %+v, want conflicted with two conflicts", res.Outcome, res.Workspace.Conflicts)
			}
			before := len(register(t, e, e.Root()))
			tt.run(t, e, clk, w.ID)
			got, _ := e.GetWorkspace(ctx, e.Root(), w.ID)
			if got.State != tt.outcome || got.Reason != tt.reason {
				t.Fatalf("after %s: %s %q, want %s %q", tt.name, got.State, got.Reason, tt.outcome, tt.reason)
			}
			det := trailWhere(t, e, trail.EventConflictDetected, map[string]string{"workspace_id": w.ID})
			res := trailWhere(t, e, trail.EventConflictResolved, map[string]string{"workspace_id": w.ID})
			if len(det) != 2 || len(res) != 2 {
				t.Fatalf("conflict_detected %d, conflict_resolved %d; want 2 and 2", len(det), len(res))
			}
			for i := range det {
				d, r := entryBody(t, det[i]), entryBody(t, res[i])
				if d["conflict_type"] != r["conflict_type"] || r["resolution_strategy"] != tt.strategy || r["outcome"] != string(tt.outcome) {
					t.Errorf("pair %d: detected %v, resolved %v; want the same type, %s, %s", i, d, r, tt.strategy, tt.outcome)
				}
				if det[i].ID > res[0].ID {
					t.Errorf("a conflict_resolved before the last conflict_detected")
				}
			}
			merged := len(register(t, e, e.Root())) - before
			if want := map[workspace.State]int{workspace.Closed: 1, workspace.Failed: 0}[tt.outcome]; merged != want {
				t.Errorf("records merged = %d, want %d", merged, want)
			}
			ended := trail.EventIntegrationCompleted
			if tt.outcome == workspace.Failed {
				ended = trail.EventIntegrationAborted
			}
			if n := len(trailWhere(t, e, ended, map[string]string{"source": w.ID})); n != 1 {
				t.Errorf("%s = %d, want 1", ended, n)
			}
		})
	}
}

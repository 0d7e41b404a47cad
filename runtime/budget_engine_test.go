package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Tests of the resource meter (budget.go, WACP Workspace §6) and
// admission control (admission.go, §10).

// fileMeter is a BudgetMeter over real files: workspace ws's context is
// the bytes of <dir>/<ws>.context, its tokens the words in it (what a
// deployment keeping each agent's transcript could plug in).
type fileMeter struct{ dir string }

var _ BudgetMeter = fileMeter{}

func (m fileMeter) Measure(ws string, d workspace.Dimension) (float64, bool) {
	b, err := os.ReadFile(filepath.Join(m.dir, ws+".context"))
	if err != nil {
		return 0, false
	}
	switch d {
	case workspace.DimContext:
		return float64(len(b)), true
	case workspace.DimTokens:
		return float64(len(strings.Fields(string(b)))), true
	}
	return 0, false
}

func (m fileMeter) write(t testing.TB, ws string, n int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(m.dir, ws+".context"), []byte(strings.Repeat("word ", n/5)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// usageCheckpoint creates a provisional checkpoint on the chain's head
// reporting tokens and cost (zero: not reported).
func usageCheckpoint(t testing.TB, e *Engine, ws string, tokens int64, cost float64) {
	t.Helper()
	var parent *string
	if h := e.chainOf(ws).Head; h != "" {
		parent = &h
	}
	_, err := e.CreateCheckpoint(ctx, ws, cpBody(parent, func(m map[string]any) {
		u := map[string]any{}
		if tokens != 0 {
			u["tokens_consumed"] = tokens
		}
		if cost != 0 {
			u["cost"] = cost
		}
		m["resource_usage"] = u
	}))
	if err != nil {
		t.Fatalf("CreateCheckpoint: %v", err)
	}
}

// budgetEvents returns the budget_warning and budget_exceeded entries of
// ws's trail, in order, as "warning dim" / "exceeded dim".
func budgetEvents(t testing.TB, e *Engine, ws string) []string {
	t.Helper()
	var out []string
	for _, en := range globalTrail(t, e) {
		if en.EventType != trail.EventBudgetWarning && en.EventType != trail.EventBudgetExceeded {
			continue
		}
		b := entryBody(t, en)
		if b["workspace_id"] != ws {
			continue
		}
		out = append(out, strings.TrimPrefix(string(en.EventType), "budget_")+" "+b["budget_dimension"].(string))
	}
	return out
}

// TestBudget_WarningBeforeExceeded drives every budget dimension to its
// limit through the engine: a budget_warning at 80% first, once, then at
// the limit the operation that reached it stands and the workspace fails
// with budget_exceeded, the failed signal and the dimension as the
// transition's detail; all of it survives a reopen.
func TestBudget_WarningBeforeExceeded(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name   string
		dim    workspace.Dimension
		budget map[string]any
		meter  bool // a fileMeter is configured
		warn   func(t *testing.T, e *Engine, m fileMeter, ws string)
		exceed func(t *testing.T, e *Engine, m fileMeter, ws string)
	}{
		{"tokens reported", workspace.DimTokens, map[string]any{"compute_budget": map[string]any{"token_limit": 100}}, false,
			func(t *testing.T, e *Engine, _ fileMeter, ws string) { usageCheckpoint(t, e, ws, 85, 0) },
			func(t *testing.T, e *Engine, _ fileMeter, ws string) { usageCheckpoint(t, e, ws, 15, 0) }},
		{"cost reported", workspace.DimCost, map[string]any{"cost_limit": 1.0}, false,
			func(t *testing.T, e *Engine, _ fileMeter, ws string) { usageCheckpoint(t, e, ws, 0, 0.9) },
			func(t *testing.T, e *Engine, _ fileMeter, ws string) { usageCheckpoint(t, e, ws, 0, 0.2) }},
		{"checkpoints", workspace.DimCheckpoints, map[string]any{"storage_budget": map[string]any{"checkpoint_limit": 5}}, false,
			func(t *testing.T, e *Engine, _ fileMeter, ws string) {
				for range 4 {
					usageCheckpoint(t, e, ws, 0, 0)
				}
			},
			func(t *testing.T, e *Engine, _ fileMeter, ws string) { usageCheckpoint(t, e, ws, 0, 0) }},
		{"bandwidth", workspace.DimBandwidth, map[string]any{"network_budget": map[string]any{"bandwidth_limit": 1000}}, false,
			func(t *testing.T, e *Engine, _ fileMeter, ws string) {
				signal(t, e, ws, `{"type":"blocked","reason":"`+long(820)+`"}`)
				signal(t, e, ws, `{"type":"started"}`)
			},
			func(t *testing.T, e *Engine, _ fileMeter, ws string) {
				signal(t, e, ws, `{"type":"blocked","reason":"`+long(200)+`"}`)
			}},
		{"context metered", workspace.DimContext, map[string]any{"memory_budget": map[string]any{"context_limit": 1000}}, true,
			func(t *testing.T, e *Engine, m fileMeter, ws string) {
				m.write(t, ws, 850)
				usageCheckpoint(t, e, ws, 0, 0)
			},
			func(t *testing.T, e *Engine, m fileMeter, ws string) {
				m.write(t, ws, 1200)
				usageCheckpoint(t, e, ws, 0, 0)
			}},
		{"tokens metered", workspace.DimTokens, map[string]any{"compute_budget": map[string]any{"token_limit": 100}}, true,
			func(t *testing.T, e *Engine, m fileMeter, ws string) {
				m.write(t, ws, 5*85)
				usageCheckpoint(t, e, ws, 1, 0) // the meter, not the report, counts
			},
			func(t *testing.T, e *Engine, m fileMeter, ws string) {
				m.write(t, ws, 5*100)
				usageCheckpoint(t, e, ws, 1, 0)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fileMeter{t.TempDir()}
			var mods []func(*Config)
			if tt.meter {
				mods = append(mods, func(c *Config) { c.BudgetMeter = m })
			}
			e := openTest(t, mods...)
			w := newWorker(t, e, map[string]any{"budget": tt.budget})
			tt.warn(t, e, m, w.ID)
			if got, want := budgetEvents(t, e, w.ID), []string{"warning " + string(tt.dim)}; !slices.Equal(got, want) {
				t.Fatalf("after the warning step: budget events = %q, want %q", got, want)
			}
			if got := wsState(t, e, w.ID); got == workspace.Failed {
				t.Fatalf("failed below the limit")
			}
			tt.exceed(t, e, m, w.ID)
			e = reopen(t, e)
			want := []string{"warning " + string(tt.dim), "exceeded " + string(tt.dim)}
			if got := budgetEvents(t, e, w.ID); !slices.Equal(got, want) {
				t.Fatalf("budget events = %q, want %q", got, want)
			}
			got := must[*workspace.Workspace](t)(e.GetWorkspace(ctx, e.Root(), w.ID))
			if got.State != workspace.Failed || got.Reason != ReasonBudgetExceeded {
				t.Fatalf("state = %s (%q), want failed (budget_exceeded)", got.State, got.Reason)
			}
			tr := trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": w.ID, "to_state": "failed"})
			if len(tr) != 1 || entryBody(t, tr[0])["detail"] != string(tt.dim) || entryBody(t, tr[0])["trigger"] != "budget_exceeded" {
				t.Fatalf("transition to failed = %v, want one with trigger budget_exceeded and detail %s", tr, tt.dim)
			}
			if n := len(trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"from": w.ID, "type": "failed", "reason": "budget_exceeded"})); n != 1 {
				t.Errorf("%d failed signals with reason budget_exceeded, want 1", n)
			}
			verify(t, e)
		})
	}
}

// TestBudget_TrailLimit: the workspace's local trail entries are metered;
// the warning comes before the limit and the workspace fails at it.
func TestBudget_TrailLimit(t *testing.T) {
	e := openTest(t)
	w := newWorker(t, e, map[string]any{"budget": map[string]any{"storage_budget": map[string]any{"trail_limit": 30}}})
	for i := 0; i < 40 && wsState(t, e, w.ID) != workspace.Failed; i++ {
		signal(t, e, w.ID, `{"type":"blocked","reason":"waiting"}`)
		if wsState(t, e, w.ID) != workspace.Failed {
			signal(t, e, w.ID, `{"type":"started"}`)
		}
	}
	want := []string{"warning " + string(workspace.DimTrail), "exceeded " + string(workspace.DimTrail)}
	if got := budgetEvents(t, e, w.ID); !slices.Equal(got, want) {
		t.Fatalf("budget events = %q, want %q", got, want)
	}
	ex := trailWhere(t, e, trail.EventBudgetExceeded, map[string]string{"workspace_id": w.ID})
	if c := entryBody(t, ex[0])["consumed"].(float64); c < 30 || c > 33 {
		t.Errorf("consumed at the limit = %v, want 30 to 33 entries", c)
	}
	warn := trailWhere(t, e, trail.EventBudgetWarning, map[string]string{"workspace_id": w.ID})
	if c := entryBody(t, warn[0])["consumed"].(float64); c < 24 || c >= 30 {
		t.Errorf("consumed at the warning = %v, want 24 to 29 entries", c)
	}
}

// TestBudget_ComputeTimeout (Recovery §3.4 compute timeout
// reconstruction): compute_timeout counts active time only, not
// suspended or blocked time nor the daemon's outage, across a crash; the
// timer fails the workspace at the limit.
func TestBudget_ComputeTimeout(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := openEngineAt(t, dir, withFakeClock(clk))
	w := newWorker(t, e, map[string]any{"budget": map[string]any{"compute_budget": map[string]any{"token_limit": 0, "compute_timeout": "10m"}}})
	expire := func(want int) {
		t.Helper()
		n, err := e.ExpireComputeBudgets(ctx)
		if err != nil || n != want {
			t.Fatalf("ExpireComputeBudgets = %d, %v; want %d", n, err, want)
		}
	}
	clk.Advance(3 * time.Minute)
	must[*workspace.Workspace](t)(e.Suspend(ctx, e.Root(), w.ID, "maintenance"))
	clk.Advance(time.Hour) // suspended: does not count
	must[*workspace.Workspace](t)(e.Resume(ctx, e.Root(), w.ID))
	signal(t, e, w.ID, `{"type":"blocked","reason":"waiting"}`)
	clk.Advance(time.Hour) // blocked: does not count
	signal(t, e, w.ID, `{"type":"started"}`)
	clk.Advance(2 * time.Minute)
	usageCheckpoint(t, e, w.ID, 0, 0) // a checkpoint restarts the discrepancy meter, not this one
	clk.Advance(2 * time.Minute)
	expire(0) // 7m
	if got := budgetEvents(t, e, w.ID); len(got) != 0 {
		t.Fatalf("budget events at 7m of 10m = %q, want none", got)
	}
	crash(t, e)
	clk.Advance(time.Hour) // the outage: does not count
	e = openEngineAt(t, dir, withFakeClock(clk))
	clk.Advance(time.Minute + 30*time.Second)
	expire(0) // 8.5m: the warning
	if got, want := budgetEvents(t, e, w.ID), []string{"warning " + string(workspace.DimCompute)}; !slices.Equal(got, want) {
		t.Fatalf("budget events at 8.5m = %q, want %q", got, want)
	}
	crash(t, e) // a second outage before anything rewrote the record
	clk.Advance(time.Hour)
	e = openEngineAt(t, dir, withFakeClock(clk))
	clk.Advance(time.Minute)
	expire(0) // 9.5m
	clk.Advance(time.Minute)
	expire(1) // 10.5m
	if got := wsState(t, e, w.ID); got != workspace.Failed {
		t.Fatalf("state after 10.5m active = %s, want failed", got)
	}
	ex := trailWhere(t, e, trail.EventBudgetExceeded, map[string]string{"workspace_id": w.ID})
	if len(ex) != 1 {
		t.Fatalf("%d budget_exceeded, want 1", len(ex))
	}
	b := entryBody(t, ex[0])
	d, _ := time.ParseDuration(b["consumed"].(string))
	if b["budget_dimension"] != string(workspace.DimCompute) || b["limit"] != "10m0s" || d < 10*time.Minute || d > 11*time.Minute {
		t.Fatalf("budget_exceeded = %v, want compute_timeout, limit 10m0s, consumed 10m to 11m", b)
	}
	verify(t, e)
}

// TestBudget_ReconstructionBaseline (Recovery §5 test 7): half a token
// budget consumed, a crash, and metering resumes from the durable figure,
// not from zero.
func TestBudget_ReconstructionBaseline(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	w := newWorker(t, e, map[string]any{"budget": map[string]any{"compute_budget": map[string]any{"token_limit": 100}}})
	usageCheckpoint(t, e, w.ID, 50, 0)
	crash(t, e)
	e = openEngineAt(t, dir)
	usageCheckpoint(t, e, w.ID, 35, 0)
	if got, want := budgetEvents(t, e, w.ID), []string{"warning " + string(workspace.DimTokens)}; !slices.Equal(got, want) {
		t.Fatalf("budget events at 85 of 100 after a crash = %q, want %q", got, want)
	}
	usageCheckpoint(t, e, w.ID, 15, 0)
	if got := wsState(t, e, w.ID); got != workspace.Failed {
		t.Fatalf("state at 100 of 100 = %s, want failed", got)
	}
}

// TestBudget_Containment (Tree T-7, Roles §4): a child's budget is carved
// from what its parent has left; one that does not fit is refused with
// invalid_structure and nothing is created.
func TestBudget_Containment(t *testing.T) {
	e := openTest(t)
	tokens := func(n int) map[string]any {
		return map[string]any{"compute_budget": map[string]any{"token_limit": n}}
	}
	d := newWorker(t, e, map[string]any{"delegate": true, "budget": tokens(1000)})
	usageCheckpoint(t, e, d.ID, 100, 0) // 900 left
	create := func(budget map[string]any) (*workspace.Workspace, error) {
		req := map[string]any{"role": "worker"}
		if budget != nil {
			req["budget"] = budget
		}
		return e.CreateWorkspace(ctx, d.ID, mustJSON(req))
	}
	a := must[*workspace.Workspace](t)(create(tokens(500))) // 400 left
	before := len(trailWhere(t, e, trail.EventWorkspaceCreated, nil))
	for _, b := range []map[string]any{tokens(401), nil, {"cost_limit": 1.0}} {
		_, err := create(b)
		wantCode(t, "create beyond the parent's budget", err, wire.CodeInvalidStructure)
	}
	if n := len(trailWhere(t, e, trail.EventWorkspaceCreated, nil)); n != before {
		t.Fatalf("%d workspace_created after refusals, want %d", n, before)
	}
	must[*workspace.Workspace](t)(create(tokens(400))) // 0 left
	// A raise of a child must fit too: nothing is left.
	_, err := e.ModifyBudget(ctx, e.Root(), wire.BudgetRequest{ID: a.ID, Budget: &workspace.Budget{ComputeBudget: &workspace.ComputeBudget{TokenLimit: 501}}})
	wantCode(t, "raise beyond the parent's budget", err, wire.CodeInvalidStructure)
	// A parent without a budget constrains nothing.
	must[*workspace.Workspace](t)(e.CreateWorkspace(ctx, e.Root(), mustJSON(map[string]any{"role": "worker"})))
}

// TestBudget_Modify: the coordinator and a person with modify_budget raise
// limits additively, in idle, active or blocked only; each change is one
// budget_modified; a raise re-arms the warning.
func TestBudget_Modify(t *testing.T) {
	e := openTest(t)
	tok := func(n int64) *workspace.Budget {
		return &workspace.Budget{ComputeBudget: &workspace.ComputeBudget{TokenLimit: n}}
	}
	w := newWorker(t, e, map[string]any{"budget": map[string]any{"compute_budget": map[string]any{"token_limit": 100, "compute_timeout": "1h"}}})
	usageCheckpoint(t, e, w.ID, 85, 0)
	got := must[*workspace.Workspace](t)(e.ModifyBudget(ctx, e.Root(), wire.BudgetRequest{ID: w.ID, Budget: &workspace.Budget{
		ComputeBudget: &workspace.ComputeBudget{TokenLimit: 200, ComputeTimeout: "2h"}}}))
	if got.Budget.ComputeBudget.TokenLimit != 200 || got.Budget.ComputeBudget.ComputeTimeout != "2h0m0s" {
		t.Fatalf("budget after the raise = %+v", got.Budget.ComputeBudget)
	}
	mods := trailWhere(t, e, trail.EventBudgetModified, map[string]string{"workspace_id": w.ID})
	if len(mods) != 2 {
		t.Fatalf("%d budget_modified, want 2 (tokens, compute_timeout)", len(mods))
	}
	if b := entryBody(t, mods[0]); b["budget_dimension"] != string(workspace.DimTokens) || b["old_limit"] != float64(100) || b["new_limit"] != float64(200) || mods[0].Actor != trail.ActorSystem {
		t.Fatalf("budget_modified = %v by %s, want tokens 100 → 200 by system", b, mods[0].Actor)
	}
	usageCheckpoint(t, e, w.ID, 80, 0) // 165 of 200: a second warning, the first re-armed
	if got, want := budgetEvents(t, e, w.ID), []string{"warning " + string(workspace.DimTokens), "warning " + string(workspace.DimTokens)}; !slices.Equal(got, want) {
		t.Fatalf("budget events = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		name string
		b    *workspace.Budget
		code string
	}{
		{"lower", tok(150), wire.CodeInvalidStructure},
		{"unlimited dimension", &workspace.Budget{MemoryBudget: &workspace.MemoryBudget{ContextLimit: 10}}, wire.CodeInvalidStructure},
		{"nothing", &workspace.Budget{}, wire.CodeInvalidStructure},
	} {
		_, err := e.ModifyBudget(ctx, e.Root(), wire.BudgetRequest{ID: w.ID, Budget: tt.b})
		wantCode(t, tt.name, err, tt.code)
	}
	must[*workspace.Workspace](t)(e.Suspend(ctx, e.Root(), w.ID, ""))
	_, err := e.ModifyBudget(ctx, e.Root(), wire.BudgetRequest{ID: w.ID, Budget: tok(300)})
	wantCode(t, "raise while suspended", err, wire.CodeInvalidTransition)
	must[*workspace.Workspace](t)(e.Resume(ctx, e.Root(), w.ID))

	// A person: modify_budget covers only the person's own workspaces.
	mkUser(t, e, "alice", user.ModifyBudget)
	mkUser(t, e, "bob", user.ModifyBudgetAny)
	_, err = e.UserModifyBudget(ctx, "alice", wire.BudgetRequest{ID: w.ID, Budget: tok(300)})
	wantCode(t, "alice on the operator's workspace", err, wire.CodeCapabilityDenied)
	must[*workspace.Workspace](t)(e.UserModifyBudget(ctx, "bob", wire.BudgetRequest{ID: w.ID, Budget: tok(300)}))
	last := trailWhere(t, e, trail.EventBudgetModified, map[string]string{"workspace_id": w.ID})
	if n := len(last); n != 3 || last[2].Actor != "bob" {
		t.Fatalf("budget_modified = %d, last by %s; want 3, the last by bob", n, last[n-1].Actor)
	}
	verify(t, e)
}

// TestAdmission_CapacityExhausted (Workspace §10): a creation the
// runtime has no capacity for is refused with capacity_exhausted and
// recorded as workspace_rejected; the workspace never exists.
func TestAdmission_CapacityExhausted(t *testing.T) {
	t.Run("live workspaces", func(t *testing.T) {
		e := openTest(t, func(c *Config) { c.Capacity.MaxLiveWorkspaces = 3 }) // the root and two
		newWorker(t, e)
		w := newWorker(t, e)
		before := len(must[[]*workspace.Workspace](t)(e.ListWorkspaces(ctx, e.Root(), "", "")))
		_, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`))
		wantCode(t, "a third worker", err, wire.CodeCapacityExhausted)
		if d := Details(err); d["reason"] != "capacity_exhausted" || d["capacity_details"] == nil {
			t.Fatalf("details = %v, want reason and capacity_details", d)
		}
		mkUser(t, e, "carol", user.CreateWorkspace)
		_, err = e.UserCreateWorkspace(ctx, "carol", []byte(`{"role":"worker"}`), nil)
		wantCode(t, "a person's worker", err, wire.CodeCapacityExhausted)
		if n := len(must[[]*workspace.Workspace](t)(e.ListWorkspaces(ctx, e.Root(), "", ""))); n != before {
			t.Fatalf("%d workspaces after the refusals, want %d", n, before)
		}
		rej := trailWhere(t, e, trail.EventWorkspaceRejected, nil)
		if len(rej) != 2 || rej[0].Workspace != "" || entryBody(t, rej[0])["reason"] != "capacity_exhausted" {
			t.Fatalf("workspace_rejected = %v, want 2 system-level with reason capacity_exhausted", rej)
		}
		if c := entryBody(t, rej[0])["capacity_details"].(map[string]any); c["dimension"] != "compute" || c["live_workspaces"] != float64(3) {
			t.Fatalf("capacity_details = %v", c)
		}
		// A workspace that ends frees its place.
		must[*workspace.Workspace](t)(e.Abort(ctx, e.Root(), w.ID, ""))
		must[*workspace.Workspace](t)(e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`)))
		verify(t, e)
	})
	t.Run("storage", func(t *testing.T) {
		free := uint64(1 << 40)
		e := openTest(t, func(c *Config) {
			c.MinFreeBytes = 1 << 20
			c.freeSpace = func() (uint64, error) { return free, nil }
		})
		newWorker(t, e)
		free = 1<<20 + 8<<20 // above the reserve, short of 16 MiB more
		_, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`))
		wantCode(t, "a worker on a nearly full disk", err, wire.CodeCapacityExhausted)
		rej := trailWhere(t, e, trail.EventWorkspaceRejected, nil)
		if len(rej) != 1 || entryBody(t, rej[0])["capacity_details"].(map[string]any)["dimension"] != "storage" {
			t.Fatalf("workspace_rejected = %v, want one for storage", rej)
		}
	})
	t.Run("memory", func(t *testing.T) {
		e := openTest(t, func(c *Config) { c.MemoryLimit = 512 << 20; c.Capacity.MemoryPerWorkspace = 256 << 20 })
		newWorker(t, e) // the root and one: 512 MiB
		_, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`))
		wantCode(t, "a worker beyond the memory", err, wire.CodeCapacityExhausted)
	})
}

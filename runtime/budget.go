package runtime

import (
	"context"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The resource meter (WACP Workspace §6): every budget dimension is
// metered from durable records, and checked after each operation of the
// workspace's agent that consumes it (a checkpoint, an envelope, a
// signal) and, for compute_timeout, by the timer loop. What each
// dimension counts:
//
//   - storage_budget.checkpoint_limit: the checkpoints in the chain
//     (its register's count).
//   - storage_budget.trail_limit: the entries in the workspace's local
//     trail (its head's sequence number).
//   - compute_budget.compute_timeout: the sum of the workspace's active
//     intervals (Meter.ComputeNanos + ActiveNanos + the current one);
//     suspended, blocked and migrating time does not accrue, and neither
//     does the daemon's outage (startMeters).
//   - network_budget.bandwidth_limit: the bytes of the envelope and
//     signal bodies the workspace's agent sends (Meter.Used).
//   - compute_budget.token_limit, cost_limit: the BudgetMeter's reading
//     when one is configured, else Config.Meter's cumulative reading,
//     else the sum of the agent's checkpoints' resource_usage
//     (Meter.Used).
//   - memory_budget.context_limit: the BudgetMeter's reading; the
//     protocol gives agents no field to report it.
//
// A workspace's record holds the meter and is written in the commit of
// the operation that moved it, so a restart resumes from the durable
// figures (Recovery §3.4 budget baseline).

// BudgetMeter measures budget dimensions of a workspace on the
// deployment's side: an LLM gateway counting tokens and cost, a model
// server reporting context size, a proxy counting bytes. It is the
// runtime's independent meter for what agents would otherwise only
// report.
type BudgetMeter interface {
	// Measure returns workspace ws's consumption in dimension d so far
	// (cumulative since the workspace's creation; for context_limit the
	// current context size), and ok=false when it does not measure d for
	// ws. The engine calls it inside a commit, with its lock held, after
	// each of the workspace's checkpoints, envelopes and signals: it must
	// be quick and must not call the Engine. Dimensions the runtime counts
	// itself (checkpoint_limit, trail_limit, compute_timeout) are never
	// asked.
	Measure(ws string, d workspace.Dimension) (value float64, ok bool)
}

// defaultBudgetWarnPercent is the budget_warning threshold when
// Config.BudgetWarnPercent is zero (WACP recommends 80%).
const defaultBudgetWarnPercent = 80

// warnPercent returns the run's budget_warning threshold.
func (e *Engine) warnPercent() int {
	if p := e.cfg.BudgetWarnPercent; p > 0 && p < 100 {
		return p
	}
	return defaultBudgetWarnPercent
}

// hasBudget reports whether w's budget limits anything.
func hasBudget(w *workspace.Workspace) bool { return w.Budget.Limited() }

// computeTime returns w's active time at now.
func computeTime(w *workspace.Workspace, now time.Time) int64 {
	return w.Meter.ComputeNanos + w.Meter.ActiveNanos + activeSince(w, now)
}

// consumed returns w's (a tx copy) consumption in dimension d at now, and
// whether anything meters it.
func (t *tx) consumed(w *workspace.Workspace, d workspace.Dimension, now time.Time) (float64, bool) {
	switch d {
	case workspace.DimCheckpoints:
		return float64(t.chain(w.ID).Count), true
	case workspace.DimTrail:
		return float64(t.batch.LocalHead(w.ID).Seq), true
	case workspace.DimCompute:
		return float64(computeTime(w, now)), true
	}
	if m := t.e.cfg.BudgetMeter; m != nil {
		if v, ok := m.Measure(w.ID, d); ok {
			return v, true
		}
	}
	switch {
	case d == workspace.DimTokens && w.Meter.Metered:
		return float64(w.Meter.Tokens), true
	case d == workspace.DimCost && w.Meter.Metered:
		return w.Meter.Cost, true
	}
	v, ok := w.Meter.Used[d]
	return v, ok
}

// budgetUsage returns w's consumption in every dimension its budget limits.
func (t *tx) budgetUsage(w *workspace.Workspace, now time.Time) workspace.Usage {
	u := workspace.Usage{}
	for _, d := range workspace.Dimensions() {
		if _, ok := w.Budget.Limit(d); ok {
			if v, ok := t.consumed(w, d, now); ok {
				u[d] = v
			}
		}
	}
	return u
}

// use adds n to w's metered consumption in dimension d, when w's budget
// limits it (the record stays small otherwise).
func use(w *workspace.Workspace, d workspace.Dimension, n float64) {
	if _, ok := w.Budget.Limit(d); !ok || n == 0 {
		return
	}
	if w.Meter.Used == nil {
		w.Meter.Used = workspace.Usage{}
	}
	w.Meter.Used[d] += n
}

// meterCheckpoint adds checkpoint cp's reported resource_usage to w's
// meter (a tx copy) and checks w's budgets: the checkpoint stands, and if
// it reached a limit the workspace fails after it.
func (t *tx) meterCheckpoint(w *workspace.Workspace, cp checkpointchain.Checkpoint, ts time.Time) error {
	if !hasBudget(w) {
		return nil
	}
	if u := cp.ResourceUsage; u != nil {
		if u.TokensConsumed != nil && *u.TokensConsumed > 0 {
			use(w, workspace.DimTokens, float64(*u.TokensConsumed))
		}
		if u.Cost != nil && *u.Cost > 0 {
			use(w, workspace.DimCost, *u.Cost)
		}
	}
	return t.meterBudgets(w, ts)
}

// meterSent adds n bytes the agent of w (a tx copy) sent to its
// bandwidth and checks its budgets: the envelope or signal stands, and if
// it reached a limit the workspace fails after it.
func (t *tx) meterSent(w *workspace.Workspace, n int) error {
	if !hasBudget(w) || w.State.Terminal() {
		return nil
	}
	use(w, workspace.DimBandwidth, float64(n))
	return t.meterBudgets(w, t.next())
}

// metered wraps fn, a commit of an envelope or signal the agent of
// workspace ws sends with a body of n bytes, to meter them after fn
// (meterSent).
func metered(ws string, n int, fn func(t *tx) error) func(t *tx) error {
	return func(t *tx) error {
		if err := fn(t); err != nil {
			return err
		}
		return t.meterSent(t.ws(ws), n)
	}
}

// meterBudgets writes w's record (a tx copy, with a budget) and checks
// each dimension its budget limits, in dimension order: budget_warning
// once per dimension when consumption reaches the run's threshold, and
// at the first limit reached budget_exceeded, the failed signal and the
// transition to failed with reason budget_exceeded, the dimension in
// its detail (WACP Workspace §6). The warning always comes first: the
// same pass writes it when one operation crosses both marks. Only an
// active or blocked workspace fails; an idle one fails at its first
// operation once active.
func (t *tx) meterBudgets(w *workspace.Workspace, now time.Time) error {
	if err := t.put(w); err != nil {
		return err
	}
	pct := t.e.warnPercent()
	for _, d := range workspace.Dimensions() {
		limit, ok := w.Budget.Limit(d)
		if !ok {
			continue
		}
		used, ok := t.consumed(w, d, now)
		if !ok {
			continue
		}
		if used*100 >= limit*float64(pct) && !slices.Contains(w.Meter.Warned, string(d)) {
			w.Meter.Warned = append(w.Meter.Warned, string(d))
			_, err := t.append(w.ID, trail.ActorProtocol, trail.EventBudgetWarning, map[string]any{
				"workspace_id": w.ID, "budget_dimension": string(d), "consumed": workspace.Value(d, used),
				"limit": workspace.Value(d, limit), "threshold_percent": pct,
			})
			if err != nil {
				return err
			}
			if err := t.put(w); err != nil {
				return err
			}
		}
		if used < limit || (w.State != workspace.Active && w.State != workspace.Blocked) {
			continue
		}
		return t.exceed(w, d, used, limit)
	}
	return nil
}

// exceed fails w (a tx copy) for reaching its limit in dimension d.
func (t *tx) exceed(w *workspace.Workspace, d workspace.Dimension, used, limit float64) error {
	_, err := t.append(w.ID, trail.ActorProtocol, trail.EventBudgetExceeded, map[string]any{
		"workspace_id": w.ID, "budget_dimension": string(d), "consumed": workspace.Value(d, used),
		"limit": workspace.Value(d, limit),
	})
	if err != nil {
		return err
	}
	if _, err := t.emit(w, taxonomy.SignalFailed, ReasonBudgetExceeded, "", trail.ActorProtocol); err != nil {
		return err
	}
	t.detail = string(d)
	return t.transition(w, workspace.BudgetExceeded, trail.ActorProtocol, ReasonBudgetExceeded, false)
}

// ReasonBudgetExceeded is a workspace's failure reason when it reached a
// budget limit; the transition's detail names the dimension.
const ReasonBudgetExceeded = "budget_exceeded"

// ExpireComputeBudgets meters the compute time of every active workspace
// whose budget sets compute_timeout, at the engine's clock: budget_warning
// at the threshold, and at the limit the workspace fails with
// budget_exceeded (dimension compute_budget.compute_timeout). RunTimers
// calls it every interval, and the start after startMeters. It returns how
// many workspaces failed.
func (e *Engine) ExpireComputeBudgets(ctx context.Context) (int, error) {
	return runLane(ctx, e, true, 0, func() (int, error) { return e.expireComputeLocked() }) // precedence.go
}

// expireComputeLocked is ExpireComputeBudgets run by the committer.
func (e *Engine) expireComputeLocked() (int, error) {
	now := e.clock.Now()
	pct := float64(e.warnPercent())
	var due []string
	running := false
	for id, w := range e.ws {
		limit, ok := w.Budget.Limit(workspace.DimCompute)
		if !ok || w.State != workspace.Active {
			continue
		}
		running = true
		used := float64(computeTime(w, now))
		warned := slices.Contains(w.Meter.Warned, string(workspace.DimCompute))
		if used >= limit || (used*100 >= limit*pct && !warned) {
			due = append(due, id)
		}
	}
	if running {
		e.noteAlive(now)
	}
	slices.Sort(due)
	n := 0
	for _, id := range due {
		if w := e.get(id); w == nil || w.State != workspace.Active { // failed by an earlier cascade
			continue
		}
		err := e.commit(func(t *tx) error {
			c := t.ws(id)
			if err := t.meterBudgets(c, t.next()); err != nil {
				return err
			}
			if c.State == workspace.Failed {
				n++
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// keyAlive holds the time the compute meter last ran (m/alive, the
// engine's own prefix): while any workspace with a compute_timeout is
// active, ExpireComputeBudgets writes it at every tick of RunTimers, so
// that the start after an outage knows when the daemon was last running
// to within a tick, even when no trail entry was written for a while.
var keyAlive = []byte("m/alive")

// noteAlive writes keyAlive. A failure is logged: it only makes the next
// start count less of the time before an outage.
func (e *Engine) noteAlive(now time.Time) {
	err := e.db.Update(func(txn *badger.Txn) error { return txn.Set(keyAlive, []byte(clock.Format(now))) })
	if err != nil {
		e.lg.Warn("compute meter: record the time", "err", err)
	}
}

// lastAlive returns the latest time the daemon is known to have run: the
// trail's last entry or keyAlive, whichever is later (zero for neither).
func (e *Engine) lastAlive() time.Time {
	var last time.Time
	if _, ts := e.log.Last(); ts != "" {
		last, _ = clock.Parse(ts)
	}
	_ = e.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keyAlive)
		if err != nil {
			return nil
		}
		return item.Value(func(v []byte) error {
			if t, err := clock.Parse(string(v)); err == nil && t.After(last) {
				last = t
			}
			return nil
		})
	})
	return last
}

// startMeters excludes the daemon's outage from the compute time of the
// workspaces that were active when it stopped (WACP Recovery §3.4:
// compute time is the sum of the active intervals). The current interval
// is closed when the daemon last ran (lastAlive: the trail's last entry,
// or the compute meter's last tick) and a new one opens now; the records
// are written, so a second outage before the next write is excluded too.
// Only workspaces whose budget sets compute_timeout are touched.
func (e *Engine) startMeters(ctx context.Context) error {
	last := e.lastAlive()
	if last.IsZero() {
		return nil // nothing ran
	}
	return e.run(ctx, 0, func() error {
		var ids []string
		for id, w := range e.ws {
			if _, ok := w.Budget.Limit(workspace.DimCompute); ok && w.State == workspace.Active && w.Meter.ActiveSince != "" {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		slices.Sort(ids)
		return e.commit(func(t *tx) error {
			now := t.next()
			for _, id := range ids {
				c := t.ws(id)
				c.Meter.ActiveNanos += activeSince(c, last)
				c.Meter.ActiveSince = clock.Format(now)
				if err := t.put(c); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// budgetFits checks that budget b fits in what parent (as t sees it) has
// left (workspace.Fits), not counting workspace except (a child whose
// budget is being raised: its own share is in b).
func (t *tx) budgetFits(b *workspace.Budget, parent *workspace.Workspace, except string) error {
	if !hasBudget(parent) {
		return nil
	}
	all, kids := t.snapshot()
	var siblings []*workspace.Budget
	for _, id := range kids[parent.ID] {
		if id != except {
			siblings = append(siblings, all[id].Budget)
		}
	}
	return workspace.Fits(b, parent.Budget, t.budgetUsage(parent, t.next()), siblings)
}

// ModifyBudget raises limits of workspace req.ID's budget for the agent of
// actor: the coordinator, or a delegate over its subtree (WACP Workspace
// §6, budget modification).
func (e *Engine) ModifyBudget(ctx context.Context, actor string, req wire.BudgetRequest) (*workspace.Workspace, error) {
	return e.coordinate(ctx, actor, req.ID, func(w *workspace.Workspace) error { return modifiable(w) },
		func(t *tx, a, c *workspace.Workspace) error { return t.raise(c, e.actorOf(a), req) })
}

// UserModifyBudget raises limits of workspace req.ID's budget for person
// uid (modify_budget for a workspace the person owns, modify_budget_any
// for any).
func (e *Engine) UserModifyBudget(ctx context.Context, uid string, req wire.BudgetRequest) (*workspace.Workspace, error) {
	return e.asUser(ctx, uid, "workspace.budget", req.ID, modifiable,
		func(t *tx, c *workspace.Workspace) error { return t.raise(c, uid, req) })
}

// modifiable checks that w's budget may change: in idle, active or
// blocked only (WACP Workspace §6).
func modifiable(w *workspace.Workspace) error {
	switch w.State {
	case workspace.Idle, workspace.Active, workspace.Blocked:
		return nil
	}
	return Refuse(wire.CodeInvalidTransition, "workspace %s is %s; a budget changes only in idle, active or blocked", w.ID, w.State)
}

// raise applies req to c (a tx copy) for by: workspace.Raise's rules, the
// raised budget still fits in its parent's (containment), then the record
// and one budget_modified per limit that changed. A dimension warned of
// whose consumption is now below the threshold of its new limit is
// re-armed, so a budget_warning comes again before a budget_exceeded.
func (t *tx) raise(c *workspace.Workspace, by string, req wire.BudgetRequest) error {
	nb, changes, err := workspace.Raise(c.Budget, req.Budget)
	if err != nil {
		return &Error{Code: wire.CodeInvalidStructure, Message: err.Error(), Err: err}
	}
	if len(changes) == 0 {
		return nil
	}
	if p := t.peek(c.ParentID()); p != nil {
		if err := t.budgetFits(nb, p, c.ID); err != nil {
			return &Error{Code: wire.CodeInvalidStructure, Message: err.Error(), Err: err}
		}
	}
	c.Budget = nb
	now := t.next()
	pct := float64(t.e.warnPercent())
	for _, ch := range changes {
		if used, ok := t.consumed(c, ch.Dimension, now); !ok || used*100 < ch.New*pct {
			c.Meter.Warned = slices.DeleteFunc(c.Meter.Warned, func(s string) bool { return s == string(ch.Dimension) })
		}
		_, err := t.append(c.ID, by, trail.EventBudgetModified, map[string]any{
			"workspace_id": c.ID, "budget_dimension": string(ch.Dimension),
			"old_limit": workspace.Value(ch.Dimension, ch.Old), "new_limit": workspace.Value(ch.Dimension, ch.New),
		})
		if err != nil {
			return err
		}
	}
	return t.put(c)
}

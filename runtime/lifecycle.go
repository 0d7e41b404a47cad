package runtime

import (
	"context"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/runtime/delivery"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Conflict resolution strategies (WACP Integration spec; see
// docs/conformance.md for escalate vs human_escalate).
const (
	ResolveCoordinator = "coordinator_resolve"
	ResolveEscalate    = "escalate"
	ResolveAgentRework = "agent_rework"
)

// ResolveConflict ends the conflicts of a conflicted workspace.
// coordinator_resolve closes it (conflict_resolved per conflict with outcome
// closed, then integration_completed with result conflict_resolved);
// agent_rework fails the whole workspace (outcome failed,
// integration_aborted, reason revision_required). escalate hands the
// decision to a person: it opens a conflict_resolution gate whatever the
// run's highway gates (gate_pending), and the person's answer resolves the
// conflicts (wsgates.go). When the highway gates conflict_resolution, the
// other two strategies wait at that gate too.
func (e *Engine) ResolveConflict(ctx context.Context, actor string, body []byte) (*workspace.Workspace, error) {
	var req wire.ResolveRequest
	if err := Decode(body, &req); err != nil {
		return nil, err
	}
	switch req.ResolutionStrategy {
	case ResolveCoordinator, ResolveAgentRework, ResolveEscalate:
	default:
		return nil, Refuse(wire.CodeInvalidStructure, "resolution_strategy %q is not coordinator_resolve, escalate or agent_rework", req.ResolutionStrategy)
	}
	var gateID string
	w, err := e.coordinate(ctx, actor, req.Workspace, func(w *workspace.Workspace) error {
		if w.State != workspace.Conflicted {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is %s, not conflicted", w.ID, w.State)
		}
		return nil
	}, func(t *tx, a, c *workspace.Workspace) error {
		s, err := conflictGate(a, c, req)
		if err != nil {
			return err
		}
		open := t.openGate
		if req.ResolutionStrategy == ResolveEscalate {
			open = func(typ highway.GateType, s highway.Subject) (string, bool, error) {
				return t.openGateWith(*e.cfg.Highway, typ, s)
			}
		}
		id, held, err := open(highway.ConflictResolution, s)
		switch {
		case err != nil:
			return err
		case held:
			gateID = id
			return nil
		case id != "":
			return nil // the guard converted a re-trigger to approve: resolved
		}
		return t.resolveConflictAs(c, e.actorOf(a), req.ResolutionStrategy, req.Resolution)
	})
	if err == nil && gateID != "" {
		return nil, gatePending(gateID, highway.ConflictResolution, "the resolution of "+req.Workspace+"'s conflicts")
	}
	return w, err
}

// resolveConflictAs ends c's conflicts with strategy: closed for
// coordinator_resolve (and for escalate, a person's approval), failed for
// agent_rework.
func (t *tx) resolveConflictAs(c *workspace.Workspace, actor, strategy, resolution string) error {
	outcome := workspace.Closed
	if strategy == ResolveAgentRework {
		outcome = workspace.Failed
	}
	return t.endIntegration(c, actor, strategy, resolution, outcome)
}

// Migrate starts moving an active or blocked workspace to a new agent:
// the coordinator's migrate signal, migration_started and the transition to
// migrating (storing the pre-state). The workspace is frozen until
// CompleteMigration.
func (e *Engine) Migrate(ctx context.Context, actor, id, newAgent, reason string) (*workspace.Workspace, error) {
	if newAgent == "" {
		return nil, Refuse(wire.CodeInvalidStructure, "new_agent is required")
	}
	if reason == "" {
		reason = "coordinator_request"
	}
	return e.coordinate(ctx, actor, id, func(w *workspace.Workspace) error {
		if w.State != workspace.Active && w.State != workspace.Blocked {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is %s; only active or blocked workspaces migrate", id, w.State)
		}
		return nil
	}, func(t *tx, a, c *workspace.Workspace) error {
		if _, err := t.emit(t.ws(a.ID), taxonomy.SignalMigrate, reason, id, e.actorOf(a)); err != nil {
			return err
		}
		_, err := t.append(id, e.actorOf(a), trail.EventMigrationStarted, map[string]any{
			"workspace_id": id, "old_agent": c.Agent, "new_agent": newAgent, "reason": reason,
		})
		if err != nil {
			return err
		}
		return t.transition(c, workspace.Migrate, e.actorOf(a), "", false)
	})
}

// CompleteMigration ends a migration. On success the new agent is bound,
// migration_completed is written, the workspace returns to its pre-state and
// queued envelopes are delivered. On failure (errMsg set) migration_failed
// is written and the workspace fails with reason migration_error.
func (e *Engine) CompleteMigration(ctx context.Context, actor, id, newAgent, errMsg string) (*workspace.Workspace, error) {
	return e.CompleteMigrationGranting(ctx, actor, id, newAgent, errMsg, nil)
}

// CompleteMigrationGranting is CompleteMigration with bind, if not nil,
// run in the same commit on success: the daemon rotates the workspace's
// token there, which unbinds the old agent.
func (e *Engine) CompleteMigrationGranting(ctx context.Context, actor, id, newAgent, errMsg string, bind func(Grants, *workspace.Workspace) error) (*workspace.Workspace, error) {
	return e.coordinate(ctx, actor, id, func(w *workspace.Workspace) error {
		if w.State != workspace.Migrating {
			return Refuse(wire.CodeInvalidTransition, "workspace %s is %s, not migrating", id, w.State)
		}
		if newAgent == "" && errMsg == "" {
			return Refuse(wire.CodeInvalidStructure, "new_agent is required to complete a migration")
		}
		return nil
	}, func(t *tx, a, c *workspace.Workspace) error {
		since, _ := clock.Parse(c.UpdatedAt)
		ts := t.next()
		if errMsg != "" {
			err := t.appendAt(ts, id, trail.ActorProtocol, trail.EventMigrationFailed, map[string]any{
				"workspace_id": id, "old_agent": c.Agent, "new_agent": newAgent,
				"reason": "migration_error", "error": errMsg,
			})
			if err != nil {
				return err
			}
			if _, err := t.emit(c, taxonomy.SignalFailed, "migration_error", "", trail.ActorProtocol); err != nil {
				return err
			}
			return t.transition(c, workspace.MigrationError, trail.ActorProtocol, "migration_error", false)
		}
		err := t.appendAt(ts, id, trail.ActorProtocol, trail.EventMigrationCompleted, map[string]any{
			"workspace_id": id, "old_agent": c.Agent, "new_agent": newAgent, "duration": ts.Sub(since).String(),
		})
		if err != nil {
			return err
		}
		c.Agent = newAgent
		if err := t.transition(c, workspace.MigrationCompleted, e.actorOf(a), "", false); err != nil {
			return err
		}
		if bind != nil {
			if err := t.step("bind"); err != nil {
				return err
			}
			if err := bind(Grants{t.txn}, c); err != nil {
				return err
			}
		}
		return delivery.DeliverQueued(deliveryTx{t}, c.ID)
	})
}

// ExpireTimeouts fails every workspace whose timeout has run out at now,
// counting from workspace_created (Recovery §3.4; see docs/conformance.md).
// A timeout applies in idle, active, blocked and conflicted; a workspace
// suspended, migrating or integrating when its time runs out fails as soon
// as it is back in one of those states. It returns how many failed.
func (e *Engine) ExpireTimeouts(ctx context.Context, now time.Time) (int, error) {
	return runLane(ctx, e, true, 0, func() (int, error) { return e.expireTimeoutsLocked(ctx, now) }) // precedence.go
}

// expireTimeoutsLocked is ExpireTimeouts run by the committer.
func (e *Engine) expireTimeoutsLocked(ctx context.Context, now time.Time) (int, error) {
	var due []string
	for id, w := range e.ws {
		if w.Timeout == "" || w.State.Terminal() {
			continue
		}
		switch w.State {
		case workspace.Idle, workspace.Active, workspace.Blocked, workspace.Conflicted:
		default:
			continue
		}
		d, err1 := time.ParseDuration(w.Timeout)
		created, err2 := clock.Parse(w.CreatedAt)
		if err1 == nil && err2 == nil && !now.Before(created.Add(d)) {
			due = append(due, id)
		}
	}
	n := 0
	for _, id := range due {
		if e.get(id).State.Terminal() { // failed by an earlier cascade in this loop
			continue
		}
		err := e.commit(func(t *tx) error {
			c := t.ws(id)
			if _, err := t.emit(c, taxonomy.SignalFailed, "timeout", "", trail.ActorProtocol); err != nil {
				return err
			}
			if c.State == workspace.Conflicted {
				return t.endIntegration(c, trail.ActorProtocol, "timeout", "conflict_timeout", workspace.Failed)
			}
			return t.transition(c, workspace.Timeout, trail.ActorProtocol, "timeout", false)
		})
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// RunTimers calls ExpireTimeouts every interval, ExpireLeases when the
// earliest delivery lease ends (lease.go) and ExpireGates when the
// earliest gate deadline passes (gates.go), until ctx is done. The caller
// owns the goroutine it runs in.
func (e *Engine) RunTimers(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	leases := newLeaseTimer(e, interval)
	defer leases.timer.Stop()
	gates := newGateTimer(e)
	defer gates.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.gateKick:
			gates.reset()
		case <-gates.timer.C:
			gates.fire(ctx)
		case <-tick.C:
			if _, err := e.ExpireTimeouts(ctx, e.clock.Now()); err != nil {
				e.lg.Error("expire timeouts", "err", err)
			}
			if err := e.runWorkspaceTimers(ctx, e.clock.Now()); err != nil { // liveness.go
				e.lg.Error("liveness and grace periods", "err", err)
			}
			if _, err := e.ExpireComputeBudgets(ctx); err != nil { // budget.go
				e.lg.Error("compute budgets", "err", err)
			}
			if e.cfg.TrailWarmRetention > 0 {
				if _, err := e.Compact(ctx, e.clock.Now()); err != nil { // compact.go
					e.lg.Error("trail compaction", "err", err)
				}
			}
		case <-e.leaseKick:
			leases.reset()
		case <-leases.timer.C:
			leases.fire(ctx)
		}
	}
}

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/integration"
	"github.com/wacpd/wacpd/internal/recstore"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// What a merge is (docs/design.md, "Integration"): an accepted
// integration that completes appends an integration.Record to its
// target's integration register, in the commit of integration_completed.
// Detection runs against the register as it is when the integration
// starts, and an integration into a target is refused while another one
// into it is open (its source conflicted), so each record is merged onto
// every earlier one: integrations into one target are sequential.

// keyIntegrations is the integration registers' key prefix:
// i/<target>/<seq: 16 hex digits> → the record's JSON (docs/formats.md).
const keyIntegrations = "i/"

func integrationPrefix(target string) string { return keyIntegrations + target + "/" }

// integrationRecords returns target's register in order, as t sees it
// (the open batch's writes included).
func (t *tx) integrationRecords(target string) ([]integration.Record, error) {
	return readIntegrations(t.txn.Txn, target)
}

func readIntegrations(txn *badger.Txn, target string) ([]integration.Record, error) {
	prefix := []byte(integrationPrefix(target))
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
	defer it.Close()
	var out []integration.Record
	for it.Rewind(); it.Valid(); it.Next() {
		var r integration.Record
		if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &r) }); err != nil {
			return nil, fmt.Errorf("decode integration record %s: %w", it.Item().Key(), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// IntegrationRecords returns the integration register of workspace target
// (the records of the integrations merged into it, in order).
func (e *Engine) IntegrationRecords(ctx context.Context, target string) ([]integration.Record, error) {
	if err := e.settle(ctx); err != nil { // what was answered is in Badger
		return nil, err
	}
	var out []integration.Record
	err := e.db.View(func(txn *badger.Txn) (err error) {
		out, err = readIntegrations(txn, target)
		return err
	})
	return out, err
}

// putIntegration appends r to its target's register.
func (t *tx) putIntegration(r integration.Record) error {
	if err := t.step("integration"); err != nil {
		return err
	}
	return recstore.Put(t.txn, integrationPrefix(r.Target), fmt.Sprintf("%016x", r.Seq), &r)
}

// openIntegrationInto returns the workspace other than except whose
// integration into target is open (conflicted), "" for none.
func (t *tx) openIntegrationInto(target, except string) string {
	all, _ := t.snapshot()
	for id, w := range all {
		if id != except && w.State == workspace.Conflicted && w.Integration != nil && w.Integration.Target == target {
			return id
		}
	}
	return ""
}

// refuseBusy refuses an integration of source into target while another
// one into target is open.
func (t *tx) refuseBusy(target, source string) error {
	if open := t.openIntegrationInto(target, source); open != "" {
		return Refuse(wire.CodeInvalidTransition,
			"the integration of %s into %s is open (conflicted); integrations into one workspace are sequential: resolve its conflicts first", open, target)
	}
	return nil
}

// incoming gathers what detection needs of checkpoint cpID of c.
func (t *tx) incoming(c *workspace.Workspace, cpID string) (integration.Incoming, error) {
	cp, err := chainstore.Get(t.txn.Txn, t.e.seg, cpID)
	if err != nil {
		return integration.Incoming{}, err
	}
	in := integration.Incoming{
		Source: c.ID, Owner: c.Owner, Checkpoint: cp.ID, CheckpointDigest: cp.Digest.String(),
		Files: cp.Payload.FilesChanged, Content: cp.Payload.Content, Authority: c.Authority,
		Assumes: map[string][]string{},
	}
	for _, a := range cp.Payload.Artifacts {
		ws, _, err := chainstore.Position(t.txn.Txn, a)
		switch {
		case errors.Is(err, checkpointchain.ErrNotFound):
			continue // a file, a URI: not a checkpoint
		case err != nil:
			return in, err
		case ws == c.ID:
			continue
		}
		dep, err := chainstore.Get(t.txn.Txn, t.e.seg, a)
		if err != nil {
			return in, err
		}
		in.Assumes[a] = dep.Payload.FilesChanged
	}
	if c.TaskRef != "" {
		if k, ok := t.task(c.TaskRef); ok {
			for _, d := range k.DependsOn {
				if dk, ok := t.task(d); !ok || dk.Status != task.Integrated {
					in.PendingDeps = append(in.PendingDeps, d)
				}
			}
		}
	}
	return in, nil
}

// salvageResolution is the resolution recorded for a salvage's conflicts.
const salvageResolution = "salvage: merged by the coordinator's evaluated integration (the source stays failed)"

// integrateNow integrates workspace wsID as req asks, from checkpoint
// cpID, for the agent of a: the integrate signal, integration_started,
// then, for accept, the strategy's conflict detection against the
// target's register (integration.Detect) with the conflicts the
// coordinator reported: none → the integration record, integration_completed
// and closed (a salvage stays failed); conflicts → conflict_detected each
// and conflicted (a salvage, whose source cannot leave failed, is merged
// with each conflict resolved coordinator_resolve, result
// conflict_resolved). revise and reject: integration_aborted and failed.
func (t *tx) integrateNow(a *workspace.Workspace, wsID string, req wire.IntegrateRequest, cpID string) (wire.IntegrateResult, error) {
	e := t.e
	res := wire.IntegrateResult{Checkpoint: cpID}
	c := t.ws(wsID)
	target := c.ParentID()
	actor := e.actorOf(a)
	var in integration.Incoming
	var conflicts []workspace.Conflict
	if req.Decision == DecisionAccept {
		// Everything is read before the first write: a refusal must leave
		// the batch clean.
		if err := t.refuseBusy(target, c.ID); err != nil {
			return res, err
		}
		var err error
		if in, err = t.incoming(c, cpID); err != nil {
			return res, err
		}
		recs, err := t.integrationRecords(target)
		if err != nil {
			return res, err
		}
		conflicts = integration.Merge(integration.Detect(req.Strategy, integration.Fold(recs), in), req.Conflicts)
	}
	if _, err := t.emit(t.ws(a.ID), taxonomy.SignalIntegrate, "", cpID, actor); err != nil {
		return res, err
	}
	_, err := t.append(c.ID, actor, trail.EventIntegrationStarted, map[string]any{
		"source": c.ID, "target": target, "owner": c.Owner, "mode": req.Mode,
		"strategy": req.Strategy, "checkpoint_ref": cpID, "timestamp": nil,
	})
	if err != nil {
		return res, err
	}
	if len(conflicts) > 0 {
		for _, cf := range conflicts {
			_, err := t.append(c.ID, actor, trail.EventConflictDetected, map[string]any{
				"workspace_id": c.ID, "conflict_type": cf.ConflictType, "resources": cf.Resources,
				"description": cf.Description,
			})
			if err != nil {
				return res, err
			}
		}
		if req.Mode == ModeNormal {
			c.Integration = &workspace.Integration{Target: target, Mode: req.Mode, Strategy: req.Strategy, Checkpoint: cpID, Result: req.Result}
			c.Conflicts = conflicts
			res.Outcome, res.Workspace = string(workspace.Conflicted), c
			return res, t.transition(c, workspace.ConflictDetected, actor, "", false)
		}
	}
	if req.Decision == DecisionAccept {
		// A salvage's source is failed and cannot be conflicted: its
		// conflicts are resolved by the evaluated merge itself, the
		// coordinator's (docs/conformance.md deviation).
		var resolved []integration.ResolvedConflict
		for _, cf := range conflicts {
			_, err := t.append(c.ID, actor, trail.EventConflictResolved, map[string]any{
				"workspace_id": c.ID, "conflict_type": cf.ConflictType, "resolution_strategy": ResolveCoordinator,
				"resolution": salvageResolution, "outcome": workspace.Failed,
			})
			if err != nil {
				return res, err
			}
			resolved = append(resolved, integration.ResolvedConflict{Conflict: cf, ResolutionStrategy: ResolveCoordinator, Resolution: salvageResolution})
		}
		rec, err := t.mergeIntegration(target, in, req.Strategy, req.Mode, req.Result, resolved)
		if err != nil {
			return res, err
		}
		res.Record = &rec
		_, err = t.append(c.ID, actor, trail.EventIntegrationCompleted, map[string]any{
			"source": c.ID, "target": target, "mode": req.Mode, "strategy": req.Strategy,
			"result": rec.Result, "timestamp": nil,
		})
		if err != nil {
			return res, err
		}
		res.Outcome, res.Workspace = "salvaged", c
		if req.Mode == ModeNormal {
			res.Outcome = string(workspace.Closed)
			err = t.transition(c, workspace.IntegrationSucceeded, actor, "", false)
		}
		return res, err
	}
	reason := "rejected"
	if req.Decision == DecisionRevise {
		reason = "revision_required"
	}
	_, err = t.append(c.ID, actor, trail.EventIntegrationAborted, map[string]any{
		"source": c.ID, "target": target, "mode": req.Mode, "reason": reason, "timestamp": nil,
	})
	if err != nil {
		return res, err
	}
	res.Outcome, res.Workspace = string(workspace.Failed), c
	return res, t.transition(c, workspace.IntegrationFailed, actor, reason, false)
}

// mergeIntegration appends in's record to target's register: in merged onto the
// register's state with strategy and mode, synthesis the coordinator's
// result, conflicts those resolved on the way.
func (t *tx) mergeIntegration(target string, in integration.Incoming, strategy, mode string, synthesis json.RawMessage, conflicts []integration.ResolvedConflict) (integration.Record, error) {
	recs, err := t.integrationRecords(target)
	if err != nil {
		return integration.Record{}, err
	}
	rec, err := integration.Next(integration.Fold(recs), target, in, strategy, mode, clock.Format(t.next()), synthesis, conflicts)
	if err != nil {
		return integration.Record{}, err
	}
	return rec, t.putIntegration(rec)
}

// endIntegration resolves c's conflicts with strategy and ends its
// integration with outcome: closed (the record merged, result
// conflict_resolved, integration_completed) or failed (integration_aborted
// and the transition, reason conflict_timeout for the timeout,
// gate_rejected_by_human for a person's rejection of an escalation,
// revision_required for agent_rework). A salvage's source stays failed.
func (t *tx) endIntegration(c *workspace.Workspace, actor, strategy, resolution string, outcome workspace.State) error {
	in := c.Integration
	if in == nil {
		in = &workspace.Integration{Target: c.ParentID(), Mode: ModeNormal}
	}
	var inc integration.Incoming
	if outcome == workspace.Closed && in.Checkpoint != "" {
		// Read before the first write (see integrateNow).
		var err error
		if inc, err = t.incoming(c, in.Checkpoint); err != nil {
			return err
		}
	}
	resolved := make([]integration.ResolvedConflict, 0, len(c.Conflicts))
	for _, cf := range c.Conflicts {
		_, err := t.append(c.ID, actor, trail.EventConflictResolved, map[string]any{
			"workspace_id": c.ID, "conflict_type": cf.ConflictType, "resolution_strategy": strategy,
			"resolution": resolution, "outcome": outcome,
		})
		if err != nil {
			return err
		}
		resolved = append(resolved, integration.ResolvedConflict{Conflict: cf, ResolutionStrategy: strategy, Resolution: resolution})
	}
	c.Conflicts, c.Integration = nil, nil
	if outcome == workspace.Closed {
		if in.Checkpoint != "" {
			if _, err := t.mergeIntegration(in.Target, inc, in.Strategy, in.Mode, in.Result, resolved); err != nil {
				return err
			}
		}
		_, err := t.append(c.ID, actor, trail.EventIntegrationCompleted, map[string]any{
			"source": c.ID, "target": in.Target, "mode": in.Mode, "strategy": in.Strategy,
			"result": integration.ResultConflictResolved, "timestamp": nil,
		})
		if err != nil {
			return err
		}
		return t.transition(c, workspace.ConflictResolved, actor, "", false)
	}
	reason, trig := "revision_required", workspace.ConflictUnresolved
	switch strategy {
	case "timeout":
		reason, trig = "conflict_timeout", workspace.ConflictTimeout
	case ResolveEscalate:
		reason = ReasonGateRejected
	}
	_, err := t.append(c.ID, actor, trail.EventIntegrationAborted, map[string]any{
		"source": c.ID, "target": in.Target, "mode": in.Mode, "reason": reason, "timestamp": nil,
	})
	if err != nil || in.Mode == ModeSalvage {
		return err
	}
	return t.transition(c, trig, actor, reason, false)
}

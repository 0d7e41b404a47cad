package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Integration decisions, strategies and modes (WACP Integration spec).
const (
	DecisionAccept = "accept"
	DecisionRevise = "revise"
	DecisionReject = "reject"

	StrategyDirect    = "direct"
	StrategyLayered   = "layered"
	StrategyEvaluated = "evaluated"

	ModeNormal  = "normal"
	ModeSalvage = "salvage"
)

func decodeIntegrate(body []byte) (wire.IntegrateRequest, error) {
	var r wire.IntegrateRequest
	if err := Decode(body, &r); err != nil {
		return r, err
	}
	if r.Strategy == "" {
		r.Strategy = StrategyDirect
	}
	if r.Mode == "" {
		r.Mode = ModeNormal
	}
	switch {
	case r.Workspace == "":
		return r, Refuse(wire.CodeInvalidStructure, "workspace is required")
	case r.Decision != DecisionAccept && r.Decision != DecisionRevise && r.Decision != DecisionReject:
		return r, Refuse(wire.CodeInvalidStructure, "decision %q is not accept, revise or reject", r.Decision)
	case r.Strategy != StrategyDirect && r.Strategy != StrategyLayered && r.Strategy != StrategyEvaluated:
		return r, Refuse(wire.CodeInvalidStructure, "strategy %q is not direct, layered or evaluated", r.Strategy)
	case r.Mode != ModeNormal && r.Mode != ModeSalvage:
		return r, Refuse(wire.CodeInvalidStructure, "mode %q is not normal or salvage", r.Mode)
	case r.Mode == ModeSalvage && r.Strategy != StrategyEvaluated:
		return r, Refuse(wire.CodeInvalidStructure, "salvage integration uses the evaluated strategy only")
	case r.Mode == ModeSalvage && r.Decision != DecisionAccept:
		return r, Refuse(wire.CodeInvalidStructure, "salvage integration only accepts work from a failed workspace")
	case len(r.Result) > 0 && !json.Valid(r.Result):
		return r, Refuse(wire.CodeInvalidStructure, "result is not JSON")
	case len(r.Conflicts) > 0 && (r.Decision != DecisionAccept || r.Mode != ModeNormal):
		return r, Refuse(wire.CodeInvalidStructure, "conflicts are reported only when accepting in normal mode")
	}
	for _, c := range r.Conflicts {
		switch c.ConflictType {
		case workspace.ConflictContentOverlap:
		case workspace.ConflictSemanticContradiction, workspace.ConflictDependencyViolation, workspace.ConflictConstraintBreach:
			if r.Strategy != StrategyEvaluated {
				return r, Refuse(wire.CodeInvalidStructure, "the %s strategy cannot detect %s conflicts", r.Strategy, c.ConflictType)
			}
		default:
			return r, Refuse(wire.CodeInvalidStructure, "conflict_type %q is not one of the four WACP conflict types", c.ConflictType)
		}
		if r.Strategy == StrategyDirect {
			return r, Refuse(wire.CodeInvalidStructure, "the direct strategy detects no conflicts")
		}
		if c.Resources == nil {
			return r, Refuse(wire.CodeInvalidStructure, "a conflict lists its resources")
		}
	}
	return r, nil
}

// Integrate decides on a workspace's work (WACP Integration spec). In normal
// mode the workspace must be integrating and the decision uses its most
// recent final checkpoint (no_final_checkpoint when there is none): accept
// closes it, revise fails it with revision_required, reject fails it with
// rejected. In salvage mode the workspace is failed and stays failed; the
// most recent final checkpoint is used, else the head. The checkpoint's
// digest is verified first. One commit holds the integrate signal,
// integration_started, integration_completed or integration_aborted, and
// the transition.
func (e *Engine) Integrate(ctx context.Context, actor string, body []byte) (wire.IntegrateResult, error) {
	return runAs(ctx, e, len(body), func() (wire.IntegrateResult, error) { return e.integrateLocked(ctx, actor, body) })
}

// integrateLocked is Integrate run by the committer.
func (e *Engine) integrateLocked(ctx context.Context, actor string, body []byte) (wire.IntegrateResult, error) {
	req, err := decodeIntegrate(body)
	if err != nil {
		return wire.IntegrateResult{}, err
	}
	a, w, err := e.authorize(actor, req.Workspace)
	if err != nil {
		return wire.IntegrateResult{}, err
	}
	chain := e.chainOf(w.ID)
	cpID := chain.LastFinal
	switch {
	case req.Mode == ModeNormal && w.State != workspace.Integrating:
		return wire.IntegrateResult{}, Refuse(wire.CodeInvalidTransition, "workspace %s is %s; normal integration needs integrating", w.ID, w.State)
	case req.Mode == ModeSalvage && w.State != workspace.Failed:
		return wire.IntegrateResult{}, Refuse(wire.CodeInvalidTransition, "workspace %s is %s; salvage needs a failed workspace", w.ID, w.State)
	case req.Mode == ModeSalvage && cpID == "":
		cpID = chain.Head
	}
	if cpID == "" {
		if req.Decision == DecisionAccept {
			return wire.IntegrateResult{}, Refuse(wire.CodeNoFinalCheckpoint, "workspace %s has no final checkpoint to integrate; fail it (reject or revise) and salvage a provisional one, or abort it", w.ID)
		}
		// Checkpoint spec rule 2: with no final checkpoint normal
		// integration cannot proceed, and the coordinator fails the
		// workspace (then may salvage a provisional checkpoint).
		return e.failUnintegrated(a, w, req)
	}
	// Verify the checkpoint's integrity proof before integrating (Security §4.3).
	// Read through the open batch: the checkpoint may have been created by an
	// earlier operation of it.
	if _, err := chainstore.Get(e.open.tx.txn.Txn, e.seg, cpID); err != nil {
		var ce *casstore.CorruptError
		if !errors.As(err, &ce) {
			return wire.IntegrateResult{}, err
		}
		// Security §4.3: a checkpoint that fails verification is not
		// integrated, and the violation is never silent.
		if rerr := e.commit(func(t *tx) error {
			_, err := t.append("", trail.ActorProtocol, trail.EventIntegrityViolation, map[string]any{
				"subject_type": "checkpoint", "subject_id": cpID, "violation": "hash_mismatch",
				"expected": ce.Ref.String(), "actual": ce.Got.String(), "action_taken": "rejected",
			})
			return err
		}); rerr != nil {
			return wire.IntegrateResult{}, rerr
		}
		return wire.IntegrateResult{}, &Error{Code: wire.CodeInternal, Err: err,
			Message: fmt.Sprintf("checkpoint %s failed its integrity check and was not integrated (recorded as integrity_violation)", cpID)}
	}
	var res wire.IntegrateResult
	var gateID string
	err = e.commit(func(t *tx) error {
		if req.Decision == DecisionAccept {
			// Sequential integration: refused before a person is asked.
			if err := t.refuseBusy(w.ParentID(), w.ID); err != nil {
				return err
			}
			s, err := integrationGate(a, w, req, cpID)
			if err != nil {
				return err
			}
			id, held, err := t.openGate(highway.Integration, s)
			switch {
			case err != nil:
				return err
			case held:
				gateID = id
				return nil
			case id != "":
				// The guard converted a re-trigger to approve: the
				// integration is done.
				c := t.ws(w.ID)
				res = wire.IntegrateResult{Checkpoint: cpID, Workspace: c, Outcome: string(c.State)}
				if req.Mode == ModeSalvage {
					res.Outcome = "salvaged"
				}
				return nil
			}
		}
		var err error
		res, err = t.integrateNow(a, w.ID, req, cpID)
		return err
	})
	if err == nil && gateID != "" {
		err = gatePending(gateID, highway.Integration, "the integration of "+w.ID)
	}
	if err != nil {
		return wire.IntegrateResult{}, err
	}
	res.Workspace = res.Workspace.Clone()
	return res, nil
}

// failUnintegrated fails an integrating workspace that has no final
// checkpoint, on a reject or revise decision (Checkpoint spec rule 2): the
// integrate signal (no ref), integration_aborted with the decision's reason
// and the transition to failed, in one commit. No integration_started is
// written: there is no checkpoint to start from. Caller holds e.mu (runs
// in the committer).
func (e *Engine) failUnintegrated(a, w *workspace.Workspace, req wire.IntegrateRequest) (wire.IntegrateResult, error) {
	reason := "rejected"
	if req.Decision == DecisionRevise {
		reason = "revision_required"
	}
	var res wire.IntegrateResult
	err := e.commit(func(t *tx) error {
		c := t.ws(w.ID)
		if _, err := t.emit(t.ws(a.ID), taxonomy.SignalIntegrate, "", "", e.actorOf(a)); err != nil {
			return err
		}
		_, err := t.append(w.ID, e.actorOf(a), trail.EventIntegrationAborted, map[string]any{
			"source": w.ID, "target": c.ParentID(), "mode": req.Mode, "reason": reason, "timestamp": nil,
		})
		if err != nil {
			return err
		}
		res.Outcome, res.Workspace = string(workspace.Failed), c
		return t.transition(c, workspace.IntegrationFailed, e.actorOf(a), reason, false)
	})
	if err != nil {
		return wire.IntegrateResult{}, err
	}
	res.Workspace = res.Workspace.Clone()
	return res, nil
}

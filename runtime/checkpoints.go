package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// CreateCheckpoint creates a checkpoint in workspace ws from a request body
// (wire contract §3.2). On success one commit holds the object, the chain
// head, checkpoint_created, any resource_discrepancy entries, the runtime's
// checkpoint signal (signal_emitted, signal_delivered) and its outbox item.
// A rejection writes checkpoint_rejected with the spec's reason and returns
// a *checkpointchain.Rejection.
func (e *Engine) CreateCheckpoint(ctx context.Context, ws string, body []byte) (checkpointchain.Checkpoint, error) {
	// Decoding is pure: do it before joining the committer's queue.
	var req checkpointchain.Request
	var derr error
	if len(body) <= e.cfg.MaxObjectBytes {
		req, derr = checkpointchain.DecodeRequest(body)
	}
	var cp checkpointchain.Checkpoint
	err := e.runPipelined(ctx, len(body), func() (err error) {
		cp, err = e.createCheckpointLocked(ctx, ws, body, req, derr)
		return err
	})
	if err != nil {
		return checkpointchain.Checkpoint{}, err
	}
	return cp, nil
}

// createCheckpointLocked is CreateCheckpoint run by the committer, with the
// request already decoded (req, or the decoding error derr).
func (e *Engine) createCheckpointLocked(ctx context.Context, ws string, body []byte, req checkpointchain.Request, derr error) (checkpointchain.Checkpoint, error) {
	w := e.get(ws)
	if w == nil {
		return checkpointchain.Checkpoint{}, Refuse(wire.CodeNotFound, "workspace %s does not exist", ws)
	}
	if e.open.stale && hasBudget(w) {
		// Reaching a limit fails the workspace, and a transition may read
		// envelope queues from Badger: that needs a fresh snapshot.
		return checkpointchain.Checkpoint{}, errNeedFresh
	}
	if len(body) > e.cfg.MaxObjectBytes {
		return checkpointchain.Checkpoint{}, e.rejectTooLarge(w, checkpointchain.PeekType(body), len(body))
	}
	if derr != nil {
		return checkpointchain.Checkpoint{}, e.rejectCheckpoint(w, checkpointchain.PeekType(body), derr)
	}
	var err error
	var cp checkpointchain.Checkpoint
	var rejection error
	err = e.commit(func(t *tx) error {
		ts := t.next()
		c := t.ws(ws)
		author := checkpointchain.Author{Workspace: ws, Role: c.Role, Active: c.State == workspace.Active, State: string(c.State)}
		id, err := e.mintIn(ts, e.partitionOf(ws)) // its workspace's partition (placement.go)
		if err != nil {
			return err
		}
		var obj checkpointchain.Object
		cp, obj, err = checkpointchain.Build(req, author, t.chain(ws), e.tax, id, clock.Format(ts))
		if err != nil {
			rejection = err
			return err
		}
		if n := len(obj.Bytes()); n > e.cfg.MaxObjectBytes {
			rejection = Refuse(wire.CodeTooLarge, "checkpoint of %d bytes", n)
			return rejection
		}
		if err := t.step("object"); err != nil {
			return err
		}
		next, err := chainstore.Put(t.txn, cp, obj, t.chain(ws))
		if err != nil {
			return err
		}
		t.chains[ws] = next
		err = t.appendAt(ts, ws, c.Role, trail.EventCheckpointCreated, &trail.CheckpointCreated{
			CheckpointID: cp.ID, Workspace: ws, Type: cp.Type, Status: cp.Status,
			Confidence: cp.Confidence, Parent: cp.Parent, Timestamp: cp.Timestamp,
			Digest: cp.Digest.String(),
		})
		if err != nil {
			return err
		}
		metered, err := t.checkUsage(c, cp, ts)
		if err != nil {
			return err
		}
		if _, err := t.emit(c, taxonomy.SignalCheckpoint, "", cp.ID, trail.ActorProtocol); err != nil {
			return err
		}
		// The meter's interval restarts at every checkpoint (in c, the tx's
		// copy), but that alone does not rewrite the workspace's record:
		// loadState derives the restart from the chain's head (deriveMeters).
		// An external meter's readings are written, and so is the record of
		// a workspace with a budget (meterCheckpoint, budget.go).
		if metered && !hasBudget(c) {
			if err := t.put(c); err != nil {
				return err
			}
		}
		return t.meterCheckpoint(c, cp, ts)
	})
	var rj *checkpointchain.Rejection
	if errors.As(rejection, &rj) {
		return checkpointchain.Checkpoint{}, e.rejectCheckpoint(w, req.Type, rejection)
	}
	if Code(rejection) == wire.CodeTooLarge {
		return checkpointchain.Checkpoint{}, e.rejectTooLarge(w, req.Type, e.cfg.MaxObjectBytes+1)
	}
	if err != nil {
		return checkpointchain.Checkpoint{}, err
	}
	return cp, nil
}

// rejectCheckpoint records checkpoint_rejected for cause and returns cause,
// or the storage error if the rejection could not be recorded. Caller holds e.mu.
func (e *Engine) rejectCheckpoint(w *workspace.Workspace, typ string, cause error) error {
	var rj *checkpointchain.Rejection
	if !errors.As(cause, &rj) {
		return cause
	}
	err := e.commit(func(t *tx) error {
		_, err := t.append(w.ID, w.Role, trail.EventCheckpointRejected, map[string]any{
			"workspace": w.ID, "type": optional(bounded(typ)), "reason": rj.Reason, "timestamp": nil,
		})
		return err
	})
	if err != nil {
		return err
	}
	return cause
}

// rejectTooLarge records a checkpoint over the size limit as
// checkpoint_rejected with reason invalid_structure (the spec's reasons have
// no size) and returns too_large, the wire code. Caller holds e.mu.
func (e *Engine) rejectTooLarge(w *workspace.Workspace, typ string, size int) error {
	err := e.rejectCheckpoint(w, typ, checkpointchain.Reject(checkpointchain.ReasonInvalidStructure, "too large"))
	if Code(err) == wire.CodeUnavailable {
		return err
	}
	return Refuse(wire.CodeTooLarge, "checkpoint of %d bytes or more exceeds the limit of %d bytes; store large artifacts elsewhere and pass references in payload.artifacts", size, e.cfg.MaxObjectBytes)
}

// checkUsage compares the agent's resource_usage with the runtime's own
// meter and writes one resource_discrepancy per field that differs beyond
// the tolerance. It never blocks the checkpoint. It also restarts the meter
// interval at ts (the checkpoint's timestamp: deriveMeters relies on it), and
// reports whether it read the external meter (Config.Meter), whose readings
// only the workspace's record holds.
func (t *tx) checkUsage(w *workspace.Workspace, cp checkpointchain.Checkpoint, ts time.Time) (metered bool, err error) {
	wall := w.Meter.ActiveNanos + activeSince(w, ts)
	w.Meter.ComputeNanos += wall // the compute time (budget.go) keeps it
	w.Meter.ActiveNanos = 0
	if w.Meter.ActiveSince != "" {
		w.Meter.ActiveSince = clock.Format(ts)
	}
	var tokens, cost float64
	if m := t.e.cfg.Meter; m != nil {
		if tk, c, ok := m.Consumed(w.ID); ok {
			// Readings are cumulative from the workspace's start: the first
			// checkpoint's baseline is zero.
			tokens, cost, metered = float64(tk-w.Meter.Tokens), c-w.Meter.Cost, true
			w.Meter.Tokens, w.Meter.Cost, w.Meter.Metered = tk, c, true
		}
	}
	u := cp.ResourceUsage
	if u == nil {
		return metered, nil
	}
	tol := t.e.cfg.Tolerance
	type diff struct {
		field         string
		agent, metric any
	}
	var diffs []diff
	if u.WallTime != nil {
		agent, _ := time.ParseDuration(*u.WallTime)
		if exceeds(float64(agent), float64(wall), float64(tol.WallTime), tol.WallTimeRatio) {
			diffs = append(diffs, diff{"wall_time", *u.WallTime, time.Duration(wall).String()})
		}
	}
	if metered && u.TokensConsumed != nil && exceeds(float64(*u.TokensConsumed), tokens, float64(tol.Tokens), tol.TokensRatio) {
		diffs = append(diffs, diff{"tokens_consumed", *u.TokensConsumed, int64(tokens)})
	}
	if metered && u.Cost != nil && exceeds(*u.Cost, cost, tol.Cost, tol.CostRatio) {
		diffs = append(diffs, diff{"cost", *u.Cost, cost})
	}
	for _, d := range diffs {
		_, err := t.append(w.ID, trail.ActorProtocol, trail.EventResourceDiscrepancy, map[string]any{
			"checkpoint_id": cp.ID, "workspace": w.ID, "field": d.field,
			"agent_value": d.agent, "runtime_value": d.metric, "timestamp": nil,
		})
		if err != nil {
			return metered, err
		}
	}
	return metered, nil
}

func exceeds(agent, runtime, abs, ratio float64) bool {
	return math.Abs(agent-runtime) > math.Max(abs, ratio*runtime)
}

// GetCheckpoint returns checkpoint id if actor may see its workspace. The
// object's hash is verified on read.
func (e *Engine) GetCheckpoint(ctx context.Context, actor, id string) (checkpointchain.Checkpoint, error) {
	var cp checkpointchain.Checkpoint
	if err := e.settle(ctx); err != nil {
		return cp, err
	}
	err := e.db.View(func(txn *badger.Txn) error {
		var err error
		cp, err = chainstore.Get(txn, e.seg, id)
		return err
	})
	if errors.Is(err, checkpointchain.ErrNotFound) {
		return checkpointchain.Checkpoint{}, hiddenCheckpoint(id) // as one actor may not see
	}
	if err != nil {
		return cp, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.canSee(actor, cp.Workspace) {
		return checkpointchain.Checkpoint{}, hiddenCheckpoint(id)
	}
	return cp, nil
}

// ListCheckpoints returns up to limit checkpoints of workspace ws in chain
// order, after checkpoint after when set.
func (e *Engine) ListCheckpoints(ctx context.Context, actor, ws, after string, limit int) ([]checkpointchain.Checkpoint, error) {
	if err := e.visible(actor, ws); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	if err := e.settle(ctx); err != nil {
		return nil, err
	}
	var out []checkpointchain.Checkpoint
	err := e.db.View(func(txn *badger.Txn) error {
		var from uint64
		if after != "" {
			w, n, err := chainstore.Position(txn, after)
			if err != nil {
				return err
			}
			if w != ws {
				return Refuse(wire.CodeInvalidStructure, "checkpoint %s is not in workspace %s", after, ws)
			}
			from = n
		}
		var err error
		out, err = chainstore.List(txn, e.seg, ws, from, limit)
		return err
	})
	return out, err
}

// Head returns the chain head of workspace ws, or with final its most recent
// final checkpoint. A workspace with no such checkpoint gives not_found (or
// no_final_checkpoint with final).
func (e *Engine) Head(ctx context.Context, actor, ws string, final bool) (checkpointchain.Checkpoint, error) {
	if err := e.visible(actor, ws); err != nil {
		return checkpointchain.Checkpoint{}, err
	}
	e.mu.Lock()
	ch := e.chains[ws]
	e.mu.Unlock()
	id := ch.Head
	if final {
		id = ch.LastFinal
	}
	if id == "" {
		if final {
			return checkpointchain.Checkpoint{}, Refuse(wire.CodeNoFinalCheckpoint, "workspace %s has no final checkpoint", ws)
		}
		return checkpointchain.Checkpoint{}, Refuse(wire.CodeNotFound, "workspace %s has no checkpoints", ws)
	}
	var cp checkpointchain.Checkpoint
	if err := e.settle(ctx); err != nil {
		return cp, err
	}
	err := e.db.View(func(txn *badger.Txn) error {
		var err error
		cp, err = chainstore.Get(txn, e.seg, id)
		return err
	})
	return cp, err
}

func (e *Engine) visible(actor, ws string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := e.lookupFor(actor, ws)
	return err
}

// bounded returns s if it is at most MaxString bytes, else its first
// boundedKeep bytes (whole characters) with its length and BLAKE3 digest:
// what a record of a refusal keeps of a value too long to keep.
func bounded(s string) string {
	if len(s) <= MaxString {
		return s
	}
	keep := s[:boundedKeep]
	for !utf8.ValidString(keep) && len(keep) > 0 {
		keep = keep[:len(keep)-1]
	}
	return fmt.Sprintf("%s… (%d bytes, %s)", keep, len(s), casstore.RefOf([]byte(s)))
}

// boundedKeep is how much of an over-long refused value a record keeps.
const boundedKeep = 64

// MaxString bounds every string of a request outside longFields.
const MaxString = 1024

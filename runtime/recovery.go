package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/integrity"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
)

// The recovery procedure at start (WACP Recovery §3, digest §3.13).
//
// Every open of an existing data dir runs the integrity check (step 1)
// before anything reads the trail: integrity.Check, the verifier that the
// daemon's audit.trail.verify and the offline auditor run too, finds the
// trail's longest valid prefix from the mark the previous start left; with
// Config.FullCheck it reads every entry, Badger's checksums and the
// checkpoint store as well. Damage outside the trail (a table block, a
// checkpoint record or object) is refused with ErrTrailCorrupt. A trail with no valid prefix, or one broken inside the
// latest signed tree head, is refused with ErrTrailCorrupt and left as it
// is; a bad tail after the signed head is quarantined (traillog.Repair) and
// every quarantined entry is logged. The engine's state is durable in the
// same transactions as the trail, so step 2 is loading it; step 3 is the
// publisher republishing the outbox (publisher.go); step 4 is
// ExpireTimeouts, which fails what ran out while the daemon was down; step
// 5 is the clock resuming above the last entry and the last signed tree
// head. After an unclean stop (the open marker m/open is still there) or a
// quarantine, the procedure ends with recovery_completed.

// keyOpen exists while an engine has the data dir open; Close removes it.
// Finding it at open means the previous run did not stop cleanly.
var keyOpen = []byte("m/open")

// recovery is what the integrity check found, for recovery_completed.
type recovery struct {
	unclean     bool
	examined    uint64
	quarantined int
	last        time.Time // the latest timestamp in the data dir: last entry, signed tree head or quarantined entry
	lastID      string    // the greatest quarantined entry id
	outbox      int       // signals left unpublished by the previous run
}

// checkTrail runs the integrity check on db before the trail is opened,
// quarantines a bad tail, and marks the engine open.
func checkTrail(cfg Config, db *badger.DB, seg *seglog.Log) (recovery, error) {
	var rec recovery
	var sth *trail.TreeHead
	err := db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(keyOpen)
		rec.unclean = err == nil
		item, err := txn.Get(keySTH)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		sth = new(trail.TreeHead)
		return item.Value(func(v []byte) error { return json.Unmarshal(v, sth) })
	})
	if err != nil {
		var syntaxErr *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
			return rec, fmt.Errorf("%w: the signed tree head (%s) is unreadable: %v", ErrTrailCorrupt, keySTH, err)
		}
		return rec, fmt.Errorf("recover: read the signed tree head: %w", err)
	}
	opts := integrity.Options{Full: cfg.FullCheck, Seg: seg}
	if sth != nil {
		root, err := trail.HashBytes(sth.Root)
		if err != nil {
			return rec, fmt.Errorf("%w: the signed tree head (%s) has no valid root: %v", ErrTrailCorrupt, keySTH, err)
		}
		opts.SignedSize, opts.SignedRoot = sth.Size, root
		if t, err := clock.Parse(sth.Timestamp); err == nil {
			rec.last = t
		}
	}
	start := time.Now()
	rep, err := integrity.Check(context.Background(), db, opts)
	if err != nil {
		return rec, fmt.Errorf("recover: %w", err)
	}
	res := rep.Trail
	rec.examined = res.Examined
	cfg.Logger.Info("integrity check", "entries", res.Valid, "examined", res.Examined,
		"from", res.From, "full", cfg.FullCheck, "took", time.Since(start).String(), "ok", rep.OK)
	if !rep.OK && (rep.Step != integrity.StepTrail || res.OK()) {
		// Damage outside the trail's entries and derived records (Badger's
		// files, the checkpoint store, a trail shorter than its signed
		// head) is not repaired: refuse.
		if err := traillog.Unmark(db); err != nil {
			cfg.Logger.Error("unmark the trail", "err", err)
		}
		return rec, fmt.Errorf("%w: the %s check found %s at %s: %s; the data dir is left as it is: restore it from a backup (docs/operations.md)",
			ErrTrailCorrupt, rep.Step, rep.Violation, rep.FirstBad, rep.Detail)
	}
	if !res.OK() {
		if err := repairTrail(cfg, db, seg, res, sth, &rec); err != nil {
			return rec, err
		}
	}
	if res.Valid > res.From || !res.OK() {
		if err := traillog.MarkChecked(db, res); err != nil {
			return rec, fmt.Errorf("recover: %w", err)
		}
	}
	err = db.Update(func(txn *badger.Txn) error { return txn.Set(keyOpen, []byte(clock.Format(cfg.Now().UTC()))) })
	if err == nil {
		// Badger writes without syncing (the segment blocks are the
		// batches' log): what the start wrote (the marker, a repair, a
		// layout upgrade, the Merkle nodes) is synced here, once.
		err = db.Sync()
	}
	if err != nil {
		return rec, fmt.Errorf("recover: mark the data dir open: %w", err)
	}
	return rec, nil
}

// repairTrail refuses a trail that has no valid prefix to keep, and
// otherwise quarantines what follows the valid prefix and rebuilds what is
// derived from it.
func repairTrail(cfg Config, db *badger.DB, seg *seglog.Log, res traillog.CheckResult, sth *trail.TreeHead, rec *recovery) error {
	refuse := func(format string, args ...any) error {
		// A later start must read every entry again, not only those after
		// the mark: the damage may lie before it.
		if err := traillog.Unmark(db); err != nil {
			cfg.Logger.Error("unmark the trail", "err", err)
		}
		return fmt.Errorf("%w: %s (entry %s, %s: %s); the trail is left as it is: restore the data dir from a backup (docs/operations.md)",
			ErrTrailCorrupt, fmt.Sprintf(format, args...), res.FirstBad, res.Violation, res.Detail)
	}
	switch {
	case res.Violation == trail.ViolationUnreadable:
		return refuse("the storage cannot be read back")
	case res.Violation != "" && res.Valid == 0:
		return refuse("no valid prefix: the first entry fails")
	case !res.SignedCovered:
		return refuse("the trail breaks after %d entries, inside the signed tree head of %d entries", res.Valid, sth.Size)
	}
	q, err := traillog.Repair(context.Background(), db, seg, res, clock.Format(cfg.Now().UTC()))
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	if res.Derived != "" {
		cfg.Logger.Warn("rebuilt the trail's heads, indexes and Merkle nodes from its entries", "first_problem", res.Derived)
	}
	for _, e := range q {
		cfg.Logger.Error("quarantined trail entry", "seq", e.Seq, "id", e.ID, "event_type", e.EventType,
			"workspace", e.Workspace, "missing", e.Missing, "reason", e.Reason)
	}
	if len(q) > 0 {
		cfg.Logger.Error("quarantined the trail after its valid prefix", "valid", res.Valid, "quarantined", len(q),
			"first_bad", res.FirstBad, "violation", res.Violation, "detail", res.Detail)
	}
	rec.quarantined = len(q)
	// The clock and ids resume above the quarantined entries too: the
	// state may hold records written with them.
	for _, e := range q {
		if t, err := clock.Parse(e.Timestamp); err == nil && t.After(rec.last) {
			rec.last = t
		}
		rec.lastID = max(rec.lastID, e.ID)
	}
	return nil
}

// finishRecovery runs the last steps of the recovery procedure once the
// engine serves operations: after an unclean stop or a quarantine it fails
// the workspaces whose timeout ran out while the daemon was down and writes
// recovery_completed.
func (e *Engine) finishRecovery(rec recovery) error {
	if !rec.unclean && rec.quarantined == 0 {
		// What ran out while the daemon was down runs out before it
		// serves, as after a crash, rather than at the timers' first tick.
		if err := e.expireDue(context.Background(), e.clock.Now()); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		return nil
	}
	var err error
	if rec.outbox, err = e.OutboxLen(); err != nil {
		return err
	}
	live := func() (n, timers int) {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, w := range e.ws {
			if !w.State.Terminal() {
				n++
				if w.Timeout != "" {
					timers++
				}
				timers += workspaceTimers(w) // liveness.go
			}
		}
		return n, timers
	}
	if _, ts := e.log.Last(); ts != "" { // before this recovery writes anything
		if t, err := clock.Parse(ts); err == nil && t.After(rec.last) {
			rec.last = t
		}
	}
	before, _ := live()
	if err := e.expireDue(context.Background(), e.clock.Now()); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	after, timers := live()
	body := map[string]any{
		"workspaces_recovered":   after,
		"workspaces_failed":      before - after,
		"envelopes_redelivered":  0, // an envelope is delivered in the commit that creates it
		"signals_requeued":       rec.outbox,
		"timers_reconstructed":   timers,
		"trail_entries_examined": rec.examined,
		"quarantined_entries":    rec.quarantined,
	}
	err = e.run(context.Background(), 0, func() error {
		return e.commit(func(t *tx) error {
			ts := t.next()
			downtime := time.Duration(0)
			if !rec.last.IsZero() && ts.After(rec.last) {
				downtime = ts.Sub(rec.last)
			}
			body["downtime"] = downtime.String()
			return t.appendAt(ts, "", trail.ActorProtocol, trail.EventRecoveryCompleted, body)
		})
	})
	if err != nil {
		return fmt.Errorf("recover: write recovery_completed: %w", err)
	}
	e.lg.Info("recovery completed", "downtime", body["downtime"], "workspaces_recovered", after,
		"workspaces_failed", before-after, "signals_requeued", rec.outbox, "timers_reconstructed", timers,
		"trail_entries_examined", rec.examined, "quarantined_entries", rec.quarantined)
	return nil
}

// clearOpen removes the open marker: the engine stopped cleanly.
func (e *Engine) clearOpen() {
	if err := e.db.Update(func(txn *badger.Txn) error { return txn.Delete(keyOpen) }); err != nil {
		e.lg.Error("clear the open marker; the next start will run recovery", "err", err)
	}
}

// expireDue runs every timer that ran out while the daemon was down:
// timeouts, liveness and grace periods, gates and escalations; at every
// start, before the engine serves (the recovery after a crash counts what
// they did).
func (e *Engine) expireDue(ctx context.Context, now time.Time) error {
	if _, err := e.ExpireTimeouts(ctx, now); err != nil {
		return fmt.Errorf("expire timeouts: %w", err)
	}
	if err := e.runWorkspaceTimers(ctx, now); err != nil {
		return fmt.Errorf("liveness and grace periods: %w", err)
	}
	if _, err := e.ExpireGates(ctx, now); err != nil {
		return fmt.Errorf("expire gates: %w", err)
	}
	if _, err := e.ExpireEscalations(ctx, now); err != nil {
		return fmt.Errorf("expire escalations: %w", err)
	}
	return nil
}

package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/coldstore"
	"github.com/wacpd/wacpd/workspace"
)

// Trail tiers and compaction (WACP Trail §7–§8; docs/design.md, Trail
// tiers and compaction). A workspace's entries are hot while it is not
// closed or failed and warm afterwards: both are the trail's log, and the
// move is the terminal transition itself, so nothing is rewritten and
// nothing moves back. Compaction makes the archivable entries of a
// terminal workspace cold: it writes them to a content-addressed archive
// (package trail/coldstore), then commits trail_compacted with the
// compaction record. The entries stay in the log too (deviation 62).

// ErrCompactInMemory is returned by Compact for an engine without a data
// dir: the cold tier is files beside the database.
var ErrCompactInMemory = errors.New("runtime: trail compaction needs a data dir")

// coldDir is the directory of the cold tier's archives.
func (e *Engine) coldDir() string { return filepath.Join(e.cfg.DataDir, coldstore.Dir) }

// Compact compacts every workspace that has been closed or failed for at
// least Config.TrailWarmRetention at now (every terminal workspace when it
// is zero) and is not compacted yet, one at a time: its archive is written
// and synced first, then its trail_compacted entry and record are
// committed. It returns how many workspaces it compacted. Hot entries are
// never archived: a workspace that is not terminal is not a candidate.
func (e *Engine) Compact(ctx context.Context, now time.Time) (int, error) {
	if e.cfg.InMemory || e.cfg.DataDir == "" {
		return 0, ErrCompactInMemory
	}
	if err := e.settle(ctx); err != nil { // every record answered is in Badger
		return 0, err
	}
	cands, err := e.compactCandidates(now)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ws := range cands {
		done, err := e.compactOne(ctx, ws)
		if err != nil {
			return n, fmt.Errorf("compact workspace %s: %w", ws, err)
		}
		if done {
			n++
		}
	}
	return n, nil
}

// compactCandidates lists the terminal workspaces past the warm retention
// at now that have no compaction record, sorted. A terminal record is not
// written again, so its updated_at is when it became terminal.
func (e *Engine) compactCandidates(now time.Time) ([]string, error) {
	e.mu.Lock()
	var ids []string
	for id, w := range e.ws {
		if !w.State.Terminal() {
			continue
		}
		at, err := clock.Parse(w.UpdatedAt)
		if err != nil || now.Sub(at) < e.cfg.TrailWarmRetention {
			continue
		}
		ids = append(ids, id)
	}
	e.mu.Unlock()
	slices.Sort(ids)
	var out []string
	err := e.db.View(func(txn *badger.Txn) error {
		for _, id := range ids {
			done, err := coldstore.Compacted(txn, id)
			if err != nil {
				return err
			}
			if !done {
				out = append(out, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read compaction records: %w", err)
	}
	return out, nil
}

// compactOne compacts terminal workspace ws. Its local trail no longer
// changes (entries about a terminal workspace go to the global trail
// only: tx.appendAt), so it is read and archived outside the committer;
// the commit checks again that ws is terminal and not compacted.
func (e *Engine) compactOne(ctx context.Context, ws string) (bool, error) {
	if err := e.settle(ctx); err != nil { // the terminal transition is in Badger
		return false, err
	}
	local, err := coldstore.LocalTrail(ctx, e.log, ws)
	if err != nil {
		return false, err
	}
	raw, sum := coldstore.Plan(ws, local)
	if err := e.compactStep("cold_archive"); err != nil {
		return false, err
	}
	if err := coldstore.Write(e.coldDir(), sum.Hash, raw); err != nil {
		return false, err
	}
	if err := e.compactStep("cold_archive_written"); err != nil {
		return false, err
	}
	return runAs(ctx, e, 0, func() (bool, error) {
		done := false
		err := e.commit(func(t *tx) error {
			if w := t.peek(ws); w == nil || !w.State.Terminal() {
				return nil
			}
			if c, err := coldstore.Compacted(t.txn.Txn, ws); err != nil || c {
				return err
			}
			if _, err := t.append(ws, trail.ActorProtocol, trail.EventTrailCompacted, sum.Body()); err != nil {
				return err
			}
			if err := t.step("cold_record"); err != nil {
				return err
			}
			id := t.batch.Entries()[len(t.batch.Entries())-1].ID
			if err := t.txn.Set(coldstore.Key(ws), []byte(id)); err != nil {
				return err
			}
			done = true
			return nil
		})
		return done, err
	})
}

// compactStep calls the failAt test seam outside a commit.
func (e *Engine) compactStep(name string) error {
	if e.cfg.failAt != nil {
		if err := e.cfg.failAt(name); err != nil {
			return fmt.Errorf("%w: injected at %s: %v", ErrStorage, name, err)
		}
	}
	return nil
}

// TrailTiers counts workspace ws's local trail entries by tier: hot while
// ws is not closed or failed; then warm, except the archivable entries of
// a compacted workspace, which are cold. It is derived from the durable
// records (the workspace's state, the compaction record), so a restart
// keeps it.
func (e *Engine) TrailTiers(ctx context.Context, ws string) (map[trail.Tier]int, error) {
	e.mu.Lock()
	w := e.get(ws)
	terminal := w != nil && w.State.Terminal()
	e.mu.Unlock()
	if w == nil {
		return nil, fmt.Errorf("trail tiers of %s: %w", ws, workspace.ErrNotFound)
	}
	if err := e.settle(ctx); err != nil {
		return nil, err
	}
	compacted := false
	if err := e.db.View(func(txn *badger.Txn) (err error) { compacted, err = coldstore.Compacted(txn, ws); return err }); err != nil {
		return nil, fmt.Errorf("trail tiers of %s: %w", ws, err)
	}
	local, err := coldstore.LocalTrail(ctx, e.log, ws)
	if err != nil {
		return nil, fmt.Errorf("trail tiers of %s: %w", ws, err)
	}
	out := map[trail.Tier]int{}
	for _, en := range local {
		switch {
		case !terminal:
			out[trail.TierHot]++
		case compacted && trail.Archivable(en):
			out[trail.TierCold]++
		default:
			out[trail.TierWarm]++
		}
	}
	return out, nil
}

// ReadCold returns the archived entries of compacted workspace ws from its
// archive (the cold tier itself, checked against its archive_hash), or
// nil when ws is not compacted.
func (e *Engine) ReadCold(ctx context.Context, ws string) ([]trail.Entry, error) {
	if err := e.settle(ctx); err != nil {
		return nil, err
	}
	var id string
	err := e.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(coldstore.Key(ws))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		id = string(v)
		return err
	})
	if err != nil || id == "" {
		return nil, err
	}
	en, err := e.log.Get(id)
	if err != nil {
		return nil, fmt.Errorf("read trail_compacted %s: %w", id, err)
	}
	s, err := coldstore.ParseSummary(en.Body)
	if err != nil {
		return nil, err
	}
	return coldstore.Read(e.coldDir(), s.Hash)
}

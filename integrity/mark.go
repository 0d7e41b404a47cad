package integrity

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail/traillog"
)

// The running check. The check at start reads the trail entries written
// since the mark the previous check left (traillog.MarkChecked), so a
// daemon that ran long without a restart would read everything it wrote
// at its next start. A running daemon checks what it wrote as it goes
// instead (runtime/mark.go runs Marker.Pass every few seconds): the same
// check as the start's (Check, from the mark, without a signed head) on a
// snapshot and, when the trail passes, it moves the mark. Soundness is
// that of the mark (see MarkChecked): every entry is read back and checked
// once after it was written, here rather than at the next start. A check
// that fails moves nothing: the next start finds the problem and handles
// it. (The daemon does not mark once more when it stops: the entries of
// the last seconds are left for the next start to read back, which also
// finds damage done to them while the daemon was stopped.)
//
// A full check that passes (Marker.Verify, the daemon's audit.trail.verify)
// read every entry, so it moves the mark too. The two never run at once:
// they would read the same entries twice over. A verify cancels a pass
// under way and no pass starts while a verify waits or runs: the verify
// does what the pass would.

// Marker runs the running check's passes and full verifies of one
// database, one at a time. The zero value is not usable: NewMarker.
type Marker struct {
	db        *badger.DB
	seg       *seglog.Log
	turn      chan struct{} // sent to by the pass or verify that runs
	verifying atomic.Int32  // verifies waiting for their turn or running
	cancel    atomic.Pointer[context.CancelFunc]
}

// NewMarker returns the Marker of db, whose segment files are seg (nil:
// none).
func NewMarker(db *badger.DB, seg *seglog.Log) *Marker {
	return &Marker{db: db, seg: seg, turn: make(chan struct{}, 1)}
}

// ErrSkipped is Pass's error when it did not run: a verify waited or ran.
var ErrSkipped = errors.New("integrity: running check skipped for a verify")

// Pass runs one pass of the running check and reports whether it moved the
// mark, with the check's report. It waits for a verify under way; it is
// skipped (ErrSkipped) while verifies wait, and cancelled (ctx's error) by
// one that starts.
func (m *Marker) Pass(ctx context.Context) (moved bool, rep Report, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	select {
	case m.turn <- struct{}{}:
	case <-ctx.Done():
		return false, Report{}, ctx.Err()
	}
	defer func() { <-m.turn }()
	// A verify counts itself, then cancels the pass it finds: either it
	// finds this pass's cancel or this pass sees it counted.
	m.cancel.Store(&cancel)
	defer m.cancel.Store(nil)
	if m.verifying.Load() > 0 {
		return false, Report{}, ErrSkipped
	}
	if rep, err = Check(ctx, m.db, Options{Seg: m.seg}); err != nil || !rep.OK || !rep.Trail.OK() {
		return false, rep, err
	}
	if rep.Trail.Valid <= rep.Trail.From {
		return false, rep, nil // nothing new
	}
	if err := traillog.MarkChecked(m.db, rep.Trail); err != nil {
		return false, rep, err
	}
	return true, rep, nil
}

// Verify runs Check with opts (a full check) once no pass runs, and when
// the database passes moves the mark (moved says whether it did; an error
// moving it is returned with the report). An in-memory database keeps no
// mark: no start ever reads it. It waits within ctx.
func (m *Marker) Verify(ctx context.Context, opts Options) (rep Report, moved bool, err error) {
	m.verifying.Add(1)
	defer m.verifying.Add(-1)
	if cancel := m.cancel.Load(); cancel != nil {
		(*cancel)() // the pass under way: this verify does what it would
	}
	select {
	case m.turn <- struct{}{}:
	case <-ctx.Done():
		return Report{}, false, context.Cause(ctx)
	}
	defer func() { <-m.turn }()
	if opts.Seg == nil {
		opts.Seg = m.seg
	}
	if rep, err = Check(ctx, m.db, opts); err != nil || !rep.OK || !opts.Full || m.db.Opts().InMemory {
		return rep, false, err
	}
	if err := traillog.MarkChecked(m.db, rep.Trail); err != nil {
		return rep, false, err
	}
	return rep, true, nil
}

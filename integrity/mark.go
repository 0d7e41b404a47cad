package integrity

import (
	"context"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail/traillog"
)

// The running check. The check at start reads the trail entries written
// since the mark the previous check left (traillog.MarkChecked), so a
// daemon that ran long without a restart would read everything it wrote
// at its next start. A running daemon checks what it wrote as it goes
// instead (runtime/mark.go runs Mark every few seconds): the same check as the start's (Check, from the
// mark, without a signed head) on a snapshot and, when the trail passes,
// it moves the mark. Soundness is that of the mark (see MarkChecked):
// every entry is read back and checked once after it was written, here
// rather than at the next start. A check that fails moves nothing: the
// next start finds the problem and handles it. (The daemon does not mark
// once more when it stops: the entries of the last seconds are left for
// the next start to read back, which also finds damage done to them while
// the daemon was stopped.)

// Mark runs one pass of the running check on db and reports whether it
// moved the mark, with the check's report.
func Mark(ctx context.Context, db *badger.DB) (moved bool, rep Report, err error) {
	if rep, err = Check(ctx, db, Options{}); err != nil || !rep.OK || !rep.Trail.OK() {
		return false, rep, err
	}
	if rep.Trail.Valid <= rep.Trail.From {
		return false, rep, nil // nothing new
	}
	if err := traillog.MarkChecked(db, rep.Trail); err != nil {
		return false, rep, err
	}
	return true, rep, nil
}

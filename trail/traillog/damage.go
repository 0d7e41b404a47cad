package traillog

import (
	"errors"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/y"
)

// view runs fn in a read-only transaction of db. Badger panics on some
// damaged blocks (a block whose entry count or offsets point outside it)
// instead of returning an error; view recovers such a panic and returns it
// as a *DamageError, as it does a checksum mismatch Badger reports, so that
// damage becomes a finding or an error reply, never a crash.
func view(db *badger.DB, op string, fn func(*badger.Txn) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &DamageError{Op: op, Panic: p}
		}
	}()
	err = db.View(fn)
	if err != nil && errors.Is(err, y.ErrChecksumMismatch) {
		err = &DamageError{Op: op, Err: err}
	}
	return err
}

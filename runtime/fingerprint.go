package runtime

import (
	"context"
	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/integrity"
)

// Fingerprint is what any write to the engine's store changes: tests and
// diagnostics compare two to show that a refused request changed nothing.
type Fingerprint struct {
	// Version is Badger's highest committed version: every committed
	// write moves it.
	Version uint64
	// TrailLen is the global trail's length.
	TrailLen uint64
	// All digests every key and value; State those outside the trail
	// (keys "t/...", and "s/...", where the segment files end). Both are zero when not asked for.
	All, State [32]byte
}

// Fingerprint returns the store's version and trail length, and with
// digest the digests of its content (integrity.Digest): State, and All too
// when withTrail.
//
// The version is a read transaction's timestamp, which Badger's oracle gives
// under its lock once every commit before it is done: DB.MaxVersion reads
// the memtable's highest version without the lock Badger's writer updates
// it under (a data race with any write in flight, such as the running
// check's mark).
func (e *Engine) Fingerprint(digest, withTrail bool) (Fingerprint, error) {
	if err := e.settle(context.Background()); err != nil {
		return Fingerprint{}, err
	}
	f := Fingerprint{TrailLen: e.log.Len()}
	err := e.db.View(func(txn *badger.Txn) error {
		f.Version = txn.ReadTs()
		if !digest {
			return nil
		}
		var err error
		f.All, f.State, err = integrity.Digest(txn, withTrail)
		return err
	})
	if err != nil {
		return Fingerprint{}, err
	}
	return f, nil
}

package runtime

import (
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
func (e *Engine) Fingerprint(digest, withTrail bool) (Fingerprint, error) {
	f := Fingerprint{Version: e.db.MaxVersion(), TrailLen: e.log.Len()}
	if !digest {
		return f, nil
	}
	err := e.db.View(func(txn *badger.Txn) error {
		var err error
		f.All, f.State, err = integrity.Digest(txn, withTrail)
		return err
	})
	if err != nil {
		return Fingerprint{}, err
	}
	return f, nil
}

package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"github.com/dgraph-io/badger/v4"
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
	// (keys "t/..."). Both are zero when not asked for.
	All, State [32]byte
}

// Fingerprint returns the store's version and trail length, and with
// digest the digests of its content: State, and All too when withTrail
// (the trail is most of the store, so reading it costs the most).
func (e *Engine) Fingerprint(digest, withTrail bool) (Fingerprint, error) {
	f := Fingerprint{Version: e.db.MaxVersion(), TrailLen: e.log.Len()}
	if !digest {
		return f, nil
	}
	all, state := sha256.New(), sha256.New()
	put := func(h hash.Hash, k, v []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(k))))
		h.Write(k)
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(v))))
		h.Write(v)
	}
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			inTrail := bytes.HasPrefix(k, []byte("t/"))
			if inTrail && !withTrail {
				continue
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if withTrail {
				put(all, k, v)
			}
			if !inTrail {
				put(state, k, v)
			}
		}
		return nil
	})
	if err != nil {
		return Fingerprint{}, err
	}
	if withTrail {
		copy(f.All[:], all.Sum(nil))
	}
	copy(f.State[:], state.Sum(nil))
	return f, nil
}

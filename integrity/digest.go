package integrity

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"github.com/dgraph-io/badger/v4"
)

// trailPrefix is the key prefix of package traillog's records, segPrefix
// that of the segment files' end (internal/seglog), which moves with every
// block of trail entries.
var (
	trailPrefix = []byte("t/")
	segPrefix   = []byte("s/")
)

// Digest returns SHA-256 digests of the content of the database txn
// reads: state over every key and value outside the trail (keys "t/...",
// and "s/...", where the segment files end),
// and with withTrail all over every key and value (zero otherwise: the
// trail is most of a database, so reading it costs the most). Tests and
// diagnostics compare two to show that a refused request changed nothing.
func Digest(txn *badger.Txn, withTrail bool) (all, state [32]byte, err error) {
	ha, hs := sha256.New(), sha256.New()
	put := func(h hash.Hash, k, v []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(k))))
		h.Write(k)
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(v))))
		h.Write(v)
	}
	it := txn.NewIterator(badger.DefaultIteratorOptions)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		inTrail := bytes.HasPrefix(k, trailPrefix) || bytes.HasPrefix(k, segPrefix)
		if inTrail && !withTrail {
			continue
		}
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			return all, state, err
		}
		if withTrail {
			put(ha, k, v)
		}
		if !inTrail {
			put(hs, k, v)
		}
	}
	if withTrail {
		copy(all[:], ha.Sum(nil))
	}
	copy(state[:], hs.Sum(nil))
	return all, state, nil
}

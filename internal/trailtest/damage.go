// Package trailtest damages stored trail entries, for tests of detection
// and recovery. It imports nothing of wacpd, so runtime's own tests and
// daemontest (which imports runtime) can both use it.
package trailtest

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/dgraph-io/badger/v4"
)

// EntryKey is the Badger key of stored trail entry #seq (trail's t/g/<seq>).
func EntryKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte("t/g/"), seq) }

// FlipBody returns an update that flips one byte inside the body of stored
// entry #seq: the value stays JSON, but the entry no longer hashes to its
// entry_hash.
func FlipBody(seq uint64) func(*badger.Txn) error {
	return func(txn *badger.Txn) error {
		item, err := txn.Get(EntryKey(seq))
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		i := bytes.Index(v, []byte(`"body":{"`))
		if i < 0 {
			return errors.New("no body in the stored entry")
		}
		v[i+len(`"body":{"`)] ^= 0x01
		return txn.Set(EntryKey(seq), v)
	}
}

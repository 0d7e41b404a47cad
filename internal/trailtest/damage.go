// Package trailtest damages stored trail entries, for tests of detection
// and recovery. It imports nothing of wacpd but the segment files
// (internal/seglog), so runtime's own tests and daemontest (which imports
// runtime) can both use it.
package trailtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
)

// EntryKey is the Badger key of stored trail entry #seq (trail's t/g/<seq>).
func EntryKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte("t/g/"), seq) }

// Value returns a copy of item's value in the database in dbDir: read from
// its segment files (dbDir/seg) when Badger holds a pointer.
func Value(dbDir string, item *badger.Item) ([]byte, error) {
	if item.UserMeta()&seglog.Meta == 0 {
		return item.ValueCopy(nil)
	}
	seg, _, err := seglog.Open(filepath.Join(dbDir, seglog.Dir), seglog.Pos{}, seglog.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer seg.Close()
	return seg.ValueCopy(item)
}

// FlipBody returns an update of the database in dbDir that flips one byte
// inside the body of stored entry #seq: the value (written back into
// Badger itself) stays JSON, but the entry no longer hashes to its
// entry_hash.
func FlipBody(dbDir string, seq uint64) func(*badger.Txn) error {
	return func(txn *badger.Txn) error {
		item, err := txn.Get(EntryKey(seq))
		if err != nil {
			return err
		}
		v, err := Value(dbDir, item)
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

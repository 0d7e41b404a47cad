package daemontest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// DamageTrailEntry flips one byte inside the body of trail entry #seq in the
// stopped daemon's data dir dir: the stored value stays JSON, but the entry
// no longer hashes to its entry_hash. (runtime's own tests, which cannot
// import this package, have the same damage as flipEntry.)
func DamageTrailEntry(t testing.TB, dir string, seq uint64) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "db")).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	key := binary.BigEndian.AppendUint64([]byte("t/g/"), seq)
	err = db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
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
		return txn.Set(key, v)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("damage trail entry #%d: %v", seq, err)
	}
}

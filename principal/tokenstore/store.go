// Package tokenstore keeps token records in Badger: a/<SHA-256 of the
// token, hex> holds the JSON principal the token authenticates. Only a
// token's hash is stored. The engine writes the records in the commit of
// the operation that grants or revokes them (runtime.Grants).
package tokenstore

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/principal"
)

var prefix = []byte("a/")

func key(h [32]byte) []byte { return append([]byte("a/"), hex.EncodeToString(h[:])...) }

// Put stores the token hashed h as p's.
func Put(txn *seglog.Txn, h [32]byte, p principal.Principal) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return txn.Set(key(h), b)
}

// Delete deletes the token records hashed hs.
func Delete(txn *seglog.Txn, hs ...[32]byte) error {
	for _, h := range hs {
		if err := txn.Delete(key(h)); err != nil {
			return err
		}
	}
	return nil
}

// Each calls fn with every token record: the token's hash and its
// principal. A record that does not decode is an error naming its key.
func Each(txn *badger.Txn, fn func(h [32]byte, p principal.Principal)) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		var h [32]byte
		if n, err := hex.Decode(h[:], k[len(prefix):]); err != nil || n != 32 || len(k) != len(prefix)+64 {
			return fmt.Errorf("token record %q: bad key", k)
		}
		var p principal.Principal
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &p) }); err != nil {
			return fmt.Errorf("token record %q: %w", k, err)
		}
		fn(h, p)
	}
	return nil
}

// Package recstore keeps JSON records under a key prefix in Badger: one
// key per record, <prefix><id> → the record's JSON, written in the
// transaction of the change that makes it (the engine's commit) and read
// back whole when the engine opens. The engine's task graphs, tasks,
// gates and users are kept this way (docs/formats.md, the key layout);
// workspaces keep their own store (workspace/wsstore), which predates it.
package recstore

import (
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
)

// Put writes v, the record with id, under prefix in txn.
func Put[T any](txn *seglog.Txn, prefix, id string, v *T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s%s: %w", prefix, id, err)
	}
	if err := txn.Set([]byte(prefix+id), b); err != nil {
		return fmt.Errorf("put %s%s: %w", prefix, id, err)
	}
	return nil
}

// LoadAll reads every record under prefix in db, by id. A record that
// does not decode is an error naming its key.
func LoadAll[T any](db *badger.DB, prefix string) (map[string]*T, error) {
	out := map[string]*T{}
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix), PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			v := new(T)
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, v) }); err != nil {
				return fmt.Errorf("decode %s: %w", k, err)
			}
			out[string(k[len(prefix):])] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s records: %w", prefix, err)
	}
	return out, nil
}

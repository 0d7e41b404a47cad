// Package wsstore keeps workspace records (package workspace) in Badger:
// w/<workspace id> holds the JSON record.
package wsstore

import (
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/workspace"
)

// prefix is this package's Badger key prefix: w/<id> -> JSON record.
var prefix = []byte("w/")

func key(id string) []byte { return append([]byte("w/"), id...) }

// Put writes w's record into txn.
func Put(txn *seglog.Txn, w *workspace.Workspace) error {
	b, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("encode workspace %s: %w", w.ID, err)
	}
	if err := txn.Set(key(w.ID), b); err != nil {
		return fmt.Errorf("put workspace %s: %w", w.ID, err)
	}
	return nil
}

// LoadAll reads every workspace record in db.
func LoadAll(db *badger.DB) (map[string]*workspace.Workspace, error) {
	out := map[string]*workspace.Workspace{}
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var w workspace.Workspace
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &w) }); err != nil {
				return fmt.Errorf("decode workspace %s: %w", it.Item().Key(), err)
			}
			out[w.ID] = &w
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load workspaces: %w", err)
	}
	return out, nil
}

// Package outboxstore keeps the signal outbox in Badger: o/<signal id>
// holds the JSON signal.OutboxItem. Signal ids increase in commit order,
// so the keys are in emission order.
package outboxstore

import (
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/signal"
)

var prefix = []byte("o/")

func key(id string) []byte { return append([]byte("o/"), id...) }

// Put writes item.
func Put(txn *seglog.Txn, item signal.OutboxItem) error {
	b, err := json.Marshal(item)
	if err != nil {
		return fmt.Errorf("encode outbox item %s: %w", item.ID, err)
	}
	return txn.Set(key(item.ID), b)
}

// Delete removes the item of signal id.
func Delete(txn *seglog.Txn, id string) error { return txn.Delete(key(id)) }

// After returns up to limit items (all when limit <= 0) of signals emitted
// after signal after ("" = from the start), in emission order. A reader that
// remembers the last id it confirmed never walks over the deleted records
// of earlier ones.
func After(txn *badger.Txn, after string, limit int) ([]signal.OutboxItem, error) {
	var out []signal.OutboxItem
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true})
	defer it.Close()
	start := prefix
	if after != "" {
		start = append(key(after), 0)
	}
	for it.Seek(start); it.Valid() && (limit <= 0 || len(out) < limit); it.Next() {
		var o signal.OutboxItem
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &o) }); err != nil {
			return nil, fmt.Errorf("outbox item %q: %w", it.Item().Key(), err)
		}
		out = append(out, o)
	}
	return out, nil
}

// Count counts the items, reading keys only.
func Count(txn *badger.Txn) int {
	n := 0
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		n++
	}
	return n
}

// Package outboxstore keeps the signal outbox's mark in Badger. The outbox
// itself is derived from the trail: every signal_delivered entry is a
// signal to publish (runtime, outbox.go), and m/outbox holds the JSON Mark
// up to which they are all published and confirmed.
//
// Releases before that kept each unconfirmed signal as its own record,
// o/<signal id> holding the JSON signal.OutboxItem, written when the signal
// was delivered and deleted when its publish was confirmed: two writes of
// 400 bytes per signal. Legacy and DeleteLegacy read and remove them when
// such a data dir is opened.
package outboxstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/signal"
)

// keyMark holds the Mark.
var keyMark = []byte("m/outbox")

// Mark says how far the outbox is confirmed: every signal whose
// signal_delivered entry is at or before global seq Seq of the trail has
// been published and confirmed; Signal is the id of the last of them (""
// when none).
type Mark struct {
	Seq    uint64 `json:"seq"`
	Signal string `json:"signal"`
}

// GetMark returns the mark, and false when the database has none (a new
// database, or one of the releases before).
func GetMark(txn *badger.Txn) (Mark, bool, error) {
	item, err := txn.Get(keyMark)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Mark{}, false, nil
	}
	if err != nil {
		return Mark{}, false, fmt.Errorf("read the outbox mark: %w", err)
	}
	var m Mark
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &m) }); err != nil {
		return Mark{}, false, fmt.Errorf("read the outbox mark: %w", err)
	}
	return m, true, nil
}

// PutMark writes m.
func PutMark(txn *seglog.Txn, m Mark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return txn.Set(keyMark, b)
}

// legacyPrefix is the records' prefix of the releases before the mark.
var legacyPrefix = []byte("o/")

// PutLegacy writes item as the releases before the mark did; tests of
// the upgrade build such a data dir with it.
func PutLegacy(txn *seglog.Txn, item signal.OutboxItem) error {
	b, err := json.Marshal(item)
	if err != nil {
		return fmt.Errorf("encode outbox item %s: %w", item.ID, err)
	}
	return txn.Set(append([]byte("o/"), item.ID...), b)
}

// Legacy returns the records of the releases before the mark, in emission
// (id) order.
func Legacy(txn *badger.Txn) ([]signal.OutboxItem, error) {
	var out []signal.OutboxItem
	it := txn.NewIterator(badger.IteratorOptions{Prefix: legacyPrefix, PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var o signal.OutboxItem
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &o) }); err != nil {
			return nil, fmt.Errorf("outbox item %q: %w", it.Item().Key(), err)
		}
		out = append(out, o)
	}
	return out, nil
}

// DeleteLegacy removes the records of the releases before the mark and
// returns how many it removed.
func DeleteLegacy(db *badger.DB) (int, error) {
	var keys [][]byte
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: legacyPrefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return 0, err
		}
	}
	if err := wb.Flush(); err != nil {
		return 0, err
	}
	return len(keys), nil
}

package envstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/internal/seglog"
)

// The port rights table (envelope.Right):
//
//	e/r/<right id>            the right's JSON record
//	e/h/<holder>/<right id>   its holder's index (empty value)
//	e/rv                      present once the table holds every right the
//	                          trail created (a data dir of an earlier
//	                          release gets it from its trail at open)
//
// A revoked or consumed right is deleted; the trail keeps its history.

// ErrNoRight is returned (wrapped) by GetRight for an id with no record.
var ErrNoRight = errors.New("envstore: no such port right")

var (
	rightPrefix   = []byte("e/r/")
	holderPrefix  = []byte("e/h/")
	keyRightsDone = []byte("e/rv")
)

func rightKey(id string) []byte { return append([]byte("e/r/"), id...) }

func holderKey(holder, id string) []byte {
	return append(append(append([]byte("e/h/"), holder...), '/'), id...)
}

// PutRight writes right r; prev is its record before (zero for a new
// right), whose holder index it replaces.
func PutRight(txn *seglog.Txn, r, prev envelope.Right) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode port right %s: %w", r.ID, err)
	}
	if prev.Holder != "" && prev.Holder != r.Holder {
		if err := txn.Delete(holderKey(prev.Holder, r.ID)); err != nil {
			return err
		}
	}
	if err := txn.Set(holderKey(r.Holder, r.ID), nil); err != nil {
		return err
	}
	return txn.Set(rightKey(r.ID), b)
}

// DeleteRight removes right r (revoked or consumed).
func DeleteRight(txn *seglog.Txn, r envelope.Right) error {
	if err := txn.Delete(holderKey(r.Holder, r.ID)); err != nil {
		return err
	}
	return txn.Delete(rightKey(r.ID))
}

// GetRight reads right id; ErrNoRight when there is none.
func GetRight(txn *badger.Txn, id string) (envelope.Right, error) {
	var r envelope.Right
	item, err := txn.Get(rightKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return r, fmt.Errorf("port right %s: %w", id, ErrNoRight)
	}
	if err != nil {
		return r, fmt.Errorf("port right %s: %w", id, err)
	}
	err = item.Value(func(v []byte) error { return json.Unmarshal(v, &r) })
	if err != nil {
		return r, fmt.Errorf("decode port right %s: %w", id, err)
	}
	return r, nil
}

// HeldBy returns the rights holder holds, by right id.
func HeldBy(txn *badger.Txn, holder string) ([]envelope.Right, error) {
	prefix := append(append([]byte("e/h/"), holder...), '/')
	var ids []string
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	for it.Rewind(); it.Valid(); it.Next() {
		ids = append(ids, string(it.Item().Key()[len(prefix):]))
	}
	it.Close()
	out := make([]envelope.Right, 0, len(ids))
	for _, id := range ids {
		r, err := GetRight(txn, id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// AllRights returns every right of the table, by right id.
func AllRights(txn *badger.Txn) (map[string]envelope.Right, error) {
	out := map[string]envelope.Right{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: rightPrefix, PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var r envelope.Right
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
			return nil, fmt.Errorf("decode port right %q: %w", it.Item().Key(), err)
		}
		out[r.ID] = r
	}
	return out, nil
}

// RightsBuilt reports whether the table holds every right the trail
// created (see keyRightsDone).
func RightsBuilt(txn *badger.Txn) (bool, error) {
	_, err := txn.Get(keyRightsDone)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// MarkRightsBuilt records that the table is complete.
func MarkRightsBuilt(txn *seglog.Txn) error { return txn.Set(keyRightsDone, []byte{1}) }

// ClearRights removes every right and the index (before a rebuild).
func ClearRights(txn *seglog.Txn) error {
	for _, p := range [][]byte{rightPrefix, holderPrefix} {
		var keys [][]byte
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}

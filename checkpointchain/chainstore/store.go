// Package chainstore keeps checkpoint chains (package checkpointchain) in
// Badger: the objects in casstore under their digest, and under key prefix
// "k/": k/h/<ws> the chain register {head,count,last_final}; k/c/<id> the
// index {workspace,n,digest}; k/w/<ws>/<n:8 bytes BE> the id in chain
// order. CheckStore checks them against the objects.
//
// The register is written with a chain's first checkpoint and with each
// final one (which moves last_final), not with every checkpoint: its head
// and count may be behind the chain, whose last order record gives them
// (LoadChains). Rewriting it with every checkpoint was one of the 6.9 keys
// given to Badger per checkpoint at 64 agents (issue 13).
package chainstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/casstore/badgerstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/latest"
	"github.com/wacpd/wacpd/internal/seglog"
)

// Key layout (prefix "k/"); the objects themselves are in casstore.
var (
	prefixHead  = []byte("k/h/") // k/h/<ws> -> Chain
	prefixIndex = []byte("k/c/") // k/c/<checkpoint id> -> indexEntry
	prefixOrder = []byte("k/w/") // k/w/<ws>/<n:8BE> -> checkpoint id
)

type indexEntry struct {
	Workspace string       `json:"workspace"`
	N         uint64       `json:"n"` // 1-based position in the chain
	Digest    casstore.Ref `json:"digest"`
}

// Put writes c (its object o, as Build returned them) into txn: the object
// into the content-addressed store (its bytes into the block being built,
// when txn has a Log), the id index, the chain position and, when c is
// its chain's first or final, the register. prev is the chain before c;
// Put returns the chain after it.
func Put(txn *seglog.Txn, c checkpointchain.Checkpoint, o checkpointchain.Object, prev checkpointchain.Chain) (checkpointchain.Chain, error) {
	// The object is new (its bytes hold a fresh id): no lookup first. Its
	// address was computed with its bytes (Object): no second hash.
	ref := o.Ref()
	if ref != c.Digest {
		return checkpointchain.Chain{}, fmt.Errorf("store checkpoint %s: the object is another checkpoint's: %w", c.ID, casstore.ErrCorrupt)
	}
	if err := badgerstore.PutSealedTxn(txn, ref, o.Bytes()); err != nil {
		return checkpointchain.Chain{}, fmt.Errorf("store checkpoint %s: %w", c.ID, err)
	}
	next := prev.Append(c)
	ixKey := append(bytes.Clone(prefixIndex), c.ID...)
	if ix, ok := appendIndex(make([]byte, 0, 128), c.Workspace, next.Count, ref); ok {
		if err := txn.Set(ixKey, ix); err != nil {
			return checkpointchain.Chain{}, fmt.Errorf("store checkpoint %s: %w", c.ID, err)
		}
	} else if err := setJSON(txn, ixKey, indexEntry{Workspace: c.Workspace, N: next.Count, Digest: ref}); err != nil {
		return checkpointchain.Chain{}, err
	}
	if err := txn.Set(orderKey(c.Workspace, next.Count), []byte(c.ID)); err != nil {
		return checkpointchain.Chain{}, fmt.Errorf("store checkpoint %s: %w", c.ID, err)
	}
	if prev.Count == 0 || next.LastFinal != prev.LastFinal {
		if err := setJSON(txn, append(bytes.Clone(prefixHead), c.Workspace...), next); err != nil {
			return checkpointchain.Chain{}, err
		}
	}
	return next, nil
}

// Get reads checkpoint id, verifying its object's hash (casstore.ErrCorrupt
// on mismatch).
func Get(txn *badger.Txn, seg *seglog.Log, id string) (checkpointchain.Checkpoint, error) {
	item, err := txn.Get(append(bytes.Clone(prefixIndex), id...))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return checkpointchain.Checkpoint{}, fmt.Errorf("%w: %s", checkpointchain.ErrNotFound, id)
	}
	if err != nil {
		return checkpointchain.Checkpoint{}, err
	}
	var ix indexEntry
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &ix) }); err != nil {
		return checkpointchain.Checkpoint{}, fmt.Errorf("checkpoint %s index: %w", id, err)
	}
	b, err := badgerstore.GetTxn(txn, seg, ix.Digest)
	if err != nil {
		return checkpointchain.Checkpoint{}, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	c, err := checkpointchain.Decode(b)
	if err != nil {
		return checkpointchain.Checkpoint{}, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	if c.ID != id {
		return checkpointchain.Checkpoint{}, fmt.Errorf("checkpoint %s: object holds %s: %w", id, c.ID, casstore.ErrCorrupt)
	}
	return c, nil
}

// List returns up to limit checkpoints of workspace ws in chain order,
// starting after position after (0 = from the first).
func List(txn *badger.Txn, seg *seglog.Log, ws string, after uint64, limit int) ([]checkpointchain.Checkpoint, error) {
	var ids []string
	prefix := append(append(bytes.Clone(prefixOrder), ws...), '/')
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true})
	for it.Seek(orderKey(ws, after+1)); it.Valid() && len(ids) < limit; it.Next() {
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			it.Close()
			return nil, err
		}
		ids = append(ids, string(v))
	}
	it.Close()
	out := make([]checkpointchain.Checkpoint, 0, len(ids))
	for _, id := range ids {
		c, err := Get(txn, seg, id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Position returns the 1-based position of checkpoint id in its chain and
// its workspace.
func Position(txn *badger.Txn, id string) (ws string, n uint64, err error) {
	item, err := txn.Get(append(bytes.Clone(prefixIndex), id...))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return "", 0, fmt.Errorf("%w: %s", checkpointchain.ErrNotFound, id)
	}
	if err != nil {
		return "", 0, err
	}
	var ix indexEntry
	err = item.Value(func(v []byte) error { return json.Unmarshal(v, &ix) })
	return ix.Workspace, ix.N, err
}

// LoadChains reads every workspace's chain: its register, with the head
// and count of its last order record when that is past the register's
// (the register's last_final is the chain's: it is written whenever that
// moves).
func LoadChains(db *badger.DB) (map[string]checkpointchain.Chain, error) {
	out := map[string]checkpointchain.Chain{}
	err := db.View(func(txn *badger.Txn) error {
		// One iterator for every workspace: one each was most of the time
		// with thousands of them.
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixOrder, Reverse: true})
		defer it.Close()
		return latest.Each(txn, prefixHead, func(item *badger.Item) error {
			ws := string(item.Key()[len(prefixHead):])
			var ch checkpointchain.Chain
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &ch) }); err != nil {
				return fmt.Errorf("chain register of %s: %w", ws, err)
			}
			n, id, err := lastOrder(it, ws)
			if err != nil {
				return fmt.Errorf("chain order of %s: %w", ws, err)
			}
			if n > ch.Count {
				ch.Head, ch.Count = id, n
			}
			out[ws] = ch
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load checkpoint chains: %w", err)
	}
	return out, nil
}

// lastOrder returns the last position of workspace ws's chain order
// records and the id there (0, "" when it has none), with it, a reverse
// iterator over the order records.
func lastOrder(it *badger.Iterator, ws string) (uint64, string, error) {
	prefix := append(append(bytes.Clone(prefixOrder), ws...), '/')
	for it.Seek(orderKey(ws, math.MaxUint64)); it.ValidForPrefix(prefix); it.Next() {
		k := it.Item().Key()
		if len(k) != len(prefix)+8 {
			continue // a record of a workspace whose id is ws's, a '/' and more
		}
		id, err := it.Item().ValueCopy(nil)
		return binary.BigEndian.Uint64(k[len(prefix):]), string(id), err
	}
	return 0, "", nil
}

func orderKey(ws string, n uint64) []byte {
	k := append(append(bytes.Clone(prefixOrder), ws...), '/')
	return binary.BigEndian.AppendUint64(k, n)
}

func setJSON(txn *seglog.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}

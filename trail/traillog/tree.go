package traillog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

// ErrTreeSize is returned for a tree size beyond the trail or an index
// outside the tree.
var ErrTreeSize = errors.New("trail: no such tree size or index")

func nodeKey(id compact.NodeID) []byte {
	k := append(bytes.Clone(prefixNode), byte(id.Level))
	return binary.BigEndian.AppendUint64(k, id.Index)
}

func cloneRange(r *compact.Range) *compact.Range {
	hashes := make([][]byte, len(r.Hashes()))
	for i, h := range r.Hashes() {
		hashes[i] = bytes.Clone(h)
	}
	c, err := trail.RangeFactory.NewRange(r.Begin(), r.End(), hashes)
	if err != nil {
		panic(fmt.Sprintf("trail: clone compact range: %v", err)) // cannot happen: same shape
	}
	return c
}

// nodes reads the Merkle nodes ids: stored ones from t/m/, those below
// minNodeLevel computed from their entries.
func nodes(txn *badger.Txn, seg *seglog.Log, ids []compact.NodeID) ([][]byte, error) {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		if id.Level < minNodeLevel {
			var err error
			if out[i], err = lowNode(txn, seg, id); err != nil {
				return nil, err
			}
			continue
		}
		item, err := txn.Get(nodeKey(id))
		if err != nil {
			return nil, fmt.Errorf("merkle node (%d,%d): %w", id.Level, id.Index, err)
		}
		if out[i], err = item.ValueCopy(nil); err != nil {
			return nil, err
		}
		if len(out[i]) != 32 {
			return nil, &DamageError{Op: fmt.Sprintf("merkle node (%d,%d)", id.Level, id.Index),
				Err: fmt.Errorf("%d bytes, want 32", len(out[i]))}
		}
	}
	return out, nil
}

// loadRange rebuilds the compact range of the whole tree from the stored
// nodes, backfilling them from the entries when they are missing (a data dir
// written before the Merkle tree existed).
func (l *Log) loadRange() (*compact.Range, error) {
	n := l.global.Seq
	if n == 0 {
		return trail.RangeFactory.NewEmptyRange(0), nil
	}
	var rng *compact.Range
	err := view(l.db, "read merkle tree", func(txn *badger.Txn) (err error) {
		rng, err = storedRange(txn, l.seg, n)
		return err
	})
	if err == nil {
		return rng, nil
	}
	if !errors.Is(err, badger.ErrKeyNotFound) {
		return nil, err
	}
	return l.backfill()
}

// backfill computes every Merkle node from the entries and stores those
// of minNodeLevel and above,
// unless the database is read-only (an auditor's offline copy), where only
// the in-memory range is rebuilt.
func (l *Log) backfill() (*compact.Range, error) {
	rng := trail.RangeFactory.NewEmptyRange(0)
	readOnly := l.db.Opts().ReadOnly
	var wb *badger.WriteBatch
	if !readOnly {
		wb = l.db.NewWriteBatch()
		defer wb.Cancel()
	}
	var werr error
	err := view(l.db, "read trail", func(txn *badger.Txn) error {
		g := newGlobalIter(txn, badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256})
		defer g.close()
		for g.seek(1); g.valid(); g.next() {
			var s stored
			if err := g.entry().value(l.seg, func(v []byte) (err error) { s, err = decodeStored(v); return err }); err != nil {
				return err
			}
			leaf, err := trail.LeafData(s.Entry)
			if err != nil {
				return err
			}
			if err := rng.Append(trail.Hasher{}.HashLeaf(leaf), func(id compact.NodeID, h []byte) {
				if werr == nil && wb != nil && id.Level >= minNodeLevel {
					werr = wb.Set(nodeKey(id), bytes.Clone(h))
				}
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err = errors.Join(err, werr); err != nil {
		return nil, err
	}
	if wb != nil {
		if err := wb.Flush(); err != nil {
			return nil, err
		}
	}
	return rng, nil
}

// Root returns the Merkle root of the first size entries of the global trail.
func (l *Log) Root(size uint64) ([]byte, error) {
	l.mu.Lock()
	cur := l.rng
	l.mu.Unlock()
	switch {
	case size > cur.End():
		return nil, fmt.Errorf("%w: size %d, trail has %d entries", ErrTreeSize, size, cur.End())
	case size == 0:
		return trail.Hasher{}.EmptyRoot(), nil
	case size == cur.End():
		return cur.GetRootHash(nil)
	}
	var r *compact.Range
	err := view(l.db, "read merkle root", func(txn *badger.Txn) (err error) {
		r, err = storedRange(txn, l.seg, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r.GetRootHash(nil)
}

// storedRange returns the compact range of the first size entries' tree,
// from the stored Merkle nodes (those below minNodeLevel computed from the
// entries by nodes).
func storedRange(txn *badger.Txn, seg *seglog.Log, size uint64) (*compact.Range, error) {
	hashes, err := nodes(txn, seg, compact.RangeNodes(0, size, nil))
	if err != nil {
		return nil, err
	}
	return trail.RangeFactory.NewRange(0, size, hashes)
}

// InclusionProof returns the audit path of leaf index (entry #index+1) in
// the tree of the first size entries (RFC 6962 §2.1.1).
func (l *Log) InclusionProof(index, size uint64) ([][]byte, error) {
	if size > l.Len() || index >= size {
		return nil, fmt.Errorf("%w: index %d, size %d, trail has %d entries", ErrTreeSize, index, size, l.Len())
	}
	n, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTreeSize, err)
	}
	return l.rehash(n)
}

// ConsistencyProof returns the proof that the tree of size1 entries is a
// prefix of the tree of size2 entries (RFC 6962 §2.1.2).
func (l *Log) ConsistencyProof(size1, size2 uint64) ([][]byte, error) {
	if size1 > size2 || size2 > l.Len() {
		return nil, fmt.Errorf("%w: from %d to %d, trail has %d entries", ErrTreeSize, size1, size2, l.Len())
	}
	n, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTreeSize, err)
	}
	return l.rehash(n)
}

func (l *Log) rehash(n proof.Nodes) ([][]byte, error) {
	var hashes [][]byte
	err := view(l.db, "read merkle proof", func(txn *badger.Txn) error {
		var err error
		hashes, err = nodes(txn, l.seg, n.IDs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return n.Rehash(hashes, trail.Hasher{}.HashChildren)
}

// Seq returns the 1-based position of entry id in the global trail.
func (l *Log) Seq(id string) (uint64, error) {
	var seq uint64
	err := view(l.db, "find entry by id", func(txn *badger.Txn) error {
		var err error
		seq, err = seqOf(txn, l.seg, id, l.Len())
		return err
	})
	return seq, err
}

// At returns global entry #seq (1-based).
func (l *Log) At(seq uint64) (trail.Entry, error) {
	var s stored
	err := view(l.db, "read entry", func(txn *badger.Txn) error { return getStored(txn, l.seg, seq, &s) })
	if errors.Is(err, badger.ErrKeyNotFound) {
		return trail.Entry{}, fmt.Errorf("%w: #%d", ErrNotFound, seq)
	}
	return s.Entry, err
}

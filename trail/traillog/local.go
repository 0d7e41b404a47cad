package traillog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// The local indexes. Workspace ws's trail is the global entries of ws in
// global order; its local index maps each position n (1, 2, …) to the
// entry's global seq. A key t/w/<ws>/<n> holds the global seqs of positions
// n, n+1, …, n+k-1 (1 ≤ k ≤ maxGroup), 8 bytes each, big-endian: the
// positions a batch gave ws (layout 3). Layout 2 wrote one position per
// key, which is a group of one, so its indexes read as they are. The keys
// of one workspace tile its positions: the first key is at position 1 and
// each next one at the position after the last of the one before.

// maxGroup bounds the positions one local index key holds (8 KiB).
const maxGroup = 1024

// ErrLocalIndex is wrapped by the errors of a local index key whose value
// is not a group of positions (empty, not a multiple of 8 bytes, or more
// than maxGroup positions).
var ErrLocalIndex = errors.New("malformed local index")

// groupLen returns the positions a local index value holds.
func groupLen(v []byte) (int, error) {
	if len(v) == 0 || len(v)%8 != 0 || len(v) > 8*maxGroup {
		return 0, fmt.Errorf("%w: %d bytes", ErrLocalIndex, len(v))
	}
	return len(v) / 8, nil
}

// groupSeq returns the global seq of the i-th position (0-based) of v.
func groupSeq(v []byte, i int) uint64 { return binary.BigEndian.Uint64(v[8*i:]) }

// localPrefix is the prefix of workspace ws's local index keys.
func localPrefix(ws string) []byte {
	return append(append(bytes.Clone(prefixLocal), ws...), '/')
}

// localPosition returns the position of a local index key (its last 8
// bytes; the caller has checked its form).
func localPosition(key []byte) uint64 { return binary.BigEndian.Uint64(key[len(key)-8:]) }

// localGroupAt returns the group of workspace ws's local index that holds
// position n: the position of its first and a copy of its value. It
// returns badger.ErrKeyNotFound when no key holds n.
func localGroupAt(txn *badger.Txn, ws string, n uint64) (first uint64, v []byte, err error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: localPrefix(ws), Reverse: true})
	defer it.Close()
	it.Seek(localKey(ws, n)) // the last key at or before n
	if !it.Valid() {
		return 0, nil, badger.ErrKeyNotFound
	}
	first = localPosition(it.Item().Key())
	if v, err = it.Item().ValueCopy(nil); err != nil {
		return 0, nil, err
	}
	k, err := groupLen(v)
	if err != nil {
		return 0, nil, err
	}
	if n >= first+uint64(k) {
		return 0, nil, badger.ErrKeyNotFound
	}
	return first, v, nil
}

// localSeqAt returns the global seq of workspace ws's position n.
func localSeqAt(txn *badger.Txn, ws string, n uint64) (uint64, error) {
	first, v, err := localGroupAt(txn, ws, n)
	if err != nil {
		return 0, err
	}
	return groupSeq(v, int(n-first)), nil
}

// localCursor reads one workspace's local index in position order.
type localCursor struct {
	it    *badger.Iterator
	first uint64 // position of the group read last (0: none)
	v     []byte // its value
}

// seqAt returns the global seq of position n, the positions being asked
// in order (1, 2, …, or on from a mark): the next group is the next key,
// or found again after a gap.
func (c *localCursor) seqAt(txn *badger.Txn, ws string, n uint64) (uint64, error) {
	if c.first > 0 && n >= c.first && n < c.first+uint64(len(c.v)/8) {
		return groupSeq(c.v, int(n-c.first)), nil
	}
	key := localKey(ws, n)
	if c.first > 0 {
		c.it.Next()
		if c.it.Valid() && n == c.end()+1 {
			if at := localPosition(c.it.Item().Key()); at < n {
				return 0, fmt.Errorf("%w: a key at position %d, within the key at %d", ErrLocalIndex, at, c.first)
			}
		}
	} else {
		c.it.Seek(key)
	}
	if !c.it.Valid() || !bytes.Equal(c.it.Item().Key(), key) {
		c.it.Seek(key) // after a gap, the next position is found again
	}
	c.first = 0
	if !c.it.Valid() || !bytes.Equal(c.it.Item().Key(), key) {
		// n is not the first of a group: within one that starts before
		// it (a check from a mark inside a group), or missing.
		first, v, err := localGroupAt(txn, ws, n)
		if err != nil {
			return 0, err
		}
		c.it.Seek(localKey(ws, first))
		c.first, c.v = first, v
		return groupSeq(v, int(n-first)), nil
	}
	v, err := c.it.Item().ValueCopy(c.v[:0])
	if err != nil {
		return 0, err
	}
	if _, err := groupLen(v); err != nil {
		return 0, err
	}
	c.first, c.v = n, v
	return groupSeq(v, 0), nil
}

// end returns the position of the last of the group read last (0: none).
func (c *localCursor) end() uint64 {
	if c.first == 0 {
		return 0
	}
	return c.first + uint64(len(c.v)/8) - 1
}

// localGroups collects the positions a batch gives each workspace, to
// write one local index key per workspace (Batch.Flush), or more when a
// batch gives one more than maxGroup.
type localGroups map[string]*localGroup

type localGroup struct {
	first uint64 // position of the first
	seqs  []byte // 8 bytes per position
	dirty bool   // positions added since it was last written
}

// add adds position n of ws at global seq; a full group is written to txn
// and a new one begun.
func (g localGroups) add(txn interface{ Set(k, v []byte) error }, ws string, n, seq uint64) error {
	lg := g[ws]
	if lg != nil && len(lg.seqs) >= 8*maxGroup {
		if err := lg.write(txn, ws); err != nil {
			return err
		}
		lg = nil
	}
	if lg == nil {
		lg = &localGroup{first: n, seqs: make([]byte, 0, 16)}
		g[ws] = lg
	}
	lg.seqs = binary.BigEndian.AppendUint64(lg.seqs, seq)
	lg.dirty = true
	return nil
}

// write sets lg's key to its positions so far. The value set is a slice
// of lg.seqs as it is now: later positions are appended past its end,
// which changes none of its bytes.
func (lg *localGroup) write(txn interface{ Set(k, v []byte) error }, ws string) error {
	if !lg.dirty {
		return nil
	}
	lg.dirty = false
	return txn.Set(localKey(ws, lg.first), lg.seqs[:len(lg.seqs):len(lg.seqs)])
}

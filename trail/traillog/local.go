package traillog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

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

// groupBefore returns the group under workspace ws's last local index key
// at or before position n, read with it (a reverse iterator whose prefix
// holds ws's keys): the position of its first and a copy of its value,
// badger.ErrKeyNotFound when there is none, or the error of a value that
// is not a group (with the position of its key).
func groupBefore(it *badger.Iterator, ws string, n uint64) (first uint64, v []byte, err error) {
	prefix := localPrefix(ws)
	for it.Seek(localKey(ws, n)); it.ValidForPrefix(prefix); it.Next() {
		k := it.Item().Key()
		if len(k) != len(prefix)+8 {
			continue // a key of a workspace whose id is ws's, a '/' and more
		}
		first = localPosition(k)
		if v, err = it.Item().ValueCopy(nil); err != nil {
			return first, nil, err
		}
		_, err = groupLen(v)
		return first, v, err
	}
	return 0, nil, badger.ErrKeyNotFound
}

// localGroupAt returns the group of workspace ws's local index that holds
// position n: the position of its first and a copy of its value. It
// returns badger.ErrKeyNotFound when no key holds n.
func localGroupAt(txn *badger.Txn, ws string, n uint64) (first uint64, v []byte, err error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: localPrefix(ws), Reverse: true})
	defer it.Close()
	return groupHolding(it, ws, n)
}

// groupHolding is localGroupAt with it (groupBefore's iterator).
func groupHolding(it *badger.Iterator, ws string, n uint64) (first uint64, v []byte, err error) {
	if first, v, err = groupBefore(it, ws, n); err != nil {
		return 0, nil, err
	}
	if n >= first+uint64(len(v)/8) {
		return 0, nil, badger.ErrKeyNotFound
	}
	return first, v, nil
}

// newLocalsReverse opens a reverse iterator over every local index key,
// for lastLocalIn and localSeqIn: one iterator for many workspaces
// (opening one per workspace was most of the time Open took with 10,000
// of them).
func newLocalsReverse(txn *badger.Txn) *badger.Iterator {
	return txn.NewIterator(badger.IteratorOptions{Prefix: prefixLocal, Reverse: true})
}

// lastLocalIn returns workspace ws's last position in its local index and
// the global seq there (0, 0 when it has none): the last position of the
// group under its last key; it is an iterator of newLocalsReverse.
func lastLocalIn(it *badger.Iterator, ws string) (n, seq uint64, err error) {
	first, v, err := groupBefore(it, ws, math.MaxUint64)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return 0, 0, nil
	case err != nil:
		return 0, 0, fmt.Errorf("key at position %d: %w", first, err)
	}
	cnt := len(v) / 8
	return first + uint64(cnt) - 1, groupSeq(v, cnt-1), nil
}

// localSeqIn returns the global seq of workspace ws's position n, with it,
// an iterator of newLocalsReverse (localSeqAt with one iterator for many
// workspaces).
func localSeqIn(it *badger.Iterator, ws string, n uint64) (uint64, error) {
	first, v, err := groupHolding(it, ws, n)
	if err != nil {
		return 0, err
	}
	return groupSeq(v, int(n-first)), nil
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
type localGroups map[string]*pendingGroup

// add adds position n of ws at global seq; a full group is written to txn
// and a new one begun.
func (g localGroups) add(txn entrySetter, ws string, n, seq uint64) error {
	lg := g[ws]
	if lg != nil && lg.n >= maxGroup {
		if err := lg.set(txn, localKey(ws, lg.first), 0); err != nil {
			return err
		}
		lg = nil
	}
	if lg == nil {
		lg = &pendingGroup{first: n, b: make([]byte, 0, 16)}
		g[ws] = lg
	}
	lg.add(binary.BigEndian.AppendUint64(lg.b, seq))
	return nil
}

// write sets each workspace's key to its positions so far.
func (g localGroups) write(txn entrySetter) error {
	for ws, lg := range g {
		if err := lg.set(txn, localKey(ws, lg.first), 0); err != nil {
			return err
		}
	}
	return nil
}

// pendingGroup is the value of a group key being built: a batch's entries
// (global.go) or a workspace's positions of one batch. It holds the seq or
// position of its first, how many it holds, its bytes, and whether they
// changed since its key was last set.
type pendingGroup struct {
	first uint64
	n     int
	b     []byte
	dirty bool
}

// add takes b, the group's bytes with one more appended.
func (p *pendingGroup) add(b []byte) {
	p.b, p.n, p.dirty = b, p.n+1, true
}

// entrySetter is a transaction or a write batch.
type entrySetter interface{ SetEntry(*badger.Entry) error }

// set sets key to the group's bytes, with user meta meta, when they changed
// since it was last set. The value set is the bytes as they are now: later
// ones are appended past their end, which changes none of them.
func (p *pendingGroup) set(txn entrySetter, key []byte, meta byte) error {
	if !p.dirty {
		return nil
	}
	p.dirty = false
	return txn.SetEntry(badger.NewEntry(key, p.b[:len(p.b):len(p.b)]).WithMeta(meta))
}

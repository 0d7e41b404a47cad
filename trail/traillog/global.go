package traillog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
)

// The global trail's keys. Entry #seq is under t/g/<seq> (a key of one
// entry: its stored value in Badger, user meta 0, as data dirs before the
// segment files hold it; or a pointer into the segment files with the
// entry's hash and id beside it, seglog.Meta, as layout 2 wrote it), or in
// a group: since layout 3 the entries of one batch are under one key,
// t/g/<seq of the first> with user meta metaGroup, whose value is, per
// entry in order,
//
//	pointer  seglog.PtrSize bytes: where its stored value is
//	hash     32 bytes: its entry hash (the Merkle leaf)
//	idlen    1 byte, then its id
//
// The keys tile the trail: each starts at the seq after the last of the
// key before. A database in memory (no segment files) keeps a key per
// entry.

// metaGroup is the user meta of a t/g/ key holding a group.
const metaGroup byte = 2

// maxEntryGroup bounds the entries of one group key (about 80 KiB).
const maxEntryGroup = 1024

// ErrGroup is wrapped by the errors of a group that cannot be read.
var ErrGroup = errors.New("malformed group of trail entries")

// appendRecord appends one entry's record to a group value.
func appendRecord(b, ptr, leaf []byte, id string) []byte {
	b = append(b, ptr...)
	b = append(b, leaf...)
	b = append(b, byte(len(id)))
	return append(b, id...)
}

// nextRecord reads the record at v[off:]: the entry's pointer, hash and
// id, and the offset of the next.
func nextRecord(v []byte, off int) (ptr, leaf, id []byte, next int, err error) {
	const fixed = seglog.PtrSize + 32 + 1
	if len(v)-off < fixed {
		return nil, nil, nil, 0, fmt.Errorf("%w: %d bytes left of a record at %d", ErrGroup, len(v)-off, off)
	}
	ptr, leaf = v[off:off+seglog.PtrSize], v[off+seglog.PtrSize:off+seglog.PtrSize+32]
	n := int(v[off+fixed-1])
	if n == 0 || len(v)-off-fixed < n {
		return nil, nil, nil, 0, fmt.Errorf("%w: an id of %d bytes at %d", ErrGroup, n, off)
	}
	return ptr, leaf, v[off+fixed : off+fixed+n], off + fixed + n, nil
}

// gEntry is one stored entry as the t/g/ keys hold it.
type gEntry struct {
	seq  uint64
	item *badger.Item // a key of its own (Value through the segments); nil in a group
	key  []byte       // the key it is under (its group's)
	ptr  []byte       // in a group: its pointer
	leaf []byte       // in a group: its entry hash
	id   []byte       // in a group: its id
	err  error        // in a group: its record cannot be read
	// In a group: the seq of the group's first entry, the group's value
	// and where the entry's record starts in it.
	first uint64
	grp   []byte
	off   int
}

// value calls fn with the entry's stored value (read through seg).
func (e *gEntry) value(seg *seglog.Log, fn func([]byte) error) error {
	if e.err != nil {
		return e.err
	}
	if e.item != nil {
		return seg.Value(e.item, fn)
	}
	p, err := seglog.DecodePtr(e.ptr)
	if err != nil {
		return fmt.Errorf("entry #%d: %w", e.seq, err)
	}
	v, err := seg.Get(p)
	if err != nil {
		return fmt.Errorf("entry #%d: %w", e.seq, err)
	}
	return fn(v)
}

// valueCopy returns a copy of the entry's stored value.
func (e *gEntry) valueCopy(seg *seglog.Log) ([]byte, error) {
	var out []byte
	err := e.value(seg, func(v []byte) error { out = bytes.Clone(v); return nil })
	return out, err
}

// extra returns the entry hash and id kept beside the entry's pointer (in
// its group's record, or after a key's own pointer); ok is false for an
// entry stored in Badger itself.
func (e *gEntry) extra() (hash []byte, id string, ok bool, err error) {
	if e.item != nil {
		return entryExtra(e.item)
	}
	if e.err != nil {
		return nil, "", true, e.err
	}
	return bytes.Clone(e.leaf), string(e.id), true, nil
}

// leafAndID is leafAndID (layout.go) for e.
func (e *gEntry) leafAndID(seg *seglog.Log) (leaf []byte, id string, err error) {
	if e.item != nil {
		return leafAndID(seg, e.item)
	}
	leaf, id, _, err = e.extra()
	return leaf, id, err
}

// globalIter walks the stored entries of the global trail in order, key
// by key and, in a group, entry by entry.
type globalIter struct {
	txn     *badger.Txn
	it      *badger.Iterator
	rev     *badger.Iterator // for seek: the key at or before a seq (opened when first needed)
	grp     []byte           // the group being walked (a copy), nil for a key of one entry
	first   uint64           // seq of the first entry of the key being walked
	i       int              // index of the current entry in the group
	off     int              // offset of its record
	nextOff int              // offset of the record after it
	cur     gEntry
	ok      bool
}

// newGlobalIter opens a walk; opts' Prefix is set to t/g/.
func newGlobalIter(txn *badger.Txn, opts badger.IteratorOptions) *globalIter {
	opts.Prefix = prefixGlobal
	return &globalIter{txn: txn, it: txn.NewIterator(opts)}
}

func (g *globalIter) close() {
	g.it.Close()
	if g.rev != nil {
		g.rev.Close()
	}
}

// seek moves to entry #seq, or, when it is not stored, to the first stored
// entry after it.
func (g *globalIter) seek(seq uint64) {
	if g.ok && g.grp != nil && g.cur.err == nil && seq >= g.cur.seq && seq < g.first+maxEntryGroup {
		// Ahead in the group being walked, or past it.
		for g.ok && g.grp != nil && g.cur.seq < seq && g.cur.err == nil {
			g.step()
		}
		if g.ok && (g.cur.seq == seq || g.first > seq) {
			return
		}
	}
	g.it.Seek(globalKey(seq))
	if g.it.Valid() && keySeq(g.it.Item().Key()) == seq {
		g.load(seq)
		return
	}
	// A group that starts before seq may hold it.
	if g.rev == nil {
		g.rev = g.txn.NewIterator(badger.IteratorOptions{Prefix: prefixGlobal, Reverse: true})
	}
	g.rev.Seek(globalKey(seq))
	if g.rev.Valid() && g.rev.Item().UserMeta() == metaGroup {
		first := keySeq(g.rev.Item().Key())
		g.it.Seek(globalKey(first))
		if g.it.Valid() && keySeq(g.it.Item().Key()) == first && g.it.Item().UserMeta() == metaGroup {
			g.load(seq)
			if g.ok && g.cur.seq >= seq {
				return
			}
		}
		g.it.Seek(globalKey(seq))
	}
	g.load(seq)
}

// load reads the key the iterator is at and moves to its first entry at
// or after seq.
func (g *globalIter) load(seq uint64) {
	g.ok = g.it.Valid()
	if !g.ok {
		return
	}
	item := g.it.Item()
	g.first = keySeq(item.Key())
	if item.UserMeta() != metaGroup {
		g.grp = nil
		g.cur = gEntry{seq: g.first, item: item, key: item.Key()}
		return
	}
	// A copy of its own: the entries handed out point into it.
	v, err := item.ValueCopy(nil)
	if err == nil && len(v) == 0 {
		err = fmt.Errorf("%w: no entries", ErrGroup)
	}
	g.grp, g.i, g.nextOff = v, -1, 0
	if err != nil {
		g.cur = gEntry{seq: g.first, key: item.KeyCopy(nil), err: err, first: g.first}
		g.grp = nil // the next step goes to the next key
		return
	}
	g.step()
	for g.ok && g.grp != nil && g.cur.seq < seq && g.cur.err == nil {
		g.step()
	}
}

// step moves to the next record of the group, or past it to the next key.
func (g *globalIter) step() {
	if g.nextOff >= len(g.grp) || g.i+1 >= maxEntryGroup {
		g.it.Next()
		g.load(0)
		return
	}
	g.i++
	g.off = g.nextOff
	ptr, leaf, id, next, err := nextRecord(g.grp, g.off)
	g.cur = gEntry{seq: g.first + uint64(g.i), key: g.it.Item().Key(), ptr: ptr, leaf: leaf, id: id, err: err,
		first: g.first, grp: g.grp, off: g.off}
	if err != nil {
		next = len(g.grp) // the rest of the group is lost with this record
	}
	g.nextOff = next
}

// next moves to the next stored entry.
func (g *globalIter) next() {
	if g.grp == nil {
		g.it.Next()
		g.load(0)
		return
	}
	g.step()
}

func (g *globalIter) valid() bool    { return g.ok }
func (g *globalIter) entry() *gEntry { return &g.cur }

// keySeq is the seq a t/g/ key names.
func keySeq(key []byte) uint64 { return binary.BigEndian.Uint64(key[len(prefixGlobal):]) }

// lastStored returns the seq of the last stored entry (0: none).
func lastStored(txn *badger.Txn) (uint64, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixGlobal, Reverse: true})
	defer it.Close()
	it.Seek(append(bytes.Clone(prefixGlobal), 0xff))
	if !it.Valid() {
		return 0, nil
	}
	first := keySeq(it.Item().Key())
	if it.Item().UserMeta() != metaGroup {
		return first, nil
	}
	n, err := groupCount(it.Item())
	if n == 0 {
		return first, err
	}
	return first + uint64(n) - 1, err
}

// groupCount returns how many entries the group item holds (those before
// a malformed record, and its error).
func groupCount(item *badger.Item) (n int, err error) {
	err = item.Value(func(v []byte) error {
		for off := 0; off < len(v) && n < maxEntryGroup; n++ {
			var err error
			if _, _, _, off, err = nextRecord(v, off); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// entryAt returns the stored entry #seq: ok false when it is not stored.
// The item or group it reads is valid until txn ends.
func entryAt(txn *badger.Txn, seq uint64) (e gEntry, ok bool, err error) {
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	g.seek(seq)
	if !g.valid() || g.cur.seq != seq {
		return gEntry{}, false, nil
	}
	e = g.cur
	if e.item != nil {
		// The iterator's item is reused once it moves or closes.
		item, err := txn.Get(globalKey(seq))
		if err != nil {
			return gEntry{}, false, err
		}
		e.item = item
	} else {
		e.key = bytes.Clone(e.key)
	}
	return e, true, nil
}

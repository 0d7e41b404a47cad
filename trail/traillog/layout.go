package traillog

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/transparency-dev/merkle/compact"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

// The trail's key layout has a version, under t/v (absent: layout 1).
//
// Layout 1 (before issue 13) also stored an id index (t/i/<id> -> seq) and
// every Merkle node. Layout 2 derives both from the entries instead: entry
// ids strictly increase along the global trail (a rule of the trail,
// trail.Rules), so an id is found by a binary search over t/g/; and the
// nodes below level minNodeLevel, which cover at most 2^minNodeLevel
// entries, are recomputed from those entries' hashes when a proof or a root
// needs them. That is 5.6 keys fewer per checkpoint (of 18).
//
// Layout 3 (issue 13's twelfth session) keeps the entries of one batch
// under one t/g/ key (global.go) and a workspace's local index positions
// of one batch under one t/w/ key (local.go), instead of a key per entry
// and per position: about five keys fewer per checkpoint at 64 agents.
// Layout 2's keys (one entry, one position) are read as they are, so
// Upgrade only marks a layout-2 trail. Builds of layout 2 refuse a
// layout-3 data dir (ErrLayout) rather than misread its groups.
//
// Layout 4 (issue 13's seventeenth session) writes a workspace's local
// head t/h/w/<ws> once, with its first entry, instead of with every batch
// that gives it one: Open derives the head from the workspace's local
// index and its last entry (localHeads). A head of layout 3 is its
// workspace's last, which layout 4 reads as it is, so Upgrade only marks
// layouts 2 and 3. Builds of layout 3 refuse a layout-4 data dir, whose
// heads they would take for the last and chain new entries onto.
var (
	keyLayout = []byte("t/v")
	// prefixID is layout 1's id index, removed by Upgrade.
	prefixID = []byte("t/i/")
)

// Layout is the key layout this build writes.
const Layout = 4

// minNodeLevel is the lowest level of the Merkle nodes stored under t/m/:
// a node of a level below covers at most 2^minNodeLevel-1 = 15 entries,
// read back when needed (an inclusion proof reads at most 15 entries for
// its low levels).
const minNodeLevel = 4

// ErrLayout is returned for a data dir written with a newer key layout
// than this build knows.
var ErrLayout = errors.New("trail: the data dir's key layout is newer than this build's")

// layoutOf returns the layout version stored in txn (1 when absent).
func layoutOf(txn *badger.Txn) (int, error) {
	item, err := txn.Get(keyLayout)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return 0, err
	}
	if len(v) != 1 || v[0] < '1' || v[0] > '9' {
		return 0, fmt.Errorf("trail: layout version %q is not a version", v)
	}
	return int(v[0] - '0'), nil
}

// UpgradeResult says what Upgrade did.
type UpgradeResult struct {
	From          int // the layout found; 0 for a database without a trail yet
	IDKeys, Nodes int // layout 1's records removed
}

// Upgrade brings the trail of db to this build's layout: from layout 1 it
// removes the id index and the Merkle nodes below minNodeLevel; from
// layout 1, 2 or 3 it then records layout 4. It changes no entry. It is safe
// to interrupt: the version is written last, and until then the records
// of layout 1 are only unused (no reader of a later layout reads them). A
// new database is simply marked. A data dir of a newer layout is refused
// with ErrLayout.
func Upgrade(db *badger.DB) (UpgradeResult, error) {
	var res UpgradeResult
	var keys [][]byte
	err := view(db, "read trail layout", func(txn *badger.Txn) error {
		var err error
		if res.From, err = layoutOf(txn); err != nil || res.From != 1 {
			return err
		}
		if !hasPrefix(txn, prefixGlobal) {
			res.From = 0 // a new database: nothing to upgrade, only to mark
			return nil
		}
		keys, res.IDKeys, res.Nodes = legacyKeys(txn)
		return nil
	})
	switch {
	case err != nil:
		return res, fmt.Errorf("upgrade trail layout: %w", err)
	case res.From > Layout:
		return res, fmt.Errorf("%w: layout %d, this build writes %d", ErrLayout, res.From, Layout)
	case res.From == Layout:
		return res, nil
	}
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return res, fmt.Errorf("upgrade trail layout: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return res, fmt.Errorf("upgrade trail layout: %w", err)
	}
	err = db.Update(func(txn *badger.Txn) error { return txn.Set(keyLayout, []byte{'0' + Layout}) })
	if err != nil {
		return res, fmt.Errorf("upgrade trail layout: %w", err)
	}
	return res, nil
}

// legacyKeys lists layout 1's records: the id index and the Merkle nodes
// below minNodeLevel.
func legacyKeys(txn *badger.Txn) (keys [][]byte, ids, nodes int) {
	prefixes := [][]byte{prefixID}
	for l := range minNodeLevel {
		prefixes = append(prefixes, append(bytes.Clone(prefixNode), byte(l)))
	}
	for i, p := range prefixes {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
			if i == 0 {
				ids++
			} else {
				nodes++
			}
		}
		it.Close()
	}
	return keys, ids, nodes
}

// lowNode computes Merkle node id (below minNodeLevel) from the hashes of
// the entries it covers.
func lowNode(txn *badger.Txn, seg *seglog.Log, id compact.NodeID) ([]byte, error) {
	first := id.Index << id.Level // 0-based leaf index
	n := uint64(1) << id.Level
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	rng := trail.RangeFactory.NewEmptyRange(first)
	g.seek(first + 1)
	for i := range n {
		seq := first + 1 + i
		if !g.valid() || g.entry().seq != seq {
			return nil, fmt.Errorf("merkle node (%d,%d): entry #%d: %w", id.Level, id.Index, seq, badger.ErrKeyNotFound)
		}
		leaf, _, err := g.entry().leafAndID(seg)
		if err != nil {
			return nil, fmt.Errorf("merkle node (%d,%d): entry #%d: %w", id.Level, id.Index, seq, err)
		}
		if err := rng.Append(trail.Hasher{}.HashLeaf(leaf), nil); err != nil {
			return nil, err
		}
		g.next()
	}
	h := rng.Hashes()
	if len(h) != 1 {
		return nil, fmt.Errorf("merkle node (%d,%d): %d hashes for a perfect subtree", id.Level, id.Index, len(h))
	}
	return h[0], nil
}

// leafAndID returns the Merkle leaf data (the entry hash's bytes) and the
// id of the stored entry item: from beside its pointer when it is in the
// segment files, else from its value.
func leafAndID(seg *seglog.Log, item *badger.Item) (leaf []byte, id string, err error) {
	leaf, id, ok, err := entryExtra(item)
	if ok || err != nil {
		return leaf, id, err
	}
	err = seg.Value(item, func(v []byte) error {
		if r, ok := scanStored(v); ok {
			id = string(r.id)
			leaf, err = trail.HashBytes(string(r.entryHash))
			return err
		}
		s, err := decodeStored(v)
		if err != nil {
			return err
		}
		id = s.Entry.ID
		leaf, err = trail.LeafData(s.Entry)
		return err
	})
	return leaf, id, err
}

// seqOf returns the position of entry id in the global trail of txn's
// snapshot, among the first n entries (searchID).
func seqOf(txn *badger.Txn, seg *seglog.Log, id string, n uint64) (uint64, error) {
	seq, at, err := searchID(txn, seg, id, n, false)
	if err != nil {
		return 0, err
	}
	if seq > n || at != id {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return seq, nil
}

// firstAfterID returns the seq of the first of the global trail's n
// entries whose id is greater than id, n+1 when none is (searchID).
func firstAfterID(txn *badger.Txn, seg *seglog.Log, id string, n uint64) (uint64, error) {
	seq, _, err := searchID(txn, seg, id, n, true)
	return seq, err
}

// searchID searches the first n entries of the global trail of txn's
// snapshot by id, with a binary search, as ids strictly increase along
// the trail. It returns the seq of the first entry whose id is at least id
// (with after, greater than id), n+1 when none is, and that entry's id. An
// entry beyond the snapshot (committed after it) counts as greater, with
// the id "".
func searchID(txn *badger.Txn, seg *seglog.Log, id string, n uint64, after bool) (seq uint64, at string, err error) {
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	lo, hi := uint64(1), n
	for lo <= hi {
		mid := lo + (hi-lo)/2
		g.seek(mid)
		got, beyond := "", !g.valid() || g.entry().seq != mid
		if !beyond {
			var err error
			if _, got, err = g.entry().leafAndID(seg); err != nil {
				return 0, "", fmt.Errorf("entry #%d: %w", mid, err)
			}
		}
		if beyond || got > id || !after && got == id {
			hi, at = mid-1, got
		} else {
			lo = mid + 1
		}
	}
	return lo, at, nil
}

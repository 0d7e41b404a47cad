package traillog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/transparency-dev/merkle/compact"
	"github.com/zeebo/blake3"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

// prefixQuarantine holds the entries Repair moved out of the trail:
// t/q/<seq:8 BE><8 bytes of BLAKE3 of the stored value> -> Quarantined.
var prefixQuarantine = []byte("t/q/")

// Quarantined is an entry Repair moved out of the global trail, kept for
// human review (Recovery §3.1).
type Quarantined struct {
	Seq       uint64          `json:"seq"`                  // its place in the global trail
	ID        string          `json:"id,omitempty"`         // when known
	Timestamp string          `json:"timestamp,omitempty"`  // when readable
	EventType trail.EventType `json:"event_type,omitempty"` // when readable
	Workspace string          `json:"workspace,omitempty"`  // when readable
	// Missing is set for an entry the trail's head counted but that was
	// not stored; Value is then empty (and ID unknown).
	Missing bool   `json:"missing,omitempty"`
	Reason  string `json:"reason"`         // why: the violation for the first, "after #N" for the rest (and, for an entry whose segment block is damaged, that its bytes are lost)
	At      string `json:"quarantined_at"` // when
	Value   []byte `json:"value,omitempty"`
}

// Repair makes the stored trail exactly the valid prefix res found: the
// entries after it move to the quarantine (t/q/), and the global and local
// heads, the local indexes and the Merkle nodes are rebuilt from the
// valid entries. It returns the entries it quarantined, in trail order. at
// is the timestamp recorded with them.
//
// Repair is idempotent, and safe to interrupt: it copies before it deletes,
// deletes in trail order, and rebuilds the derived records last, so a later
// Check finds the same valid prefix and Repair finishes the work (a
// quarantined copy is keyed by its content and written once).
func Repair(ctx context.Context, db *badger.DB, seg *seglog.Log, res CheckResult, at string) ([]Quarantined, error) {
	q, err := quarantine(db, seg, res, at)
	if err != nil {
		return nil, fmt.Errorf("repair trail: %w", err)
	}
	if err := rebuild(ctx, db, seg, res.Valid); err != nil {
		return nil, fmt.Errorf("repair trail: %w", err)
	}
	return q, nil
}

// quarantine copies the entries after res.Valid to t/q/ and deletes them.
func quarantine(db *badger.DB, seg *seglog.Log, res CheckResult, at string) ([]Quarantined, error) {
	if res.Last <= res.Valid {
		return nil, nil
	}
	var out []Quarantined
	var gone [][]byte     // keys of entries after the valid prefix only
	var cut *badger.Entry // a group of valid entries and others, cut to the valid ones
	err := view(db, "repair trail", func(txn *badger.Txn) error {
		ids := tailIDs(txn, res.Valid)
		next := res.Valid + 1
		reason := func(seq uint64) string {
			if seq == res.Valid+1 {
				return fmt.Sprintf("%s: %s", res.Violation, res.Detail)
			}
			return fmt.Sprintf("after #%d", res.Valid+1)
		}
		missing := func(upTo uint64) {
			for ; next < upTo; next++ {
				out = append(out, Quarantined{Seq: next, ID: ids[next], Missing: true, Reason: reason(next), At: at})
			}
		}
		g := newGlobalIter(txn, badger.IteratorOptions{PrefetchValues: true})
		defer g.close()
		for g.seek(res.Valid + 1); g.valid(); g.next() {
			ge := g.entry()
			seq := ge.seq
			missing(seq)
			// The keys that hold the entry: removed, or, for a group that
			// also holds valid entries, cut to them.
			switch {
			case ge.item == nil && ge.first <= res.Valid && ge.off > 0:
				if cut == nil {
					cut = &badger.Entry{Key: bytes.Clone(ge.key), Value: bytes.Clone(ge.grp[:ge.off]), UserMeta: metaGroup}
				}
			case ge.item != nil || seq == ge.first:
				gone = append(gone, bytes.Clone(ge.key))
			}
			v, err := ge.valueCopy(seg)
			q := Quarantined{Seq: seq, ID: ids[seq], Reason: reason(seq), At: at, Value: v}
			switch {
			case errors.Is(err, seglog.ErrDamaged) || errors.Is(err, seglog.ErrPointer) || errors.Is(err, ErrGroup):
				// Its bytes are lost with their block (or its record): quarantined
				// without them, its id from beside the pointer when readable.
				q.Value, q.Reason = nil, q.Reason+"; its bytes are unreadable: "+err.Error()
				if _, id, ok, xerr := ge.extra(); ok && xerr == nil && q.ID == "" {
					q.ID = id
				}
				out = append(out, q)
				next = seq + 1
				continue
			case err != nil:
				return err
			}
			if s, err := readStored(v); err == nil {
				q.ID, q.Timestamp, q.EventType, q.Workspace = s.Entry.ID, s.Entry.Timestamp, s.Entry.EventType, s.Entry.Workspace
			}
			out = append(out, q)
			next = seq + 1
		}
		// Entries the heads count past the last stored (a group whose value
		// is lost held them): quarantined as missing, up to what one group
		// can hold (a head may be damaged too).
		last := res.Last
		for seq := range ids {
			if seq < res.Last+maxEntryGroup {
				last = max(last, seq)
			}
		}
		missing(last + 1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	for _, q := range out {
		b, err := json.Marshal(q)
		if err != nil {
			return nil, err
		}
		if err := wb.Set(quarantineKey(q), b); err != nil {
			return nil, err
		}
	}
	if err := wb.Flush(); err != nil {
		return nil, fmt.Errorf("quarantine: %w", err)
	}
	del := db.NewWriteBatch()
	defer del.Cancel()
	if cut != nil {
		if err := del.SetEntry(cut); err != nil {
			return nil, err
		}
	}
	for _, k := range gone {
		if err := del.Delete(k); err != nil {
			return nil, err
		}
	}
	if err := del.Flush(); err != nil {
		return nil, fmt.Errorf("remove quarantined entries: %w", err)
	}
	return out, nil
}

// tailIDs returns the ids the heads know of entries after valid: the
// global head names the last entry, and each workspace's head its last
// one (at the global position its local index gives). An entry that is
// missing or undecodable keeps its id in the quarantine that way.
func tailIDs(txn *badger.Txn, valid uint64) map[uint64]string {
	ids := map[uint64]string{}
	var h trail.Head
	if getJSON(txn, keyHead, &h) == nil && h.Seq > valid {
		ids[h.Seq] = h.ID
	}
	it := newLocalsReverse(txn)
	defer it.Close()
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	_ = storedHeads(txn, func(ws string, lh trail.Head, err error) error {
		if err == nil && lh.Seq > 0 {
			if seq, err := localSeqIn(it, ws, lh.Seq); err == nil && seq > valid {
				ids[seq] = lh.ID
			}
		}
		// Since layout 4 the stored head is usually behind: the last
		// position's id is the one its entry's record holds beside its
		// pointer.
		if _, seq, err := lastLocalIn(it, ws); err == nil && seq > valid && ids[seq] == "" {
			if id, ok := recordID(g, seq); ok {
				ids[seq] = id
			}
		}
		return nil
	})
	return ids
}

// recordID returns the id kept beside entry #seq's pointer, when it is
// stored and its record can be read, with g, a walk of the global trail.
func recordID(g *globalIter, seq uint64) (string, bool) {
	g.seek(seq)
	if !g.valid() || g.entry().seq != seq {
		return "", false
	}
	_, id, ok, err := g.entry().extra()
	return id, ok && err == nil && id != ""
}

func quarantineKey(q Quarantined) []byte {
	content := q.Value
	if q.Missing {
		content = []byte("missing " + q.ID)
	}
	sum := blake3.Sum256(content)
	k := binary.BigEndian.AppendUint64(bytes.Clone(prefixQuarantine), q.Seq)
	return append(k, sum[:8]...)
}

// rebuild deletes every record derived from the entries and writes them
// again from entries #1 … #valid.
func rebuild(ctx context.Context, db *badger.DB, seg *seglog.Log, valid uint64) error {
	del := db.NewWriteBatch()
	defer del.Cancel()
	err := view(db, "repair trail", func(txn *badger.Txn) error {
		for _, p := range [][]byte{prefixID, prefixLocal, []byte("t/h/"), prefixNode} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
			for it.Rewind(); it.Valid(); it.Next() {
				if err := del.Delete(it.Item().KeyCopy(nil)); err != nil {
					it.Close()
					return err
				}
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := del.Flush(); err != nil {
		return fmt.Errorf("remove derived records: %w", err)
	}

	wb := db.NewWriteBatch()
	defer wb.Cancel()
	var global trail.Head
	local := map[string]trail.Head{}
	groups := localGroups{}
	rng := trail.RangeFactory.NewEmptyRange(0)
	var werr error
	err = view(db, "repair trail", func(txn *badger.Txn) error {
		g := newGlobalIter(txn, badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256})
		defer g.close()
		var fix groupFix
		for g.seek(1); g.valid(); g.next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			ge := g.entry()
			seq := ge.seq
			if seq > valid {
				break
			}
			var s stored
			if err := ge.value(seg, func(v []byte) (err error) { s, err = readStored(v); return err }); err != nil {
				return fmt.Errorf("entry #%d: %w", seq, err)
			}
			e := s.Entry
			if e.Workspace != "" {
				lh := local[e.Workspace]
				lh = trail.Head{Seq: lh.Seq + 1, Hash: e.Integrity.LocalHash, ID: e.ID, Timestamp: e.Timestamp}
				local[e.Workspace] = lh
				if err := groups.add(wb, e.Workspace, lh.Seq, seq); err != nil {
					return err
				}
			}
			leaf, err := trail.LeafData(e)
			if err != nil {
				return fmt.Errorf("entry #%d: %w", seq, err)
			}
			if ge.item != nil {
				if err := fixExtra(wb, ge.item, leaf, e.ID); err != nil {
					return fmt.Errorf("entry #%d: %w", seq, err)
				}
			} else if err := fix.add(wb, ge, leaf, e.ID); err != nil {
				return fmt.Errorf("entry #%d: %w", seq, err)
			}
			if err := rng.Append(trail.Hasher{}.HashLeaf(leaf), func(id compact.NodeID, h []byte) {
				if werr == nil && id.Level >= minNodeLevel {
					werr = wb.Set(nodeKey(id), bytes.Clone(h))
				}
			}); err != nil {
				return err
			}
			global = trail.Head{Seq: seq, Hash: e.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
		}
		if err := fix.flush(wb); err != nil {
			return err
		}
		return werr
	})
	if err != nil {
		return err
	}
	if global.Seq > 0 {
		if err := setJSONBatch(wb, keyHead, global); err != nil {
			return err
		}
	}
	for ws, h := range local {
		if err := setJSONBatch(wb, append(bytes.Clone(prefixHeadWS), ws...), h); err != nil {
			return err
		}
	}
	if err := groups.write(wb); err != nil {
		return err
	}
	// The records are now those of this build's layout (layout 1's id
	// index and low nodes were deleted above).
	if err := wb.Set(keyLayout, []byte{'0' + Layout}); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("rebuild derived records: %w", err)
	}
	return nil
}

// groupFix writes a group of entries again, during rebuild, when the
// hash or id of one of its records is not its entry's (fixExtra for a
// key of its own): dirty once one is not.
type groupFix struct{ pendingGroup }

// add takes the next entry of the walk, ge, whose hash is leaf and id id.
func (f *groupFix) add(wb *badger.WriteBatch, ge *gEntry, leaf []byte, id string) error {
	if f.n == 0 || f.first != ge.first {
		if err := f.flush(wb); err != nil {
			return err
		}
		f.pendingGroup = pendingGroup{first: ge.first}
	}
	if len(id) == 0 || len(id) > 255 {
		return fmt.Errorf("%w: an id of %d bytes", ErrGroup, len(id))
	}
	changed := f.dirty || !bytes.Equal(ge.leaf, leaf) || string(ge.id) != id
	f.pendingGroup.add(appendRecord(f.b, ge.ptr, leaf, id))
	f.dirty = changed
	return nil
}

// flush writes the group walked last if one of its records changed.
func (f *groupFix) flush(wb *badger.WriteBatch) error {
	return f.set(wb, globalKey(f.first), metaGroup)
}

// fixExtra writes again the entry hash and id beside the pointer of a
// stored entry (item, in the segment files) when they are not the entry's.
func fixExtra(wb *badger.WriteBatch, item *badger.Item, leaf []byte, id string) error {
	hash, got, ok, err := entryExtra(item)
	if !ok || err == nil && bytes.Equal(hash, leaf) && got == id {
		return nil
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return err
	}
	if len(v) < seglog.PtrSize {
		return &DamageError{Op: fmt.Sprintf("entry key %q", item.Key()), Err: seglog.ErrPointer}
	}
	v = append(append(v[:seglog.PtrSize:seglog.PtrSize], leaf...), id...)
	return wb.SetEntry(badger.NewEntry(item.KeyCopy(nil), v).WithMeta(seglog.Meta))
}

func setJSONBatch(wb *badger.WriteBatch, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return wb.Set(key, b)
}

// ReadQuarantine returns the quarantined entries of db, by trail position.
func ReadQuarantine(db *badger.DB) ([]Quarantined, error) {
	var out []Quarantined
	err := view(db, "repair trail", func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixQuarantine, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var q Quarantined
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &q) }); err != nil {
				return err
			}
			out = append(out, q)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read quarantine: %w", err)
	}
	return out, nil
}

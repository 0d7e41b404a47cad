package traillog

import (
	"bytes"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

// keyChecked holds the mark of the last check: the chains' state after the
// entries it passed, so that the next Check reads only what came after.
var keyChecked = []byte("t/c")

// checkMark is the value under t/c.
type checkMark struct {
	Global   trail.Head            `json:"global"`
	Local    map[string]trail.Head `json:"local"`
	Terminal []string              `json:"terminal,omitempty"`
	Range    [][]byte              `json:"range"` // the compact Merkle range [0, Global.Seq)
}

// MarkChecked records that entries #1 … #res.Valid passed res's check, so
// that the next Check (without Full) starts after them. Call it only when
// the stored trail is exactly that prefix: after a Check that was OK, or
// after Repair of its result.
//
// Starting after the mark is sound for what the check at start is for: a
// crash loses whole Badger transactions and never changes a committed
// entry, so every entry is read back and checked once, at the first start
// after it was written. Damage to older entries at rest (a failing disk, an
// edit) is found by a full check (CheckOptions.Full), by Log.Verify and by
// an auditor against the signed tree heads, not by every start.
func MarkChecked(db *badger.DB, res CheckResult) error {
	if res.rng == nil || res.Valid != res.global.Seq || res.Valid == 0 {
		return nil // nothing worth marking
	}
	m := checkMark{Global: res.global, Local: res.local, Range: res.rng.Hashes()}
	for ws := range res.terminal {
		m.Terminal = append(m.Terminal, ws)
	}
	err := db.Update(func(txn *badger.Txn) error { return setJSON(txn, keyChecked, m) })
	if err != nil {
		return fmt.Errorf("mark trail checked: %w", err)
	}
	return nil
}

// Unmark removes the mark, so that the next Check reads every entry.
func Unmark(db *badger.DB) error {
	err := db.Update(func(txn *badger.Txn) error { return txn.Delete(keyChecked) })
	if err != nil {
		return fmt.Errorf("unmark trail: %w", err)
	}
	return nil
}

// resume starts the check after the mark, when there is one that still
// describes the stored trail: entry #size is stored and is the entry the
// mark names. A signed tree head older than the mark (a daemon that marked
// its trail while running, then stopped without a last tree head) is
// covered by the root of the marked prefix's stored Merkle nodes at its
// size: the check that left the mark compared every one of them with the
// entries. Otherwise, or if that root is not the signed one, the check
// starts at entry #1.
func (c *checker) resume(txn *badger.Txn) {
	var m checkMark
	if err := getJSON(txn, keyChecked, &m); err != nil || m.Global.Seq == 0 {
		return
	}
	signedInside := c.opts.SignedSize > 0 && c.opts.SignedSize < m.Global.Seq
	if signedInside && !signedRootStored(txn, c.opts.Seg, c.opts.SignedSize, c.opts.SignedRoot) {
		return
	}
	var s stored
	e, ok, err := entryAt(txn, m.Global.Seq)
	if err != nil || !ok {
		return
	}
	if e.value(c.opts.Seg, func(v []byte) (err error) { s, err = readStored(v); return err }) != nil ||
		s.Entry.ID != m.Global.ID || trail.HashCanonical(s.Entry) != m.Global.Hash || s.Entry.Integrity.EntryHash != m.Global.Hash {
		return
	}
	rng, err := trail.RangeFactory.NewRange(0, m.Global.Seq, m.Range)
	if err != nil {
		return
	}
	if m.Local == nil {
		m.Local = map[string]trail.Head{}
	}
	c.r.Prev, c.r.Range, c.r.Local = m.Global, rng, m.Local
	c.res.From, c.res.Valid = m.Global.Seq, m.Global.Seq
	for _, ws := range m.Terminal {
		c.r.Terminal[ws] = true
	}
	if signedInside {
		c.r.SignedCovered = true
	}
	if c.opts.SignedSize == m.Global.Seq {
		root, err := rng.GetRootHash(nil)
		if err == nil && string(root) == string(c.opts.SignedRoot) {
			c.r.SignedCovered = true
		} else {
			*c = *newChecker(c.ctx, c.opts) // the trail.Head disagrees with the mark: read everything
		}
	}
}

// signedRootStored reports whether the stored Merkle nodes of the first
// size entries hash to root.
func signedRootStored(txn *badger.Txn, seg *seglog.Log, size uint64, root []byte) bool {
	rng, err := storedRange(txn, seg, size)
	if err != nil {
		return false
	}
	got, err := rng.GetRootHash(nil)
	return err == nil && bytes.Equal(got, root)
}

package traillog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail"
)

// fastAndRef runs the accelerated and the reference check of the global
// trail: fastOK reports whether the fast path passed the trail and the
// checks after it found nothing, ref is the reference walk's verdict.
func fastAndRef(t *testing.T, db *badger.DB) (fastOK bool, ref trail.VerifyResult) {
	t.Helper()
	fastOK, _ = fastCheck(t, db, CheckOptions{Full: true})
	res, err := Check(context.Background(), db, CheckOptions{Full: true, reference: true})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return fastOK, res.Verdict()
}

// fastCheck runs Check's fast path alone (from the mark without
// opts.Full), then the checks that follow it.
func fastCheck(t *testing.T, db *badger.DB, opts CheckOptions) (bool, *checker) {
	t.Helper()
	var c *checker
	ok := false
	err := db.View(func(txn *badger.Txn) error {
		c = newChecker(context.Background(), opts)
		if !opts.Full {
			if c.resume(txn); c.r.Prev.Seq == 0 {
				t.Fatal("no mark to start from")
			}
		}
		var err error
		if ok, err = c.fast(txn); err != nil || !ok {
			return err
		}
		c.end(txn)
		if err := c.derived(txn); err != nil {
			return err
		}
		ok = c.res.OK()
		return nil
	})
	if err != nil {
		t.Fatalf("fast check: %v", err)
	}
	return ok, c
}

// awkwardTrail appends interleaved workspace and system entries and a few
// whose bodies hold escapes, HTML characters and non-ASCII text.
func awkwardTrail(t *testing.T, tl *testLog) {
	t.Helper()
	tl.interleaved(60, "ws1", "ws2")
	for _, s := range []string{"line\nbreak", "<b>&amp;</b>", "é✓😀", "quote\"d", "\u2028"} {
		ev := tl.ev("ws1", "worker", trail.EventCheckpointCreated)
		ev.Body.(map[string]any)["type"] = s
		tl.append(ev)
	}
	tl.interleaved(20, "ws3", "ws1")
}

// TestVerifyFastPathTakesWellFormedTrails: the accelerated check accepts
// what the daemon writes, awkward bodies included, so the reference only
// runs when something is wrong, and counts what verifyGlobal reports.
func TestVerifyFastPathTakesWellFormedTrails(t *testing.T) {
	tl := newMemLog(t)
	awkwardTrail(t, tl)
	fastOK, ref := fastAndRef(t, tl.db)
	if !fastOK || ref.Violation != "" {
		t.Fatalf("fast = %v, reference = %+v; want both ok", fastOK, ref)
	}
	_, c := fastCheck(t, tl.db, CheckOptions{Full: true})
	if n := c.res.Valid; n != tl.log.global.Seq || len(c.fastLocals) != 3 {
		t.Errorf("fast path counted %d entries in %d workspaces, want %d in 3", n, len(c.fastLocals), tl.log.global.Seq)
	}
	for ws, ch := range c.fastLocals {
		if seqs := ch.seqs; !slices.IsSorted(seqs) || uint64(len(seqs)) != tl.log.local[ws].Seq {
			t.Errorf("workspace %s: sequence numbers %v, want %d in order", ws, seqs, tl.log.local[ws].Seq)
		}
		if c.r.Local[ws] != tl.log.local[ws] {
			t.Errorf("workspace %s: fast path trail.Head %+v, the log's %+v", ws, c.r.Local[ws], tl.log.local[ws])
		}
	}
	if c.r.Prev != tl.log.global {
		t.Errorf("fast path global trail.Head %+v, the log's %+v", c.r.Prev, tl.log.global)
	}
}

// TestVerifyFastPathCatchesMissingEntries deletes one entry at a time, the
// first and the last included: the fast path must refuse each trail, as
// the reference does.
func TestVerifyFastPathCatchesMissingEntries(t *testing.T) {
	tl := newMemLog(t)
	awkwardTrail(t, tl)
	for seq := uint64(1); seq <= tl.log.global.Seq; seq++ {
		orig := rawGet(t, tl.db, globalKey(seq))
		rawDelete(t, tl.db, globalKey(seq))
		if fastOK, ref := fastAndRef(t, tl.db); fastOK || ref.Violation == "" {
			t.Errorf("entry #%d deleted: fast = %v, reference = %+v; want both to fail", seq, fastOK, ref)
		}
		rawSet(t, tl.db, globalKey(seq), orig)
	}
}

// TestVerifyFastPathNeverPassesWhatTheReferenceFails changes one byte of
// one stored entry at a time, hundreds of times, and checks that the
// accelerated check never accepts a trail the reference rejects.
func TestVerifyFastPathNeverPassesWhatTheReferenceFails(t *testing.T) {
	tl := newMemLog(t)
	awkwardTrail(t, tl)
	n := tl.log.global.Seq
	rng := rand.New(rand.NewPCG(1, 2))
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	caught := 0
	for range rounds {
		seq := 1 + rng.Uint64N(n)
		orig := rawGet(t, tl.db, globalKey(seq))
		mut := append([]byte(nil), orig...)
		i := rng.IntN(len(mut))
		mut[i] ^= byte(1 + rng.IntN(255))
		rawSet(t, tl.db, globalKey(seq), mut)
		fastOK, ref := fastAndRef(t, tl.db)
		if fastOK && ref.Violation != "" {
			t.Fatalf("entry #%d byte %d changed (%q -> %q): fast path ok, reference %+v", seq, i, orig[i], mut[i], ref)
		}
		if !fastOK {
			caught++
		}
		rawSet(t, tl.db, globalKey(seq), orig)
	}
	if caught == 0 {
		t.Fatalf("no change of %d was caught", rounds)
	}
	if fastOK, ref := fastAndRef(t, tl.db); !fastOK || ref.Violation != "" {
		t.Fatalf("after restoring: fast = %v, reference = %+v", fastOK, ref)
	}
}

// forge returns stored entry v with its actor changed and both its hashes
// recomputed: an entry that checks on its own, so only the links to it
// (the next entry's prev_hash, the next local prev_hash, the trail.Head) can
// give it away.
func forge(t *testing.T, v []byte) (forged []byte, id string) {
	t.Helper()
	s, err := decodeStored(v)
	if err != nil {
		t.Fatal(err)
	}
	e := s.Entry
	e.Actor += "x"
	e.Integrity.EntryHash, e.Integrity.LocalHash = "", ""
	if e.Workspace != "" {
		global := e.PrevHash
		e.PrevHash = s.LocalPrev
		e.Integrity.LocalHash = trail.HashCanonical(e)
		e.PrevHash = global
	}
	e.Integrity.EntryHash = trail.HashCanonical(e)
	return appendStored(nil, stored{Entry: e, LocalPrev: s.LocalPrev}), e.ID
}

// TestVerifyFastPathCatchesForgedEntries replaces one entry at a time with
// a forgery that hashes correctly: the fast path must refuse each trail, and the reference must find the broken link
// after the forgery, not the forgery's own hash.
func TestVerifyFastPathCatchesForgedEntries(t *testing.T) {
	tl := newMemLog(t)
	awkwardTrail(t, tl)
	last := tl.log.global.Seq
	for seq := uint64(1); seq <= last; seq++ {
		orig := rawGet(t, tl.db, globalKey(seq))
		forged, id := forge(t, orig)
		rawSet(t, tl.db, globalKey(seq), forged)
		fastOK, ref := fastAndRef(t, tl.db)
		if fastOK || ref.Violation == "" {
			t.Errorf("entry #%d forged: fast = %v, reference = %+v; want both to fail", seq, fastOK, ref)
		}
		if seq < last && ref.FirstBad == id {
			t.Errorf("entry #%d forged: the reference found the forgery itself (%+v), so it does not hash correctly", seq, ref)
		}
		rawSet(t, tl.db, globalKey(seq), orig)
	}
}

// rechain rewrites the trail from entry from on: change alters entry from,
// then every entry from there is sealed again (local hashes, the links of
// its workspace's later entries, entry hashes, global links) and the trail.Head
// follows, so that the trail is consistent except for what change broke.
// It returns the old values, for restore.
func rechain(t *testing.T, db *badger.DB, from uint64, change func(*stored)) map[string][]byte {
	t.Helper()
	old := map[string][]byte{}
	err := db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(keyHead)
		if err != nil {
			return err
		}
		if old[string(keyHead)], err = item.ValueCopy(nil); err != nil {
			return err
		}
		var prevHash string
		if from > 1 {
			item, err := txn.Get(globalKey(from - 1))
			if err != nil {
				return err
			}
			v, _ := item.ValueCopy(nil)
			s, err := decodeStored(v)
			if err != nil {
				return err
			}
			prevHash = s.Entry.Integrity.EntryHash
		}
		newLocal := map[string]string{}
		var h trail.Head
		for seq := from; ; seq++ {
			item, err := txn.Get(globalKey(seq))
			if errors.Is(err, badger.ErrKeyNotFound) {
				break
			}
			if err != nil {
				return err
			}
			v, _ := item.ValueCopy(nil)
			old[string(globalKey(seq))] = v
			s, err := decodeStored(v)
			if err != nil {
				return err
			}
			if seq == from {
				change(&s)
			} else if nl, ok := newLocal[s.Entry.Workspace]; ok {
				s.LocalPrev = nl
			}
			e := s.Entry
			e.Integrity.EntryHash, e.Integrity.LocalHash = "", ""
			if e.Workspace != "" {
				e.PrevHash = s.LocalPrev
				e.Integrity.LocalHash = trail.HashCanonical(e)
				newLocal[e.Workspace] = e.Integrity.LocalHash
			}
			e.PrevHash = prevHash
			e.Integrity.EntryHash = trail.HashCanonical(e)
			prevHash = e.Integrity.EntryHash
			s.Entry = e
			if err := txn.Set(globalKey(seq), appendStored(nil, s)); err != nil {
				return err
			}
			h = trail.Head{Seq: seq, Hash: e.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
		}
		return txn.Set(keyHead, appendHead(nil, h))
	})
	if err != nil {
		t.Fatal(err)
	}
	return old
}

// TestVerifyFastPathCatchesBrokenLocalLinks points one workspace entry at
// a time at a wrong local predecessor and seals the whole trail after it
// again, so that the broken local link is the only finding: the fast path
// must refuse each trail.
func TestVerifyFastPathCatchesBrokenLocalLinks(t *testing.T) {
	tl := newMemLog(t)
	awkwardTrail(t, tl)
	broken := 0
	for seq := uint64(2); seq <= tl.log.global.Seq; seq++ {
		var ws bool
		old := rechain(t, tl.db, seq, func(s *stored) {
			if ws = s.Entry.Workspace != ""; ws {
				// The global predecessor's hash: well formed, and wrong.
				s.LocalPrev = s.Entry.PrevHash
			}
		})
		if ws {
			broken++
			fastOK, ref := fastAndRef(t, tl.db)
			if fastOK || ref.Violation == "" {
				t.Errorf("entry #%d's local link broken: fast = %v, reference = %+v; want both to fail", seq, fastOK, ref)
			}
		}
		for k, v := range old {
			rawSet(t, tl.db, []byte(k), v)
		}
	}
	if broken == 0 {
		t.Fatal("no workspace entry to break")
	}
	if fastOK, ref := fastAndRef(t, tl.db); !fastOK || ref.Violation != "" {
		t.Fatalf("after restoring: fast = %v, reference = %+v", fastOK, ref)
	}
}

// TestVerifyCatchesBrokenLocalIndex changes a workspace's local index
// (t/w/<ws>/<n>, which the local trail is read through; a key holds the
// positions of one batch): one position pointing at another entry, the
// last position missing, one position too many (a key after the last, or
// the last key one position longer), a key within another's positions.
// Verify must report each as a broken chain of that workspace. The changed
// position is 47, whose key, when a key starts there, ends in the byte '/'.
func TestVerifyCatchesBrokenLocalIndex(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(150, "ws1", "ws2")
	n := tl.log.local["ws1"].Seq
	if n < 47 {
		t.Fatalf("ws1 has %d entries, want 47 or more", n)
	}
	lastKey, lastFirst, lastVal := rawLocalGroup(t, tl.db, "ws1", n)
	if lastFirst == n {
		t.Fatalf("ws1's last key holds one position; the test wants more")
	}
	tests := []struct {
		name   string
		change func() (restore func())
		want   string
	}{
		{"position 47 points elsewhere", func() func() {
			return rawSetLocalPos(t, tl.db, "ws1", 47, rawLocalPos(t, tl.db, "ws1", 46))
		}, "position 47 is"},
		{"last position missing", func() func() {
			rawSet(t, tl.db, lastKey, lastVal[:len(lastVal)-8])
			return func() { rawSet(t, tl.db, lastKey, lastVal) }
		}, fmt.Sprintf("lacks position %d", n)},
		{"a key after the last position", func() func() {
			rawSet(t, tl.db, localKey("ws1", n+1), u64(rawLocalPos(t, tl.db, "ws1", n)))
			return func() { rawDelete(t, tl.db, localKey("ws1", n+1)) }
		}, fmt.Sprintf("goes beyond its %d entries", n)},
		{"the last key one position longer", func() func() {
			rawSet(t, tl.db, lastKey, append(bytes.Clone(lastVal), lastVal[len(lastVal)-8:]...))
			return func() { rawSet(t, tl.db, lastKey, lastVal) }
		}, fmt.Sprintf("goes beyond its %d entries", n)},
		{"a key within another's positions", func() func() {
			rawSet(t, tl.db, localKey("ws1", n), u64(rawLocalPos(t, tl.db, "ws1", n)))
			return func() { rawDelete(t, tl.db, localKey("ws1", n)) }
		}, fmt.Sprintf("a key at position %d, within the key at %d", n, lastFirst)},
	}
	for _, tt := range tests {
		restore := tt.change()
		res, err := tl.log.Verify(context.Background(), "")
		if err != nil || res.OK || res.Violation != trail.ViolationChainBroken || res.FirstBad != "ws1" || !strings.Contains(res.Detail, tt.want) {
			t.Errorf("%s: Verify = %+v, %v; want chain_broken at ws1: %q", tt.name, res, err, tt.want)
		}
		restore()
		tl.verifyOK("")
	}
}

// fromMark runs a check from the mark, on the fast path alone (then the
// checks that follow it) and, apart, the reference walk: it returns whether
// the fast path passed the trail and the reference's verdict.
func fromMark(t *testing.T, db *badger.DB) (fastOK bool, ref CheckResult) {
	t.Helper()
	fastOK, _ = fastCheck(t, db, CheckOptions{})
	ref, err := Check(context.Background(), db, CheckOptions{reference: true})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if ref.From == 0 {
		t.Fatalf("the reference check did not start from the mark: %+v", ref)
	}
	return fastOK, ref
}

// TestVerifyFastPathFromTheMark: from a mark (the running check, a start),
// the accelerated check carries the chains across it as the reference
// walk does: it passes the trail the daemon wrote after the mark, never
// passes one the reference fails (a byte changed in an entry or a local
// index position after the mark), and Check's verdict is the reference's.
func TestVerifyFastPathFromTheMark(t *testing.T) {
	tl := newMemLog(t)
	awkwardTrail(t, tl)
	if err := MarkChecked(tl.db, tl.check(0)); err != nil {
		t.Fatal(err)
	}
	from := tl.log.global.Seq
	awkwardTrail(t, tl)
	tl.interleaved(10, "ws4")
	n := tl.log.global.Seq
	if ok, ref := fromMark(t, tl.db); !ok || !ref.OK() || ref.Examined != n-from {
		t.Fatalf("a sound trail from the mark: fast %v, reference %+v", ok, ref)
	}
	_, c := fastCheck(t, tl.db, CheckOptions{})
	for ws, h := range tl.log.local {
		if c.r.Local[ws] != h {
			t.Errorf("workspace %s: fast path head %+v, the log's %+v", ws, c.r.Local[ws], h)
		}
	}
	if c.r.Prev != tl.log.global {
		t.Errorf("fast path global head %+v, the log's %+v", c.r.Prev, tl.log.global)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	rounds := 300
	if testing.Short() {
		rounds = 80
	}
	caught := 0
	for round := range rounds {
		seq := from + 1 + rng.Uint64N(n-from)
		key := globalKey(seq)
		if round%4 == 3 { // a local index position instead
			s, err := decodeStored(rawGet(t, tl.db, key))
			if err != nil || s.Entry.Workspace == "" {
				continue
			}
			key, _, _ = rawLocalGroup(t, tl.db, s.Entry.Workspace, 1+rng.Uint64N(tl.log.local[s.Entry.Workspace].Seq))
		}
		orig := rawGet(t, tl.db, key)
		mut := bytes.Clone(orig)
		i := rng.IntN(len(mut))
		mut[i] ^= byte(1 + rng.IntN(255))
		rawSet(t, tl.db, key, mut)
		fastOK, ref := fromMark(t, tl.db)
		if fastOK && !ref.OK() {
			t.Fatalf("%q byte %d changed: fast path ok, reference %+v", key, i, ref)
		}
		if !fastOK {
			caught++
		}
		got, err := Check(context.Background(), tl.db, CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Verdict() != ref.Verdict() || got.Valid != ref.Valid {
			t.Fatalf("%q byte %d changed: Check %+v, the reference %+v", key, i, got, ref)
		}
		rawSet(t, tl.db, key, orig)
	}
	if caught == 0 {
		t.Fatalf("no change of %d was caught", rounds)
	}
}

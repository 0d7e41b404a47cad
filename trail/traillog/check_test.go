package traillog

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/transparency-dev/merkle/compact"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/internal/trailtest"
	"github.com/wacpd/wacpd/trail"
)

// set and del change the stored trail behind the Log's back, as a damaged
// disk or a tamperer would.
func (tl *testLog) set(key, val []byte) {
	tl.t.Helper()
	rawSet(tl.t, tl.db, key, val)
}

func (tl *testLog) del(key []byte) {
	tl.t.Helper()
	err := tl.db.Update(func(txn *badger.Txn) error {
		if seq, ok := entrySeq(key); ok {
			return trailtest.DeleteEntry(txn, seq) // wherever it is stored
		}
		return txn.Delete(key)
	})
	if err != nil {
		tl.t.Fatal(err)
	}
}

func (tl *testLog) get(key []byte) []byte {
	tl.t.Helper()
	return rawGet(tl.t, tl.db, key)
}

// flip flips one byte of entry #seq's stored value, inside its body.
func (tl *testLog) flip(seq uint64) {
	tl.t.Helper()
	v := tl.get(globalKey(seq))
	i := bytes.Index(v, []byte(`"v-`))
	if i < 0 {
		tl.t.Fatalf("entry #%d has no body string to flip: %s", seq, v)
	}
	v[i+1] ^= 0x01 // "v-…" becomes "w-…": still JSON, another body
	tl.set(globalKey(seq), v)
}

func (tl *testLog) check(signed uint64) CheckResult {
	tl.t.Helper()
	var root []byte
	if signed > 0 {
		var err error
		if root, err = tl.log.Root(signed); err != nil {
			tl.t.Fatal(err)
		}
	}
	res, err := Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, SignedSize: signed, SignedRoot: root, Full: true})
	if err != nil {
		tl.t.Fatalf("Check: %v", err)
	}
	return res
}

// TestCheck_IntactTrailPasses: a trail written through Batch passes every
// check, with and without a signed head.
func TestCheck_IntactTrailPasses(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(40, "w1", "w2", "w3")
	for _, signed := range []uint64{0, 1, 17, 40} {
		res := tl.check(signed)
		if !res.OK() || res.Valid != 40 || res.Examined != 40 || !res.SignedCovered {
			t.Errorf("Check(signed %d) = %+v, want OK with 40 valid entries", signed, res)
		}
	}
}

// TestCheck_FindsValidPrefix: each kind of damage to an entry ends the valid
// prefix just before it, with the violation named.
func TestCheck_FindsValidPrefix(t *testing.T) {
	tests := []struct {
		name      string
		damage    func(tl *testLog)
		valid     uint64
		last      uint64
		violation trail.Violation
	}{
		{"flipped byte in the last entry", func(tl *testLog) { tl.flip(30) }, 29, 30, trail.ViolationHashMismatch},
		{"flipped byte in entry 12", func(tl *testLog) { tl.flip(12) }, 11, 30, trail.ViolationHashMismatch},
		{"flipped byte in entry 1", func(tl *testLog) { tl.flip(1) }, 0, 30, trail.ViolationHashMismatch},
		{"undecodable entry", func(tl *testLog) { tl.set(globalKey(20), []byte("{not json")) }, 19, 30, trail.ViolationHashMismatch},
		{"last entry deleted", func(tl *testLog) { tl.del(globalKey(30)) }, 29, 30, trail.ViolationChainBroken},
		{"entry 25 deleted", func(tl *testLog) { tl.del(globalKey(25)) }, 24, 30, trail.ViolationChainBroken},
		{"entries swapped", func(tl *testLog) {
			a, b := tl.get(globalKey(21)), tl.get(globalKey(22))
			tl.set(globalKey(21), b)
			tl.set(globalKey(22), a)
		}, 20, 30, trail.ViolationChainBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newMemLog(t)
			tl.interleaved(30, "w1", "w2")
			tt.damage(tl)
			res := tl.check(0)
			if res.OK() || res.Valid != tt.valid || res.Last != tt.last || res.Violation != tt.violation {
				t.Fatalf("Check = valid %d, last %d, %s (%s), want valid %d, last %d, %s",
					res.Valid, res.Last, res.Violation, res.Detail, tt.valid, tt.last, tt.violation)
			}
			if !strings.HasPrefix(res.FirstBad, "#") {
				t.Errorf("FirstBad = %q, want #N", res.FirstBad)
			}
		})
	}
}

// TestCheck_PerWorkspaceTimestampsStrictlyIncrease (Recovery §3.1, check 2):
// the global chain allows equal timestamps, a workspace's trail does not.
func TestCheck_PerWorkspaceTimestampsStrictlyIncrease(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(8, "w1")
	a := tl.wsEv("w1")
	b := tl.wsEv("w1")
	b.Timestamp = a.Timestamp // the same instant; ids still increase
	tl.append(a, b)
	res := tl.check(0)
	if res.Valid != 9 || res.Violation != trail.ViolationNotMonotonic {
		t.Fatalf("Check = valid %d, %s (%s), want valid 9, %s", res.Valid, res.Violation, res.Detail, trail.ViolationNotMonotonic)
	}
	// The daemon's verification applies the same rules (issue 11 §4).
	for _, ws := range []string{"", "w1"} {
		if v, err := tl.log.Verify(context.Background(), ws); err != nil || v.OK || v.Violation != trail.ViolationNotMonotonic {
			t.Errorf("Verify(%q) = %+v, %v; want %s", ws, v, err, trail.ViolationNotMonotonic)
		}
	}
}

// TestCheck_NothingAfterTerminalState (Recovery §3.1, check 3): a local
// entry after the workspace's transition to closed or failed is flagged.
func TestCheck_NothingAfterTerminalState(t *testing.T) {
	for _, state := range []string{"closed", "failed"} {
		t.Run(state, func(t *testing.T) {
			tl := newMemLog(t)
			tl.interleaved(6, "w1", "w2")
			end := tl.wsEv("w1")
			end.Body = map[string]any{"workspace_id": "w1", "from_state": "active", "to_state": state,
				"trigger": "t", "initiator": "system"}
			tl.append(end, tl.wsEv("w2"), tl.sysEv()) // others go on
			if res := tl.check(0); !res.OK() {
				t.Fatalf("Check before the late entry = %+v, want OK", res)
			}
			tl.append(tl.wsEv("w1"))
			res := tl.check(0)
			if res.Valid != 9 || res.Violation != trail.ViolationAfterTerminal {
				t.Fatalf("Check = valid %d, %s (%s), want valid 9, %s", res.Valid, res.Violation, res.Detail, trail.ViolationAfterTerminal)
			}
			// The daemon's verification applies the same rules (issue 11 §4).
			for _, ws := range []string{"", "w1"} {
				if v, err := tl.log.Verify(context.Background(), ws); err != nil || v.OK || v.Violation != trail.ViolationAfterTerminal {
					t.Errorf("Verify(%q) = %+v, %v; want %s", ws, v, err, trail.ViolationAfterTerminal)
				}
			}
		})
	}
}

// TestCheck_SignedRootMustMatch: a trail whose chains verify but whose
// first N entries do not hash to the signed root (a consistent rewrite, or
// a wrong trail.Head) fails at the signed size; one shorter than the signed size
// does not cover it.
func TestCheck_SignedRootMustMatch(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(20, "w1")
	other, _ := tl.log.Root(19)
	res, err := Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, SignedSize: 20, SignedRoot: other, Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != 19 || res.Violation != trail.ViolationRootMismatch || res.SignedCovered {
		t.Fatalf("Check with a wrong signed root = valid %d, %s, covered %v; want 19, %s, false",
			res.Valid, res.Violation, res.SignedCovered, trail.ViolationRootMismatch)
	}
	tl.flip(15)
	if res := tl.check(0); res.SignedCovered != true {
		t.Fatalf("no signed head: SignedCovered = false")
	}
	root, _ := tl.log.Root(18)
	res, _ = Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, SignedSize: 18, SignedRoot: root, Full: true})
	if res.Valid != 14 || res.SignedCovered {
		t.Fatalf("Check with entry 15 damaged under a trail.Head of 18 = valid %d, covered %v; want 14, false", res.Valid, res.SignedCovered)
	}
}

// TestCheck_DerivedRecords: damage to what is derived from valid entries
// (heads, indexes, Merkle nodes) leaves the entries valid and is named in
// Derived.
func TestCheck_DerivedRecords(t *testing.T) {
	tests := []struct {
		name   string
		damage func(tl *testLog, es []trail.Entry)
	}{
		{"global head", func(tl *testLog, es []trail.Entry) { tl.set(keyHead, []byte(`{"seq":16,"hash":"x"}`)) }},
		{"local trail.Head missing", func(tl *testLog, es []trail.Entry) { tl.del(append(bytes.Clone(prefixHeadWS), "w2"...)) }},
		// Since layout 4 a stored head is the workspace's first batch's:
		// it is checked against the entry at its position.
		{"earlier local trail.Head changed", func(tl *testLog, es []trail.Entry) {
			h := tl.storedHead("w1")
			if h.Seq >= tl.log.LocalLen("w1") {
				tl.t.Fatalf("w1's stored head %+v is its last", h)
			}
			h.Hash = es[1].Integrity.LocalHash // w2's first
			tl.set(append(bytes.Clone(prefixHeadWS), "w1"...), appendHead(nil, h))
		}},
		{"local trail.Head beyond the entries", func(tl *testLog, es []trail.Entry) {
			h := tl.storedHead("w1")
			h.Seq = 99
			tl.set(append(bytes.Clone(prefixHeadWS), "w1"...), appendHead(nil, h))
		}},
		{"local trail.Head at position 0", func(tl *testLog, es []trail.Entry) {
			tl.set(append(bytes.Clone(prefixHeadWS), "w1"...), appendHead(nil, trail.Head{}))
		}},
		{"layout 1's id index in layout 2", func(tl *testLog, es []trail.Entry) { tl.set(append(bytes.Clone(prefixID), es[3].ID...), u64(4)) }},
		{"unknown layout", func(tl *testLog, es []trail.Entry) { tl.set(keyLayout, []byte("two")) }},
		{"local index points elsewhere", func(tl *testLog, es []trail.Entry) { rawSetLocalPos(tl.t, tl.db, "w1", 2, 1) }},
		{"local index key within another", func(tl *testLog, es []trail.Entry) {
			if _, first, _ := rawLocalGroup(tl.t, tl.db, "w1", 2); first != 1 {
				tl.t.Fatalf("w1's positions 1 and 2 are in keys %d and 2, want one key", first)
			}
			tl.set(localKey("w1", 2), u64(rawLocalPos(tl.t, tl.db, "w1", 2)))
		}},
		{"local index value malformed", func(tl *testLog, es []trail.Entry) { tl.set(localKey("w1", 1), []byte{0, 0, 1}) }},
		{"stray local index position", func(tl *testLog, es []trail.Entry) { tl.set(localKey("w1", 99), u64(1)) }},
		{"Merkle node changed", func(tl *testLog, es []trail.Entry) { tl.set(nodeKey(compact.NewNodeID(4, 0)), make([]byte, 32)) }},
		{"Merkle node missing", func(tl *testLog, es []trail.Entry) { tl.del(nodeKey(compact.NewNodeID(4, 0))) }},
		{"Merkle node below the stored levels", func(tl *testLog, es []trail.Entry) {
			tl.set(nodeKey(compact.NewNodeID(minNodeLevel-1, 1)), make([]byte, 32))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newMemLog(t)
			tt.damage(tl, tl.interleaved(16, "w1", "w2"))
			res := tl.check(16)
			if res.Violation != "" || res.Valid != 16 || res.Derived == "" || res.OK() {
				t.Fatalf("Check = %+v, want 16 valid entries and a derived problem", res)
			}
		})
	}
}

// TestRepair_QuarantinesBadTail: Repair moves the entries after the valid
// prefix to the quarantine with the reason, rebuilds heads, indexes and
// the Merkle tree, and the trail then verifies, reopens and grows.
func TestRepair_QuarantinesBadTail(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(30, "w1", "w2")
	wantRoot, _ := tl.log.Root(25)
	tl.flip(26)
	tl.del(globalKey(28)) // a gap inside the bad tail
	res := tl.check(0)
	if res.Valid != 25 || res.Last != 30 {
		t.Fatalf("Check = %+v, want 25 valid of 30", res)
	}
	q, err := Repair(context.Background(), tl.db, tl.seg, res, "2026-11-22T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range q {
		seqs = append(seqs, e.Seq)
		if e.ID == "" && (!e.Missing || e.Seq == 30) {
			t.Errorf("quarantined #%d has no id (stored, or the last entry, which the global head names)", e.Seq)
		}
	}
	if len(q) != 5 || q[0].Seq != 26 || !strings.Contains(q[0].Reason, string(trail.ViolationHashMismatch)) ||
		q[2].Seq != 28 || !q[2].Missing || q[1].Reason != "after #26" {
		t.Fatalf("Repair quarantined %v: %+v", seqs, q)
	}
	stored, err := ReadQuarantine(tl.db)
	if err != nil || len(stored) != 5 {
		t.Fatalf("ReadQuarantine = %d records, %v; want 5", len(stored), err)
	}
	var s stored2
	if err := json.Unmarshal(stored[0].Value, &s); err != nil || s.Entry.ID != q[0].ID {
		t.Errorf("quarantined value of #26 does not hold the entry as stored: %v", err)
	}
	if res := tl.check(25); !res.OK() || res.Valid != 25 {
		t.Fatalf("Check after Repair = %+v, want OK with 25", res)
	}
	// Idempotent: repairing a sound trail quarantines nothing more.
	if q, err := Repair(context.Background(), tl.db, tl.seg, tl.check(0), "later"); err != nil || len(q) != 0 {
		t.Fatalf("second Repair = %v, %v; want nothing", q, err)
	}
	tl.reopen()
	if tl.log.Len() != 25 {
		t.Fatalf("Len after repair = %d, want 25", tl.log.Len())
	}
	if root, _ := tl.log.Root(25); !bytes.Equal(root, wantRoot) {
		t.Fatalf("root after repair differs from the root before the damage")
	}
	tl.verifyOK("")
	tl.verifyOK("w1")
	tl.interleaved(5, "w1", "w3")
	tl.verifyOK("")
	if res := tl.check(30); !res.OK() {
		t.Fatalf("Check after growing again = %+v", res)
	}
}

// stored2 reads the quarantined value's shape without depending on stored.
type stored2 struct {
	Entry struct {
		ID string `json:"id"`
	} `json:"entry"`
}

// TestRepair_RebuildsDerivedRecords: with every entry valid, Repair
// quarantines nothing and rewrites the derived records.
func TestRepair_RebuildsDerivedRecords(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(16, "w1", "w2")
	root, _ := tl.log.Root(16)
	tl.set(nodeKey(compact.NewNodeID(2, 1)), make([]byte, 32))
	tl.set(localKey("w1", 99), u64(1))
	tl.del(keyHead)
	q, err := Repair(context.Background(), tl.db, tl.seg, tl.check(0), "now")
	if err != nil || len(q) != 0 {
		t.Fatalf("Repair = %v, %v; want no quarantine", q, err)
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check after Repair = %+v", res)
	}
	tl.reopen()
	if got, _ := tl.log.Root(16); !bytes.Equal(got, root) || tl.log.Len() != 16 {
		t.Fatalf("after Repair: len %d, root changed %v", tl.log.Len(), !bytes.Equal(got, root))
	}
	tl.verifyOK("")
}

// checkFrom runs Check without Full: it starts after the mark.
func (tl *testLog) checkFrom(signed uint64) CheckResult {
	tl.t.Helper()
	var root []byte
	if signed > 0 {
		root, _ = tl.log.Root(signed)
	}
	res, err := Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, SignedSize: signed, SignedRoot: root})
	if err != nil {
		tl.t.Fatalf("Check: %v", err)
	}
	return res
}

// TestCheck_StartsAfterTheMark: after MarkChecked, a check reads only the
// entries written since, carries the chains across the mark (a local
// prev_hash, a timestamp, a terminal state before the mark still count) and
// finds damage among them; a full check still reads everything.
func TestCheck_StartsAfterTheMark(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(30, "w1", "w2")
	end := tl.wsEv("w2")
	end.Body = map[string]any{"workspace_id": "w2", "from_state": "active", "to_state": "closed", "trigger": "t", "initiator": "system"}
	tl.append(end)
	res := tl.checkFrom(31)
	if !res.OK() || res.From != 0 || res.Examined != 31 {
		t.Fatalf("first Check = %+v, want a full OK check of 31", res)
	}
	if err := MarkChecked(tl.db, res); err != nil {
		t.Fatal(err)
	}
	tl.interleaved(9, "w1", "w3")
	res = tl.checkFrom(35)
	if !res.OK() || res.From != 31 || res.Examined != 9 || res.Valid != 40 || !res.SignedCovered {
		t.Fatalf("Check after the mark = %+v, want From 31, 9 examined, 40 valid, signed trail.Head covered", res)
	}
	// The state carried across the mark still decides.
	late := tl.wsEv("w2")
	tl.append(late)
	if res := tl.checkFrom(0); res.Valid != 40 || res.Violation != trail.ViolationAfterTerminal {
		t.Fatalf("late entry of closed w2 after the mark: Check = valid %d, %s; want 40, %s", res.Valid, res.Violation, trail.ViolationAfterTerminal)
	}
	// Damage before the mark is the full check's to find.
	tl.flip(5)
	if res := tl.checkFrom(0); res.From != 31 || res.Valid != 40 {
		t.Fatalf("Check after the mark with #5 damaged = %+v, want the tail only", res)
	}
	if res := tl.check(0); res.Valid != 4 {
		t.Fatalf("full Check with #5 damaged = valid %d, want 4", res.Valid)
	}
}

// TestCheck_MarkThatNoLongerFitsIsIgnored: when the marked entry changed, or
// the signed tree head disagrees with the mark (at its size, or at an older
// size, by the marked prefix's stored Merkle nodes), the check reads
// everything.
func TestCheck_MarkThatNoLongerFitsIsIgnored(t *testing.T) {
	tests := []struct {
		name   string
		damage func(tl *testLog) (signed uint64, root []byte)
	}{
		{"marked entry changed", func(tl *testLog) (uint64, []byte) { tl.flip(20); return 0, nil }},
		{"marked entry gone", func(tl *testLog) (uint64, []byte) { tl.del(globalKey(20)); return 0, nil }},
		{"signed head older than the mark, another root", func(tl *testLog) (uint64, []byte) { r, _ := tl.log.Root(9); return 10, r }},
		{"signed head older than the mark, a stored node changed", func(tl *testLog) (uint64, []byte) {
			r, _ := tl.log.Root(17)
			tl.set(nodeKey(compact.NewNodeID(4, 0)), make([]byte, 32))
			return 17, r
		}},
		{"signed trail.Head at the mark disagrees", func(tl *testLog) (uint64, []byte) { r, _ := tl.log.Root(19); return 20, r }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newMemLog(t)
			tl.interleaved(20, "w1", "w2")
			if err := MarkChecked(tl.db, tl.check(0)); err != nil {
				t.Fatal(err)
			}
			signed, root := tt.damage(tl)
			res, err := Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, SignedSize: signed, SignedRoot: root})
			if err != nil {
				t.Fatal(err)
			}
			if res.From != 0 || res.Examined == 0 {
				t.Fatalf("Check = %+v, want a full check from #1", res)
			}
		})
	}
}

// TestCheck_MarkNewerThanTheSignedHead: a daemon that marked its trail
// while running and stopped before signing a tree head that covers the
// mark starts after the mark all the same: the root of the marked prefix's
// stored nodes at the signed size is the signed root.
func TestCheck_MarkNewerThanTheSignedHead(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(40, "w1", "w2")
	if err := MarkChecked(tl.db, tl.check(0)); err != nil {
		t.Fatal(err)
	}
	tl.interleaved(5, "w1")
	for _, signed := range []uint64{1, 16, 17, 33, 39} {
		res := tl.checkFrom(signed)
		if !res.OK() || res.From != 40 || res.Examined != 5 || !res.SignedCovered {
			t.Fatalf("Check with a tree head of %d under the mark of 40 = %+v, want OK from 40, 5 examined, covered", signed, res)
		}
	}
}

// TestCheck_BodyWithHTMLCharacters: a body holding <, > or & (which
// encoding/json escapes when it stores the entry) checks as it was hashed.
func TestCheck_BodyWithHTMLCharacters(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(4, "w1")
	ev := tl.wsEv("w1")
	ev.Body = map[string]any{"workspace_id": "w1", "from_state": "a<b", "to_state": "c>d", "trigger": "e&f", "initiator": "g"}
	tl.append(ev, tl.wsEv("w1"))
	if res := tl.check(0); !res.OK() || res.Valid != 6 {
		t.Fatalf("Check = %+v, want OK over 6 entries", res)
	}
}

// TestCheck_VisitEvent: with VisitEvent, Visit sees exactly the entries of
// that type, in order, on the accelerated check and on the reference walk.
func TestCheck_VisitEvent(t *testing.T) {
	tl := newMemLog(t)
	entries := tl.interleaved(40, "w1", "w2")
	typ := entries[3].EventType // a system entry's
	var want []uint64
	for i, e := range entries {
		if e.EventType == typ {
			want = append(want, uint64(i+1))
		}
	}
	if len(want) == 0 || len(want) == len(entries) {
		t.Fatalf("the trail has %d entries of type %s of %d; want some and not all", len(want), typ, len(entries))
	}
	for _, reference := range []bool{false, true} {
		var got []uint64
		visit := func(seq uint64, e Visited) {
			if trail.EventType(e.EventType) != typ || string(e.ID) != entries[seq-1].ID || !bytes.Equal(e.Body, entries[seq-1].Body) {
				t.Errorf("reference %v: Visit(%d, %s %s), want entries of type %s", reference, seq, e.ID, e.EventType, typ)
			}
			got = append(got, seq)
		}
		res, err := Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, Full: true, Visit: visit, VisitEvent: typ, reference: reference})
		if err != nil || !res.OK() {
			t.Fatalf("Check = %+v, %v", res, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("reference %v: Visit saw entries %v, want %v", reference, got, want)
		}
	}
}

// TestCheck_ExtraBesideThePointer: the entry hash and id kept beside an
// entry's pointer (read by the Merkle tree's low nodes and the search by
// id), in its group's record or after a key's own pointer, are checked
// against the entry, a difference is a derived problem at the key that
// holds them, and Repair writes them again.
func TestCheck_ExtraBesideThePointer(t *testing.T) {
	for _, form := range []string{"group", "own key"} {
		for _, part := range []string{"hash", "id"} {
			t.Run(form+" "+part, func(t *testing.T) {
				tl := newTestLog(t)
				tl.interleaved(16, "w1", "w2") // batches of five: entries 1-5 are the group at 1
				key := globalKey(1)
				err := tl.db.Update(func(txn *badger.Txn) error {
					item, err := txn.Get(key)
					if err != nil {
						return err
					}
					if item.UserMeta() != metaGroup {
						t.Fatalf("entries 1-5 are not a group (meta %d)", item.UserMeta())
					}
					v, err := item.ValueCopy(nil)
					if err != nil {
						return err
					}
					// Entry #5's record: the fifth.
					off := 0
					for range 4 {
						if _, _, _, off, err = nextRecord(v, off); err != nil {
							return err
						}
					}
					ptr, leaf, id, end, err := nextRecord(v, off)
					if err != nil || end != len(v) {
						t.Fatalf("entry #5's record: %v, ends at %d of %d", err, end, len(v))
					}
					rec := append(append(bytes.Clone(ptr), leaf...), id...) // as a key of its own holds it
					i := seglog.PtrSize                                     // the hash's first byte
					if part == "id" {
						i = len(rec) - 1
					}
					rec[i] ^= 0x01
					if form == "own key" { // as layout 2 wrote it
						key = globalKey(5)
						if err := txn.SetEntry(badger.NewEntry(globalKey(1), v[:off]).WithMeta(metaGroup)); err != nil {
							return err
						}
						return txn.SetEntry(badger.NewEntry(key, rec).WithMeta(seglog.Meta))
					}
					v = appendRecord(v[:off], rec[:seglog.PtrSize], rec[seglog.PtrSize:seglog.PtrSize+32], string(rec[seglog.PtrSize+32:]))
					return txn.SetEntry(badger.NewEntry(key, v).WithMeta(metaGroup))
				})
				if err != nil {
					t.Fatal(err)
				}
				res := tl.check(16)
				if res.Violation != "" || res.Valid != 16 || res.DerivedAt != string(key) || res.OK() {
					t.Fatalf("Check = %+v, want 16 valid entries and a derived problem at %q", res, key)
				}
				if _, err := Repair(context.Background(), tl.db, tl.seg, res, "now"); err != nil {
					t.Fatal(err)
				}
				if res := tl.check(16); !res.OK() || res.Derived != "" {
					t.Fatalf("after Repair: %+v", res)
				}
			})
		}
	}
}

package traillog

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail"
)

// localKeys returns the local index keys of ws: each key's position and
// how many positions it holds.
func (tl *testLog) localKeys(ws string) (firsts []uint64, lens []int) {
	tl.t.Helper()
	err := tl.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("t/w/" + ws + "/")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			firsts = append(firsts, binary.BigEndian.Uint64(k[len(k)-8:]))
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			lens = append(lens, len(v)/8)
		}
		return nil
	})
	if err != nil {
		tl.t.Fatal(err)
	}
	return firsts, lens
}

// TestLocalIndexOneKeyPerBatch: a batch writes one local index key per
// workspace, holding the global seqs of the positions the batch gave it
// (layout 3); the next batch's key starts at the position after; a batch
// that gives a workspace more than maxGroup positions writes a key per
// maxGroup of them; and the local trail reads through the keys whole.
func TestLocalIndexOneKeyPerBatch(t *testing.T) {
	tl := newMemLog(t)
	var evs []Event
	for i := range 7 {
		if i%3 == 2 {
			evs = append(evs, tl.wsEv("w2"))
		} else {
			evs = append(evs, tl.wsEv("w1"))
		}
	}
	es := tl.append(evs...)
	tl.append(tl.wsEv("w1"), tl.sysEv(), tl.wsEv("w1"))
	firsts, lens := tl.localKeys("w1")
	if !slices.Equal(firsts, []uint64{1, 6}) || !slices.Equal(lens, []int{5, 2}) {
		t.Fatalf("w1's keys at %v holding %v positions, want at [1 6] holding [5 2]", firsts, lens)
	}
	firsts, lens = tl.localKeys("w2")
	if !slices.Equal(firsts, []uint64{1}) || !slices.Equal(lens, []int{2}) {
		t.Fatalf("w2's keys at %v holding %v positions, want at [1] holding [2]", firsts, lens)
	}
	// w2's positions 1 and 2 are entries #3 and #6 of the global trail.
	if got := rawLocalPos(t, tl.db, "w2", 2); got != 6 || es[5].Workspace != "w2" {
		t.Fatalf("w2's position 2 is #%d, want #6", got)
	}
	if got := tl.readLocal("w1"); len(got) != 7 {
		t.Fatalf("w1's local trail has %d entries, want 7", len(got))
	}
	tl.verifyOK("w1")
	tl.verifyOK("")

	// More than maxGroup positions in one batch.
	evs = nil
	for range maxGroup + 3 {
		evs = append(evs, tl.wsEv("w3"))
	}
	tl.append(evs...)
	firsts, lens = tl.localKeys("w3")
	if !slices.Equal(firsts, []uint64{1, maxGroup + 1}) || !slices.Equal(lens, []int{maxGroup, 3}) {
		t.Fatalf("w3's keys at %v holding %v positions, want at [1 %d] holding [%d 3]", firsts, lens, maxGroup+1, maxGroup)
	}
	if got := tl.readLocal("w3"); len(got) != maxGroup+3 {
		t.Fatalf("w3's local trail has %d entries, want %d", len(got), maxGroup+3)
	}
	if ok, ref := fastAndRef(t, tl.db); !ok || ref.Violation != "" {
		t.Fatalf("fast = %v, reference = %+v", ok, ref)
	}
}

// toLayout2 rewrites every local index key as layout 2 wrote them: one key
// per position.
func (tl *testLog) toLayout2(wss ...string) {
	tl.t.Helper()
	for _, ws := range wss {
		firsts, lens := tl.localKeys(ws)
		for i, first := range firsts {
			key := localKey(ws, first)
			v := tl.get(key)
			for j := range lens[i] {
				tl.set(localKey(ws, first+uint64(j)), bytes.Clone(v[8*j:8*j+8]))
			}
		}
	}
	tl.set(keyLayout, []byte("2"))
}

// TestLayout2LocalIndexReadsAsItIs: a trail whose local indexes hold one
// position per key (layout 2) checks OK on both paths, reads and verifies
// each local trail; Upgrade marks it layout 4 and removes nothing; the
// trail then goes on with keys of several positions, and checks OK.
func TestLayout2LocalIndexReadsAsItIs(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(60, "w1", "w2")
	tl.toLayout2("w1", "w2")
	if firsts, lens := tl.localKeys("w1"); len(firsts) != 30 || lens[0] != 1 {
		t.Fatalf("w1 in layout 2 has %d keys of %v positions, want 30 of 1", len(firsts), lens[:1])
	}
	if ok, ref := fastAndRef(t, tl.db); !ok || ref.Violation != "" {
		t.Fatalf("layout 2: fast = %v, reference = %+v", ok, ref)
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check of layout 2 = %+v", res)
	}
	if got := tl.readLocal("w2"); len(got) != 15 {
		t.Fatalf("w2's local trail has %d entries, want 15", len(got))
	}
	tl.verifyOK("w2")
	up, err := Upgrade(tl.db)
	if err != nil || up.From != 2 || up.IDKeys+up.Nodes != 0 {
		t.Fatalf("Upgrade of layout 2 = %+v, %v; want from 2, nothing removed", up, err)
	}
	if v := tl.get(keyLayout); string(v) != "4" {
		t.Fatalf("layout after Upgrade = %q, want 4", v)
	}
	tl.interleaved(20, "w1", "w2")
	if firsts, _ := tl.localKeys("w1"); len(firsts) >= 40 {
		t.Fatalf("w1 has %d keys for 40 positions: new batches wrote one key per position", len(firsts))
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check of layouts 2 and 3 = %+v", res)
	}
	if ok, ref := fastAndRef(t, tl.db); !ok || ref.Violation != "" {
		t.Fatalf("layouts 2 and 3: fast = %v, reference = %+v", ok, ref)
	}
	tl.verifyOK("w1")
}

// TestRepairRebuildsLocalIndexInKeysOfSeveralPositions: Repair writes a
// workspace's local index again with keys of up to maxGroup positions.
func TestRepairRebuildsLocalIndexInKeysOfSeveralPositions(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(40, "w1", "w2")
	tl.toLayout2("w1", "w2")
	tl.del(keyHead)
	if _, err := Repair(context.Background(), tl.db, tl.seg, tl.check(0), "now"); err != nil {
		t.Fatal(err)
	}
	if firsts, lens := tl.localKeys("w1"); len(firsts) != 1 || lens[0] != 20 {
		t.Fatalf("w1 after Repair: keys at %v of %v positions, want one of 20", firsts, lens)
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check after Repair = %+v", res)
	}
}

// FuzzLocalIndexValue: any value under a local index key, in place of one
// the trail wrote, is read without a panic; the fast path never passes
// what the reference fails, and a value other than the written one fails
// the check. One trail serves every input: the key is written back after
// each.
func FuzzLocalIndexValue(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add(u64(1), uint8(1))
	f.Add(append(u64(2), u64(7)...), uint8(2))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 9, 1}, uint8(3))
	tl := newMemLog(f)
	tl.interleaved(24, "w1", "w2")
	firsts, _ := tl.localKeys("w1")
	origs := map[uint64][]byte{}
	for _, n := range firsts {
		origs[n] = tl.get(localKey("w1", n))
	}
	set := func(key, v []byte) error {
		return tl.db.Update(func(txn *badger.Txn) error { return txn.Set(key, v) })
	}
	f.Fuzz(func(t *testing.T, v []byte, at uint8) {
		n := firsts[int(at)%len(firsts)]
		key, orig := localKey("w1", n), origs[n]
		if err := set(key, v); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := set(key, orig); err != nil {
				t.Fatal(err)
			}
		}()
		fastOK, ref := fastAndRef(t, tl.db)
		if fastOK && ref.Violation != "" {
			t.Fatalf("value %x: fast path ok, reference %+v", v, ref)
		}
		res, err := Check(context.Background(), tl.db, CheckOptions{Full: true})
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if bytes.Equal(v, orig) != res.OK() {
			t.Fatalf("value %x (written %x): Check = %+v", v, orig, res)
		}
		if !res.OK() && !strings.Contains(res.Derived, "local index") && res.Violation == "" {
			t.Fatalf("value %x: Check names %q, want the local index", v, res.Derived)
		}
		_, _, _ = tl.log.Read(context.Background(), trail.Query{Workspace: "w1"})
	})
}

package traillog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

// globalKeys returns the t/g/ keys: each one's seq, user meta and value.
func (tl *testLog) globalKeys() (seqs []uint64, metas []byte, vals [][]byte) {
	tl.t.Helper()
	err := tl.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("t/g/")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			seqs = append(seqs, binary.BigEndian.Uint64(it.Item().Key()[4:]))
			metas = append(metas, it.Item().UserMeta())
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			vals = append(vals, v)
		}
		return nil
	})
	if err != nil {
		tl.t.Fatal(err)
	}
	return seqs, metas, vals
}

// records returns the records of a group value.
func records(t testing.TB, v []byte) (recs [][]byte) {
	t.Helper()
	for off := 0; off < len(v); {
		_, _, _, next, err := nextRecord(v, off)
		if err != nil {
			t.Fatalf("group: %v", err)
		}
		recs = append(recs, v[off:next])
		off = next
	}
	return recs
}

// TestEntriesOneKeyPerBatch: in the segment files, a batch's entries are
// one t/g/ key (user meta metaGroup) named after its first entry, with a
// record per entry; a batch of more than maxEntryGroup entries writes a
// key per maxEntryGroup of them; every entry is found by its id, read in
// order from anywhere, proved, and the trail checks OK on both paths.
func TestEntriesOneKeyPerBatch(t *testing.T) {
	tl := newTestLog(t)
	var es []trail.Entry
	var evs []Event
	for range 7 {
		evs = append(evs, tl.wsEv("w1"))
	}
	es = append(es, tl.append(evs...)...)
	es = append(es, tl.append(tl.sysEv(), tl.wsEv("w2"), tl.wsEv("w1"))...)
	evs = nil
	for range maxEntryGroup + 2 {
		evs = append(evs, tl.wsEv("w3"))
	}
	es = append(es, tl.append(evs...)...)
	seqs, metas, vals := tl.globalKeys()
	want := []uint64{1, 8, 11, 11 + maxEntryGroup}
	wantN := []int{7, 3, maxEntryGroup, 2}
	if len(seqs) != len(want) {
		t.Fatalf("t/g/ keys at %v, want at %v", seqs, want)
	}
	for i := range seqs {
		if seqs[i] != want[i] || metas[i] != metaGroup || len(records(t, vals[i])) != wantN[i] {
			t.Fatalf("key %d: at %d, meta %d, %d records; want at %d, meta %d, %d records", i, seqs[i], metas[i], len(records(t, vals[i])), want[i], metaGroup, wantN[i])
		}
	}
	for _, i := range []int{0, 6, 7, 9, 10, 11 + maxEntryGroup - 2, len(es) - 1} {
		got, err := tl.log.Get(es[i].ID)
		if err != nil || got.ID != es[i].ID || got.Integrity.EntryHash != es[i].Integrity.EntryHash {
			t.Fatalf("Get(entry #%d) = %s, %v", i+1, got.ID, err)
		}
		var n int
		err = tl.log.ScanAfter(context.Background(), uint64(i), func(seq uint64, e trail.Entry) bool {
			if seq != uint64(i+1+n) || e.ID != es[seq-1].ID {
				t.Fatalf("ScanAfter(%d): #%d is %s, want #%d %s", i, seq, e.ID, i+1+n, es[i+n].ID)
			}
			n++
			return true
		})
		if err != nil || n != len(es)-i {
			t.Fatalf("ScanAfter(%d) read %d entries, %v; want %d", i, n, err, len(es)-i)
		}
		if _, err := tl.log.InclusionProof(uint64(i), uint64(len(es))); err != nil {
			t.Fatalf("InclusionProof(%d): %v", i, err)
		}
	}
	if got := tl.readLocal("w1"); len(got) != 8 {
		t.Fatalf("w1's local trail has %d entries, want 8", len(got))
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check = %+v", res)
	}
	if ok, _ := fastCheck(t, tl.db, CheckOptions{Seg: tl.seg, Full: true}); !ok {
		t.Fatal("the fast path did not pass the trail")
	}
	tl.verifyOK("w3")
}

// TestGlobalIterSeek: over keys of every form (groups, a key of one entry
// as layout 2 wrote it, a gap where an entry is missing), seek lands on
// the entry asked for, or on the first stored after it, and next goes
// through the rest in order.
func TestGlobalIterSeek(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(40, "w1", "w2") // groups of five
	tl.toLayout2Entries(11, 12)    // entries 11 and 12 under keys of their own
	tl.del(globalKey(18))          // a gap inside the group at 16
	tl.del(globalKey(26))          // the first of the group at 26
	stored := map[uint64]bool{}
	for seq := uint64(1); seq <= 40; seq++ {
		stored[seq] = seq != 18 && seq != 26
	}
	err := tl.db.View(func(txn *badger.Txn) error {
		for from := uint64(1); from <= 42; from++ {
			g := newGlobalIter(txn, badger.IteratorOptions{})
			g.seek(from)
			for want := from; want <= 40; want++ {
				if !stored[want] {
					continue
				}
				if !g.valid() || g.entry().seq != want || g.entry().err != nil {
					g.close()
					return fmt.Errorf("seek(%d) then next: at %+v, want #%d", from, g.entry(), want)
				}
				if _, _, err := g.entry().leafAndID(tl.seg); err != nil {
					g.close()
					return fmt.Errorf("entry #%d: %v", want, err)
				}
				g.next()
			}
			if g.valid() {
				g.close()
				return fmt.Errorf("seek(%d): past the end at #%d", from, g.entry().seq)
			}
			g.close()
		}
		// Seeks back and forth on one walk, as the search by id does.
		g := newGlobalIter(txn, badger.IteratorOptions{})
		defer g.close()
		for _, seq := range []uint64{20, 3, 37, 11, 12, 13, 5, 40, 1, 17, 19} {
			if g.seek(seq); !g.valid() || g.entry().seq != seq {
				return fmt.Errorf("seek(%d) on a used walk: at #%d", seq, g.entry().seq)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toLayout2Entries puts entries seqs under keys of their own, each a
// pointer with its hash and id after it, as layout 2 wrote them (the
// groups that held them are split).
func (tl *testLog) toLayout2Entries(seqs ...uint64) {
	tl.t.Helper()
	err := tl.db.Update(func(txn *badger.Txn) error {
		for _, seq := range seqs {
			e, ok, err := entryAt(txn, seq)
			if err != nil || !ok || e.item != nil {
				return fmt.Errorf("entry #%d: not in a group (%v, %v)", seq, ok, err)
			}
			rec := append(append(bytes.Clone(e.ptr), e.leaf...), e.id...)
			if err := tl.deleteIn(txn, seq); err != nil {
				return err
			}
			if err := txn.SetEntry(badger.NewEntry(globalKey(seq), rec).WithMeta(seglog.Meta)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tl.t.Fatal(err)
	}
}

// deleteIn removes entry #seq in txn, splitting its group.
func (tl *testLog) deleteIn(txn *badger.Txn, seq uint64) error {
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	g.seek(seq)
	e := g.entry()
	if !g.valid() || e.seq != seq {
		return fmt.Errorf("entry #%d is not stored", seq)
	}
	if e.item != nil {
		return txn.Delete(globalKey(seq))
	}
	recs := records(tl.t, e.grp)
	i := seq - e.first
	if i == 0 {
		if err := txn.Delete(globalKey(e.first)); err != nil {
			return err
		}
	} else if err := txn.SetEntry(badger.NewEntry(globalKey(e.first), bytes.Join(recs[:i], nil)).WithMeta(metaGroup)); err != nil {
		return err
	}
	if len(recs) > int(i)+1 {
		return txn.SetEntry(badger.NewEntry(globalKey(seq+1), bytes.Join(recs[i+1:], nil)).WithMeta(metaGroup))
	}
	return nil
}

// TestLayout2EntriesReadAsTheyAre: a trail whose entries are keys of their
// own (layout 2) checks OK on both paths and reads; new batches are
// groups after them, and the whole checks OK.
func TestLayout2EntriesReadAsTheyAre(t *testing.T) {
	tl := newTestLog(t)
	es := tl.interleaved(20, "w1", "w2")
	var all []uint64
	for seq := uint64(1); seq <= 20; seq++ {
		all = append(all, seq)
	}
	tl.toLayout2Entries(all...)
	if seqs, _, _ := tl.globalKeys(); len(seqs) != 20 {
		t.Fatalf("%d keys for 20 entries of layout 2", len(seqs))
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check of layout 2 = %+v", res)
	}
	if ok, _ := fastCheck(t, tl.db, CheckOptions{Seg: tl.seg, Full: true}); !ok {
		t.Fatal("the fast path did not pass layout 2")
	}
	if got, err := tl.log.Get(es[13].ID); err != nil || got.ID != es[13].ID {
		t.Fatalf("Get = %v, %v", got.ID, err)
	}
	tl.interleaved(20, "w1", "w2")
	if seqs, _, _ := tl.globalKeys(); len(seqs) != 24 {
		t.Fatalf("%d keys after four more batches, want 24", len(seqs))
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check of layouts 2 and 3 = %+v", res)
	}
	tl.verifyOK("w1")
}

// TestRepairCutsAGroup: when the first bad entry is inside a group, Repair
// keeps the group's entries before it under the group's key and
// quarantines the rest; the trail then checks OK, reopens and grows.
func TestRepairCutsAGroup(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(30, "w1", "w2") // groups at 1, 6, …, 26
	wantRoot, _ := tl.log.Root(22)
	tl.flip(23)
	res := tl.check(0)
	if res.Valid != 22 || res.Last != 30 {
		t.Fatalf("Check = %+v, want 22 valid of 30", res)
	}
	q, err := Repair(context.Background(), tl.db, tl.seg, res, "now")
	if err != nil || len(q) != 8 || q[0].Seq != 23 {
		t.Fatalf("Repair = %d quarantined from #%d, %v; want 8 from #23", len(q), q[0].Seq, err)
	}
	seqs, metas, vals := tl.globalKeys()
	if last := len(seqs) - 1; seqs[last] != 21 || metas[last] != metaGroup || len(records(t, vals[last])) != 2 {
		t.Fatalf("last key at %d (meta %d) with %d records; want the group at 21 cut to 2", seqs[last], metas[last], len(records(t, vals[last])))
	}
	if res := tl.check(0); !res.OK() || res.Valid != 22 {
		t.Fatalf("Check after Repair = %+v", res)
	}
	tl.reopen()
	if root, err := tl.log.Root(22); err != nil || !bytes.Equal(root, wantRoot) {
		t.Fatalf("Root(22) after Repair = %x, %v", root, err)
	}
	tl.interleaved(7, "w1")
	if res := tl.check(0); !res.OK() || res.Valid != 29 {
		t.Fatalf("Check after more entries = %+v", res)
	}
	tl.verifyOK("")
}

// FuzzGroupValue: any value in place of a group of entries is read without
// a panic; the check fails unless it is the written one, and the fast path
// never passes what the reference fails. One trail serves every input: the
// group is written back after each.
func FuzzGroupValue(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add(make([]byte, seglog.PtrSize+33), 1)
	f.Add([]byte{1, 2, 3}, 2)
	tl := newTestLog(f)
	tl.interleaved(15, "w1", "w2") // groups at 1, 6, 11
	key := globalKey(6)
	_, _, vals := tl.globalKeys()
	orig := vals[1]
	set := func(v []byte) error {
		return tl.db.Update(func(txn *badger.Txn) error {
			return txn.SetEntry(badger.NewEntry(key, v).WithMeta(metaGroup))
		})
	}
	f.Fuzz(func(t *testing.T, v []byte, cut int) {
		if len(v) == 0 && cut > 0 { // also: the written group cut short
			v = orig[:min(cut, len(orig))]
		}
		if err := set(v); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := set(orig); err != nil {
				t.Fatal(err)
			}
		}()
		fastOK, _ := fastCheck(t, tl.db, CheckOptions{Seg: tl.seg, Full: true})
		res, err := Check(context.Background(), tl.db, CheckOptions{Seg: tl.seg, Full: true})
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if fastOK && !res.OK() {
			t.Fatalf("group %x: fast path ok, reference %+v", v, res)
		}
		if bytes.Equal(v, orig) != res.OK() {
			t.Fatalf("group %x (written %x): Check = %+v", v, orig, res)
		}
		_, _ = tl.log.Get("01")
		_ = tl.log.ScanAfter(context.Background(), 3, func(uint64, trail.Entry) bool { return true })
	})
}

// TestRepairQuarantinesAnUnreadableGroup: a group whose value cannot be
// read (after the valid prefix) is quarantined: its first entry without
// bytes, the rest, which the heads count, as missing; its key is removed,
// and the trail then checks OK and grows.
func TestRepairQuarantinesAnUnreadableGroup(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(30, "w1", "w2") // groups at 1, 6, …, 26
	err := tl.db.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(globalKey(26), []byte{1, 2, 3}).WithMeta(metaGroup))
	})
	if err != nil {
		t.Fatal(err)
	}
	res := tl.check(0)
	if res.Valid != 25 || res.Violation == "" {
		t.Fatalf("Check = %+v, want 25 valid and a violation", res)
	}
	q, err := Repair(context.Background(), tl.db, tl.seg, res, "now")
	if err != nil || len(q) != 5 || q[0].Seq != 26 || q[0].Value != nil || q[0].Missing || !q[4].Missing || q[4].Seq != 30 || q[4].ID == "" {
		t.Fatalf("Repair = %+v, %v; want #26 quarantined without its bytes, #27-#30 as missing (#30's id from the head)", q, err)
	}
	if seqs, _, _ := tl.globalKeys(); seqs[len(seqs)-1] != 21 {
		t.Fatalf("keys at %v after Repair, want the last at 21", seqs)
	}
	if res := tl.check(0); !res.OK() || res.Valid != 25 {
		t.Fatalf("Check after Repair = %+v", res)
	}
	tl.reopen()
	tl.interleaved(5, "w1")
	tl.verifyOK("")
}

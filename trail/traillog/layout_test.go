package traillog

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/compact"

	"github.com/wacpd/wacpd/trail"
)

// TestGetByIDEverywhere: with no id index, every entry is found by its id
// (a binary search over the global trail), and an id between, before or
// after the trail's ids is not found.
func TestGetByIDEverywhere(t *testing.T) {
	tl := newMemLog(t)
	es := tl.interleaved(137, "w1", "w2", "")
	for i, e := range es {
		got, err := tl.log.Get(e.ID)
		if err != nil || got.ID != e.ID {
			t.Fatalf("Get(entry #%d %s) = %s, %v", i+1, e.ID, got.ID, err)
		}
		if seq, err := tl.log.Seq(e.ID); err != nil || seq != uint64(i+1) {
			t.Fatalf("Seq(%s) = %d, %v; want %d", e.ID, seq, err, i+1)
		}
	}
	between := es[40].ID[:25] + "0" // below entry #41's id, above #40's (ULIDs end in random bits)
	if between <= es[39].ID || between >= es[40].ID {
		between = es[40].ID + "0"
	}
	for _, id := range []string{"00000000000000000000000000", between, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"} {
		if _, err := tl.log.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%s) = %v, want ErrNotFound", id, err)
		}
	}
	// Pages resume after an id found the same way.
	page := tl.readAll(trail.Query{After: es[99].ID})
	if len(page) != len(es)-100 || page[0].ID != es[100].ID {
		t.Fatalf("Read after #100 = %d entries from %v, want %d from %s", len(page), ids(page[:1]), len(es)-100, es[100].ID)
	}
}

// TestLayoutWritesNoIDIndexNorLowNodes: an append writes neither an id
// index nor Merkle nodes below minNodeLevel.
func TestLayoutWritesNoIDIndexNorLowNodes(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(64, "w1")
	nodes := 0
	for _, k := range tl.keys() {
		switch {
		case strings.HasPrefix(k, string(prefixID)):
			t.Errorf("key %q: an id index", k)
		case strings.HasPrefix(k, string(prefixNode)):
			nodes++
			if l := k[len(prefixNode)]; l < minNodeLevel {
				t.Errorf("Merkle node of level %d stored", l)
			}
		}
	}
	// 64 leaves: 4 nodes at level 4, 2 at 5, 1 at 6.
	if nodes != 7 {
		t.Errorf("%d Merkle nodes stored, want 7", nodes)
	}
}

// toLayout1 adds what layout 1 stored and layout 2 does not (the id index
// and the low Merkle nodes) and removes the layout version, as a data dir
// written before issue 13 has them.
func (tl *testLog) toLayout1(es []trail.Entry) {
	tl.t.Helper()
	rng := trail.RangeFactory.NewEmptyRange(0)
	for i, e := range es {
		tl.set(append(bytes.Clone(prefixID), e.ID...), u64(uint64(i+1)))
		leaf, _ := trail.LeafData(e)
		_ = rng.Append(trail.Hasher{}.HashLeaf(leaf), func(id compact.NodeID, h []byte) {
			if id.Level < minNodeLevel {
				tl.set(nodeKey(id), bytes.Clone(h))
			}
		})
	}
	tl.del(keyLayout)
}

// TestUpgradeFromLayout1: a layout-1 trail checks OK as it is (its extra
// records are unused, not wrong); Upgrade removes them and records layout
// 4, after which the trail checks OK, proves the same and reads the same;
// a second Upgrade does nothing; a newer layout is refused.
func TestUpgradeFromLayout1(t *testing.T) {
	tl := newTestLog(t)
	es := tl.interleaved(40, "w1", "w2")
	tl.toLayout1(es)
	root, _ := tl.log.Root(37)
	proof, err := tl.log.InclusionProof(5, 37)
	if err != nil {
		t.Fatal(err)
	}
	if res := tl.check(37); !res.OK() {
		t.Fatalf("Check of the layout-1 trail = %+v, want OK", res)
	}
	// Check of a layout-2 dir names the layout-1 records.
	tl.set(keyLayout, []byte("2"))
	if res := tl.check(0); res.Derived == "" {
		t.Fatalf("Check of layout-1 records marked layout 2 = %+v, want a derived problem", res)
	}
	tl.del(keyLayout)

	got, err := Upgrade(tl.db)
	if err != nil {
		t.Fatal(err)
	}
	// 40 ids; nodes below level 4 of 40 leaves: 20 + 10 + 5 + 40 leaves.
	if got.From != 1 || got.IDKeys != 40 || got.Nodes != 75 {
		t.Fatalf("Upgrade = %+v, want from 1, 40 id keys, 75 nodes", got)
	}
	for _, k := range tl.keys() {
		if strings.HasPrefix(k, string(prefixID)) || (strings.HasPrefix(k, string(prefixNode)) && k[len(prefixNode)] < minNodeLevel) {
			t.Fatalf("key %q left after Upgrade", k)
		}
	}
	if v := tl.get(keyLayout); string(v) != "4" {
		t.Fatalf("layout after Upgrade = %q, want 4", v)
	}
	tl.reopen()
	if res := tl.check(37); !res.OK() {
		t.Fatalf("Check after Upgrade = %+v, want OK", res)
	}
	if r, _ := tl.log.Root(37); !bytes.Equal(r, root) {
		t.Errorf("Root(37) after Upgrade = %x, want %x", r, root)
	}
	if p, err := tl.log.InclusionProof(5, 37); err != nil || !equalHashes(p, proof) {
		t.Errorf("InclusionProof(5, 37) after Upgrade differs: %v", err)
	}
	if e, err := tl.log.Get(es[20].ID); err != nil || e.ID != es[20].ID {
		t.Errorf("Get after Upgrade = %v", err)
	}
	if again, err := Upgrade(tl.db); err != nil || again.From != Layout || again.IDKeys+again.Nodes != 0 {
		t.Errorf("second Upgrade = %+v, %v; want nothing to do", again, err)
	}
	tl.set(keyLayout, []byte("5"))
	if _, err := Upgrade(tl.db); !errors.Is(err, ErrLayout) {
		t.Errorf("Upgrade of layout 5 = %v, want ErrLayout", err)
	}
}

// TestUpgradeOfANewDatabase: a database without a trail is marked with
// this build's layout, and Upgrade says there was nothing to upgrade.
func TestUpgradeOfANewDatabase(t *testing.T) {
	db := openBadger(t, "")
	defer db.Close()
	got, err := Upgrade(db)
	if err != nil || got.From != 0 || got.IDKeys+got.Nodes != 0 {
		t.Fatalf("Upgrade of an empty database = %+v, %v; want from 0, nothing removed", got, err)
	}
	if v := rawGet(t, db, keyLayout); string(v) != "4" {
		t.Fatalf("layout of a new database = %q, want 4", v)
	}
	if again, err := Upgrade(db); err != nil || again.From != Layout {
		t.Fatalf("Upgrade again = %+v, %v; want from %d", again, err, Layout)
	}
}

func equalHashes(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

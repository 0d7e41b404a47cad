package trail

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// fastAndRef runs the accelerated and the reference check of the global
// trail on the same snapshot.
func fastAndRef(t *testing.T, db *badger.DB) (fastOK bool, ref VerifyResult) {
	t.Helper()
	err := db.View(func(txn *badger.Txn) error {
		_, _, fastOK = verifyGlobalFast(context.Background(), txn)
		return verifyGlobalRef(context.Background(), txn, &ref)
	})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return fastOK, ref
}

// awkwardTrail appends interleaved workspace and system entries and a few
// whose bodies hold escapes, HTML characters and non-ASCII text.
func awkwardTrail(t *testing.T, tl *testLog) {
	t.Helper()
	tl.interleaved(60, "ws1", "ws2")
	for _, s := range []string{"line\nbreak", "<b>&amp;</b>", "é✓😀", "quote\"d", "\u2028"} {
		ev := tl.ev("ws1", "worker", EventCheckpointCreated)
		ev.Body.(map[string]any)["type"] = s
		tl.append(ev)
	}
	tl.interleaved(20, "ws3", "ws1")
}

// TestVerifyFastPathTakesWellFormedTrails: the accelerated check accepts
// what the daemon writes, awkward bodies included, so the reference only
// runs when something is wrong.
func TestVerifyFastPathTakesWellFormedTrails(t *testing.T) {
	tl := newMemLog(t)
	awkwardTrail(t, tl)
	fastOK, ref := fastAndRef(t, tl.db)
	if !fastOK || ref.Violation != "" {
		t.Fatalf("fast = %v, reference = %+v; want both ok", fastOK, ref)
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
		var orig []byte
		if err := tl.db.View(func(txn *badger.Txn) error {
			item, err := txn.Get(globalKey(seq))
			if err != nil {
				return err
			}
			orig, err = item.ValueCopy(nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		mut := append([]byte(nil), orig...)
		i := rng.IntN(len(mut))
		mut[i] ^= byte(1 + rng.IntN(255))
		setRaw(t, tl.db, globalKey(seq), mut)
		fastOK, ref := fastAndRef(t, tl.db)
		if fastOK && ref.Violation != "" {
			t.Fatalf("entry #%d byte %d changed (%q -> %q): fast path ok, reference %+v", seq, i, orig[i], mut[i], ref)
		}
		if !fastOK {
			caught++
		}
		setRaw(t, tl.db, globalKey(seq), orig)
	}
	if caught == 0 {
		t.Fatalf("no change of %d was caught", rounds)
	}
	if fastOK, ref := fastAndRef(t, tl.db); !fastOK || ref.Violation != "" {
		t.Fatalf("after restoring: fast = %v, reference = %+v", fastOK, ref)
	}
}

func setRaw(t *testing.T, db *badger.DB, key, val []byte) {
	t.Helper()
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(key, val) }); err != nil {
		t.Fatal(err)
	}
}

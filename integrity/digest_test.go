package integrity

import (
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestDigest: a write outside the trail changes both digests, a trail
// write only the whole one, and without withTrail the whole one is zero.
func TestDigest(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions(t.TempDir()).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	set := func(k, v string) {
		t.Helper()
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(k), []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	digest := func(withTrail bool) (all, state [32]byte) {
		t.Helper()
		err := db.View(func(txn *badger.Txn) error {
			var err error
			all, state, err = Digest(txn, withTrail)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return all, state
	}
	set("w/1", "a")
	a0, s0 := digest(true)
	set("t/g/1", "entry")
	a1, s1 := digest(true)
	if s1 != s0 || a1 == a0 {
		t.Fatal("a trail write: want only the whole digest changed")
	}
	set("w/1", "b")
	a2, s2 := digest(true)
	if s2 == s1 || a2 == a1 {
		t.Fatal("a state write: want both digests changed")
	}
	if a, s := digest(false); a != ([32]byte{}) || s != s2 {
		t.Fatal("without the trail: want no whole digest and the same state digest")
	}
}

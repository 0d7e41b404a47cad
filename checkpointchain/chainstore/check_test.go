package chainstore_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
)

// claimsOf returns the claims of s's checkpoints in the order fill stored
// them (their ids are in that order).
func claimsOf(s stored) []chainstore.Claim {
	var all []checkpointchain.Checkpoint
	for _, cps := range s.byWS {
		all = append(all, cps...)
	}
	slices.SortFunc(all, func(a, b checkpointchain.Checkpoint) int { return strings.Compare(a.ID, b.ID) })
	out := make([]chainstore.Claim, len(all))
	for i, c := range all {
		out[i] = chainstore.Claim{Entry: "e" + c.ID, ID: c.ID, Workspace: c.Workspace, Type: c.Type, Status: c.Status, Parent: c.ParentID(), Digest: c.Digest}
	}
	return out
}

// TestCheckStoreFirstProblem: the claims are checked in parallel, and the
// problem reported is the one of the first bad claim in trail order,
// whichever worker finds which first.
func TestCheckStoreFirstProblem(t *testing.T) {
	db := openDB(t, t.TempDir())
	s := fill(t, db)
	claims := claimsOf(s)
	check := func() *chainstore.StoreProblem {
		t.Helper()
		var p *chainstore.StoreProblem
		err := db.View(func(txn *badger.Txn) (err error) {
			p, err = chainstore.CheckStore(txn, claims)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := check(); p != nil {
		t.Fatalf("CheckStore of a sound store = %+v", p)
	}
	// Delete the objects of the fifth and the second claim, in that order.
	for _, i := range []int{4, 1} {
		if err := db.Update(func(txn *badger.Txn) error { return txn.Delete(casKey(claims[i].Digest)) }); err != nil {
			t.Fatal(err)
		}
		p := check()
		if p == nil || !p.Missing || p.Entry != claims[i].Entry {
			t.Errorf("after deleting the object of claim %d: %+v, want it missing", i, p)
		}
	}
}

// TestCheckStorePanicReachesCaller: Badger panics on some damaged blocks,
// and integrity recovers such a panic around its call to CheckStore. The
// claims are checked on goroutines of their own; a panic there must come
// back to the caller's goroutine, not end the process. A nil transaction
// makes every read panic.
func TestCheckStorePanicReachesCaller(t *testing.T) {
	db := openDB(t, t.TempDir())
	claims := claimsOf(fill(t, db))
	defer func() {
		if recover() == nil {
			t.Error("CheckStore with a transaction that panics returned; want its panic in this goroutine")
		}
	}()
	chainstore.CheckStore(nil, claims)
}

package chainstore_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore/badgerstore"
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
			p, err = chainstore.CheckStore(txn, nil, claims)
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
		if err := db.Update(func(txn *badger.Txn) error { return txn.Delete(badgerstore.Key(claims[i].Digest)) }); err != nil {
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
	chainstore.CheckStore(nil, nil, claims)
}

// TestCheckStoreProblems: each kind of damage CheckStore reads in its
// scans is reported at its record, with the claim it concerns.
func TestCheckStoreProblems(t *testing.T) {
	order := func(ws string, n byte) []byte { return append([]byte("k/w/"+ws+"/"), 0, 0, 0, 0, 0, 0, 0, n) }
	tests := []struct {
		name   string
		damage func(txn *badger.Txn, claims []chainstore.Claim) error
		// want: the problem's key and the index of its claim (-1: none)
		key     func(claims []chainstore.Claim) string
		claim   int
		object  bool
		missing bool
	}{
		{"index missing", func(txn *badger.Txn, cl []chainstore.Claim) error { return txn.Delete([]byte("k/c/" + cl[2].ID)) },
			func(cl []chainstore.Claim) string { return "k/c/" + cl[2].ID }, 2, false, false},
		{"index wrong", func(txn *badger.Txn, cl []chainstore.Claim) error {
			return txn.Set([]byte("k/c/"+cl[3].ID), []byte(`{"workspace":"wsA","n":9,"digest":"`+cl[3].Digest.String()+`"}`))
		}, func(cl []chainstore.Claim) string { return "k/c/" + cl[3].ID }, 3, false, false},
		{"index undecodable", func(txn *badger.Txn, cl []chainstore.Claim) error {
			return txn.Set([]byte("k/c/"+cl[1].ID), []byte(`{`))
		},
			func(cl []chainstore.Claim) string { return "k/c/" + cl[1].ID }, 1, false, false},
		{"order missing", func(txn *badger.Txn, cl []chainstore.Claim) error { return txn.Delete(order("wsB", 2)) },
			func(cl []chainstore.Claim) string { return "k/w/wsB/2" }, 4, false, false},
		{"order wrong", func(txn *badger.Txn, cl []chainstore.Claim) error { return txn.Set(order("wsA", 1), []byte(cl[2].ID)) },
			func(cl []chainstore.Claim) string { return "k/w/wsA/1" }, 0, false, false},
		{"object missing", func(txn *badger.Txn, cl []chainstore.Claim) error { return txn.Delete(badgerstore.Key(cl[5].Digest)) },
			func(cl []chainstore.Claim) string { return cl[5].Digest.String() }, 5, true, true},
		{"object corrupt", func(txn *badger.Txn, cl []chainstore.Claim) error {
			return txn.Set(badgerstore.Key(cl[1].Digest), []byte(`{}`))
		},
			func(cl []chainstore.Claim) string { return cl[1].Digest.String() }, 1, true, false},
		{"first claim first", func(txn *badger.Txn, cl []chainstore.Claim) error {
			if err := txn.Delete(badgerstore.Key(cl[4].Digest)); err != nil {
				return err
			}
			return txn.Delete(order("wsA", 2)) // claim 2's order record
		}, func(cl []chainstore.Claim) string { return "k/w/wsA/2" }, 2, false, false},
		{"index before object of one claim", func(txn *badger.Txn, cl []chainstore.Claim) error {
			if err := txn.Delete(badgerstore.Key(cl[3].Digest)); err != nil {
				return err
			}
			return txn.Set([]byte("k/c/"+cl[3].ID), []byte(`{`))
		}, func(cl []chainstore.Claim) string { return "k/c/" + cl[3].ID }, 3, false, false},
		{"register wrong", func(txn *badger.Txn, cl []chainstore.Claim) error {
			return txn.Set([]byte("k/h/wsB"), []byte(`{"head":"`+cl[1].ID+`","count":1,"last_final":""}`))
		}, func(cl []chainstore.Claim) string { return "k/h/wsB" }, -1, false, false},
		{"register missing", func(txn *badger.Txn, cl []chainstore.Claim) error { return txn.Delete([]byte("k/h/wsA")) },
			func(cl []chainstore.Claim) string { return "k/h/wsA" }, -1, false, false},
		{"register unaccounted", func(txn *badger.Txn, cl []chainstore.Claim) error {
			return txn.Set([]byte("k/h/wsC"), []byte(`{"head":"x","count":1,"last_final":""}`))
		}, func(cl []chainstore.Claim) string { return "k/h/wsC" }, -1, false, false},
		{"index unaccounted", func(txn *badger.Txn, cl []chainstore.Claim) error {
			return txn.Set([]byte("k/c/01JA0000000000000000009999"), []byte(`{}`))
		}, func(cl []chainstore.Claim) string { return "k/c/01JA0000000000000000009999" }, -1, false, false},
		{"order beyond the chain", func(txn *badger.Txn, cl []chainstore.Claim) error { return txn.Set(order("wsB", 3), []byte("x")) },
			func(cl []chainstore.Claim) string { return string(order("wsB", 3)) }, -1, false, false},
		{"unknown record", func(txn *badger.Txn, cl []chainstore.Claim) error { return txn.Set([]byte("k/z"), []byte("x")) },
			func(cl []chainstore.Claim) string { return "k/z" }, -1, false, false},
		// The records are read in two parts side by side (before k/h/, and
		// from it on): the first in key order is reported, whichever part
		// finds it first.
		{"first unaccounted in key order", func(txn *badger.Txn, cl []chainstore.Claim) error {
			if err := txn.Set([]byte("k/z"), []byte("x")); err != nil {
				return err
			}
			return txn.Set([]byte("k/d"), []byte("x"))
		}, func(cl []chainstore.Claim) string { return "k/d" }, -1, false, false},
		{"first unaccounted in key order, from k/h/ on", func(txn *badger.Txn, cl []chainstore.Claim) error {
			if err := txn.Set([]byte("k/z"), []byte("x")); err != nil {
				return err
			}
			return txn.Set([]byte("k/h/wsC"), []byte(`{"head":"x","count":1,"last_final":""}`))
		}, func(cl []chainstore.Claim) string { return "k/h/wsC" }, -1, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t, t.TempDir())
			claims := claimsOf(fill(t, db))
			if err := db.Update(func(txn *badger.Txn) error { return tt.damage(txn, claims) }); err != nil {
				t.Fatal(err)
			}
			var p *chainstore.StoreProblem
			err := db.View(func(txn *badger.Txn) (err error) {
				p, err = chainstore.CheckStore(txn, nil, claims)
				return err
			})
			if err != nil || p == nil {
				t.Fatalf("CheckStore = %+v, %v; want a problem", p, err)
			}
			entry := ""
			if tt.claim >= 0 {
				entry = claims[tt.claim].Entry
			}
			if p.Key != tt.key(claims) || p.Entry != entry || p.Object != tt.object || p.Missing != tt.missing || p.Detail == "" {
				t.Errorf("CheckStore = %+v; want key %q, entry %q, object %v, missing %v", p, tt.key(claims), entry, tt.object, tt.missing)
			}
		})
	}
}

// TestCheckStoreSharedDigest: two claims naming one object (and an index
// that agrees) is a problem of the later claim's object, not a missing
// object of the earlier.
func TestCheckStoreSharedDigest(t *testing.T) {
	db := openDB(t, t.TempDir())
	claims := claimsOf(fill(t, db))
	claims[4].Digest = claims[1].Digest // both of wsB
	err := db.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte("k/c/"+claims[4].ID), []byte(`{"workspace":"wsB","n":2,"digest":"`+claims[1].Digest.String()+`"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	var p *chainstore.StoreProblem
	err = db.View(func(txn *badger.Txn) (err error) {
		p, err = chainstore.CheckStore(txn, nil, claims)
		return err
	})
	if err != nil || p == nil {
		t.Fatalf("CheckStore = %+v, %v; want a problem", p, err)
	}
	if p.Entry != claims[4].Entry || p.Key != claims[1].Digest.String() || !p.Object || p.Missing || !strings.Contains(p.Detail, claims[1].ID) {
		t.Errorf("CheckStore = %+v; want claim 4's object, claimed by %s too", p, claims[1].ID)
	}
}

// TestCheckStoreClaimsOutOfIDOrder: claims whose ids do not ascend in
// trail order (each workspace's in chain order, the workspaces one after
// the other) are matched to their index records by id all the same: an
// undamaged store passes, a missing or an unaccounted index record is
// found.
func TestCheckStoreClaimsOutOfIDOrder(t *testing.T) {
	for _, damage := range []string{"", "index missing", "index unaccounted"} {
		t.Run(damage, func(t *testing.T) {
			db := openDB(t, t.TempDir())
			sorted := claimsOf(fill(t, db))
			claims := slices.Clone(sorted)
			slices.SortStableFunc(claims, func(a, b chainstore.Claim) int { return -strings.Compare(a.Workspace, b.Workspace) })
			if slices.IsSortedFunc(claims, func(a, b chainstore.Claim) int { return strings.Compare(a.ID, b.ID) }) {
				t.Fatal("the claims' ids ascend; the test wants them out of order")
			}
			victim := claims[len(claims)-1] // the last in trail order, not in id order
			wantKey := ""
			if err := db.Update(func(txn *badger.Txn) error {
				switch damage {
				case "index missing":
					wantKey = "k/c/" + victim.ID
					return txn.Delete([]byte(wantKey))
				case "index unaccounted":
					wantKey = "k/c/01JA0000000000000000009999"
					return txn.Set([]byte(wantKey), []byte(`{}`))
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var p *chainstore.StoreProblem
			if err := db.View(func(txn *badger.Txn) (err error) {
				p, err = chainstore.CheckStore(txn, nil, claims)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			switch {
			case wantKey == "" && p != nil:
				t.Fatalf("CheckStore of an undamaged store = %+v", p)
			case wantKey != "" && (p == nil || p.Key != wantKey):
				t.Fatalf("CheckStore = %+v, want a problem at %s", p, wantKey)
			}
		})
	}
}

// TestRegisterWrittenAtFirstAndFinal: the register is written with a
// chain's first checkpoint and each final one, not with the others;
// LoadChains gives the whole chain from the last order record, and
// CheckStore takes a register behind the chain when it is the chain at its
// position with the chain's last_final, and names one that is not.
func TestRegisterWrittenAtFirstAndFinal(t *testing.T) {
	db := openDB(t, t.TempDir())
	s := stored{byWS: map[string][]checkpointchain.Checkpoint{}, chains: map[string]checkpointchain.Chain{}}
	for i, st := range []string{"provisional", "final", "provisional", "provisional"} {
		id := fmt.Sprintf("01JA000000000000000000%04d", i+1)
		var c checkpointchain.Checkpoint
		c, s.chains["wsX"] = appendCheckpoint(t, db, "wsX", id, st, s.chains["wsX"])
		s.byWS["wsX"] = append(s.byWS["wsX"], c)
	}
	cps := s.byWS["wsX"]
	register := func() string {
		t.Helper()
		var v []byte
		err := db.View(func(txn *badger.Txn) error {
			item, err := txn.Get([]byte("k/h/wsX"))
			if err == nil {
				v, err = item.ValueCopy(nil)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	second := `{"head":"` + cps[1].ID + `","count":2,"last_final":"` + cps[1].ID + `"}`
	if got := register(); got != second {
		t.Fatalf("register after a final and two more = %s, want the chain at the final, %s", got, second)
	}
	checkStore(t, db, s) // LoadChains: the whole chain
	claims := claimsOf(s)
	check := func() *chainstore.StoreProblem {
		t.Helper()
		var p *chainstore.StoreProblem
		if err := db.View(func(txn *badger.Txn) (err error) { p, err = chainstore.CheckStore(txn, nil, claims); return err }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := check(); p != nil {
		t.Fatalf("CheckStore with the register behind = %+v, want none", p)
	}
	for _, bad := range []string{
		`{"head":"` + cps[0].ID + `","count":1}`, // the chain at 1, without the later final
		`{"head":"` + cps[0].ID + `","count":2,"last_final":"` + cps[1].ID + `"}`,
		`{"head":"` + cps[3].ID + `","count":5,"last_final":"` + cps[1].ID + `"}`,
		`{"count":0,"last_final":"` + cps[1].ID + `"}`,
	} {
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k/h/wsX"), []byte(bad)) }); err != nil {
			t.Fatal(err)
		}
		if p := check(); p == nil || p.Key != "k/h/wsX" {
			t.Errorf("CheckStore with register %s = %+v, want a problem at k/h/wsX", bad, p)
		}
	}
}

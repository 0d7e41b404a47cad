package chainstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore/badgerstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/taxonomy"
)

// TestObjectsInSegments: with segments the objects' bytes go to the
// segment files (Badger holds pointers); Get, List and CheckStore read
// them there, and CheckStore fails on a damaged block.
func TestObjectsInSegments(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	seg, _, err := seglog.Open(filepath.Join(dir, seglog.Dir), seglog.Pos{}, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	cps, claims := putInPairs(t, db, seg, []string{"01A", "01B", "01C", "01D", "01E"}, "work of ")
	err = db.View(func(txn *badger.Txn) error {
		got, err := chainstore.List(txn, seg, "wsS", 0, 10)
		if err != nil || len(got) != len(cps) {
			t.Fatalf("List: %d, %v", len(got), err)
		}
		for i := range got {
			if got[i].Digest != cps[i].Digest {
				t.Errorf("checkpoint %d: %s, want %s", i, got[i].Digest, cps[i].Digest)
			}
		}
		item, err := txn.Get(badgerstore.Key(cps[0].Digest))
		if err != nil || item.UserMeta() != seglog.Meta {
			t.Errorf("object in Badger: meta %d, %v; want a pointer", item.UserMeta(), err)
		}
		if p, err := chainstore.CheckStore(txn, seg, claims); p != nil || err != nil {
			t.Errorf("CheckStore: %+v, %v", p, err)
		}
		if _, err := chainstore.Get(txn, nil, cps[0].ID); !errors.Is(err, seglog.ErrNoLog) {
			t.Errorf("Get without segments: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seg.Close()
	// Damage the first block; read it afresh.
	f := filepath.Join(dir, seglog.Dir, "00000001.seg")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	data[20] ^= 1
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	end, err := seglog.End(db)
	if err != nil {
		t.Fatal(err)
	}
	seg, _, err = seglog.Open(filepath.Join(dir, seglog.Dir), end, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	db.View(func(txn *badger.Txn) error {
		if _, err := chainstore.CheckStore(txn, seg, claims); !errors.Is(err, seglog.ErrDamaged) {
			t.Errorf("CheckStore of a damaged block: %v", err)
		}
		return nil
	})
}

// TestStoreCheckInSteps: a StoreCheck checks each claim's object as the
// claim is added, from the block the caller has just read (a walk of the
// trail reads the claim's entry from it), so Finish reads no block again.
// Here seglog's cache holds one block: the blocks of the first claims are
// gone from it by Finish, and their bytes damaged in the file, which a
// second read would find.
func TestStoreCheckInSteps(t *testing.T) {
	// A cache of one block (each holds two objects of about 2.4 KB).
	db, seg, segDir, claims := sixInPairs(t, strings.Repeat("x", 2000), seglog.Options{CacheBytes: 6000})
	claims[2].Status = "final" // the trail says otherwise than the object
	for _, steps := range []bool{true, false} {
		db.View(func(txn *badger.Txn) error {
			var sc *chainstore.StoreCheck
			if steps {
				sc = chainstore.NewStoreCheck(txn, seg)
				sc.Close() // let it find the objects before the first Add
				for _, cl := range claims {
					if _, err := chainstore.Get(txn, seg, cl.ID); err != nil { // the walk reads the block
						t.Fatal(err)
					}
					sc.Add(cl)
				}
				damageFirstBlock(t, segDir)
				p, err := sc.Finish()
				if err != nil || p == nil || !p.Object || p.Entry != claims[2].Entry {
					t.Errorf("StoreCheck in steps: %+v, %v; want the object of claim 2, no read of the damaged block", p, err)
				}
				return nil
			}
			// All at once, the objects are read at the end, from the file.
			if _, err := chainstore.CheckStore(txn, seg, claims); !errors.Is(err, seglog.ErrDamaged) {
				t.Errorf("CheckStore after the damage: %v; want the damaged block", err)
			}
			return nil
		})
	}
}

// TestStoreCheckBeforeLocate: claims added while the scan of cas/ has not
// found the objects yet are checked at once too, their objects' pointers
// looked up, so that Finish reads no block again (the first block is
// damaged in the file before Finish, as in TestStoreCheckInSteps).
func TestStoreCheckBeforeLocate(t *testing.T) {
	db, seg, segDir, claims := sixInPairs(t, strings.Repeat("x", 2000), seglog.Options{CacheBytes: 6000})
	claims[2].Status = "final" // the trail says otherwise than the object
	db.View(func(txn *badger.Txn) error {
		release := chainstore.HoldLocate()
		sc := chainstore.NewStoreCheck(txn, seg)
		defer sc.Close()
		for _, cl := range claims {
			if _, err := chainstore.Get(txn, seg, cl.ID); err != nil { // the walk reads the block
				t.Fatal(err)
			}
			sc.Add(cl)
		}
		release()
		damageFirstBlock(t, segDir)
		p, err := sc.Finish()
		if err != nil || p == nil || !p.Object || p.Entry != claims[2].Entry {
			t.Errorf("claims added before the objects were located: %+v, %v; want the object of claim 2, no read of the damaged block", p, err)
		}
		return nil
	})
}

// sixInPairs stores six checkpoints of wsS two to a block (putInPairs) in
// a new database, and returns it with its segment files reopened with opts
// (nothing of them in memory), their directory and the claims.
func sixInPairs(t *testing.T, content string, opts seglog.Options) (*badger.DB, *seglog.Log, string, []chainstore.Claim) {
	t.Helper()
	dir := t.TempDir()
	db := openDB(t, dir)
	segDir := filepath.Join(dir, seglog.Dir)
	seg, _, err := seglog.Open(segDir, seglog.Pos{}, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, claims := putInPairs(t, db, seg, []string{"01A", "01B", "01C", "01D", "01E", "01F"}, content)
	seg.Close()
	end, err := seglog.End(db)
	if err != nil {
		t.Fatal(err)
	}
	if seg, _, err = seglog.Open(segDir, end, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seg.Close() })
	return db, seg, segDir, claims
}

// damageFirstBlock flips a byte of the first block of the first segment
// file, in place.
func damageFirstBlock(t *testing.T, segDir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(segDir, "00000001.seg"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 40); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1
	if _, err := f.WriteAt(b, 40); err != nil {
		t.Fatal(err)
	}
}

// putInPairs builds a chain of checkpoints of workspace wsS, one per id
// (content before the id in each payload), and stores them through seg two
// to a batch, so two share a block (a last odd one has a block of its
// own); it returns them and their claims.
func putInPairs(t *testing.T, db *badger.DB, seg *seglog.Log, ids []string, content string) ([]checkpointchain.Checkpoint, []chainstore.Claim) {
	t.Helper()
	var cps []checkpointchain.Checkpoint
	var claims []chainstore.Claim
	var ch checkpointchain.Chain
	var txn *badger.Txn
	for i, id := range ids {
		var parent *string
		if ch.Head != "" {
			parent = ptr(ch.Head)
		}
		a := worker
		a.Workspace = "wsS"
		c, b, err := checkpointchain.Build(req("artifact", parent, `{"content":"`+content+id+`","files_changed":["f.go"]}`), a, ch, taxonomy.Base(), id, ts1)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			txn = db.NewTransaction(true)
		}
		if ch, err = chainstore.Put(seg.Txn(txn), c, b, ch); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 || i == len(ids)-1 {
			blk, err := seg.Seal(txn)
			if err != nil {
				t.Fatal(err)
			}
			if err := seg.Write(blk); err != nil {
				t.Fatal(err)
			}
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		cps = append(cps, c)
		claims = append(claims, chainstore.Claim{Entry: "e" + id, ID: id, Workspace: "wsS", Type: c.Type, Status: c.Status, Parent: c.ParentID(), Digest: c.Digest})
	}
	return cps, claims
}

// TestStoreCheckFinishFindsWhatAddLeft: the objects Add could not check
// (their blocks are not in memory) are read by Finish from where locate
// found them, and a missing one is reported, as CheckStore reports them.
func TestStoreCheckFinishFindsWhatAddLeft(t *testing.T) {
	db, seg, _, claims := sixInPairs(t, "work of ", seglog.Options{})
	check := func(claims []chainstore.Claim) (steps, once *chainstore.StoreProblem) {
		t.Helper()
		db.View(func(txn *badger.Txn) error {
			sc := chainstore.NewStoreCheck(txn, seg)
			defer sc.Close()
			for _, cl := range claims {
				sc.Add(cl)
			}
			var err error
			if steps, err = sc.Finish(); err != nil {
				t.Fatal(err)
			}
			if once, err = chainstore.CheckStore(txn, seg, claims); err != nil {
				t.Fatal(err)
			}
			return nil
		})
		return steps, once
	}
	if steps, once := check(claims); steps != nil || once != nil {
		t.Fatalf("a sound store: in steps %+v, at once %+v", steps, once)
	}
	bad := slices.Clone(claims)
	bad[1].Status = "final" // the trail says otherwise than the object
	if steps, once := check(bad); steps == nil || !steps.Object || steps.Entry != bad[1].Entry || *steps != *once {
		t.Errorf("claim 1 contradicted by its object: in steps %+v, at once %+v", steps, once)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Delete(badgerstore.Key(claims[4].Digest)) }); err != nil {
		t.Fatal(err)
	}
	if steps, once := check(claims); steps == nil || !steps.Missing || steps.Entry != claims[4].Entry || *steps != *once {
		t.Errorf("claim 4's object deleted: in steps %+v, at once %+v", steps, once)
	}
}

// TestStoreCheckHashesEveryObject: an object whose bytes still name the
// claim (id, workspace, type, status, parent) but whose content changed is
// found by its hash alone, whether Add checks it from the cache (batched
// with the others) or Finish reads it (in steps and at once alike).
func TestStoreCheckHashesEveryObject(t *testing.T) {
	db, seg, _, claims := sixInPairs(t, "work of ", seglog.Options{})
	orig, err := func() (b []byte, err error) {
		err = db.View(func(txn *badger.Txn) error {
			b, err = badgerstore.GetTxn(txn, seg, claims[3].Digest)
			return err
		})
		return b, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	changed := []byte(strings.Replace(string(orig), "work of ", "work on ", 1))
	if string(changed) == string(orig) {
		t.Fatal("the object's content was not found")
	}
	// A later block holds the changed bytes under the object's digest.
	txn := db.NewTransaction(true)
	if err := badgerstore.PutSealedTxn(seg.Txn(txn), claims[3].Digest, changed); err != nil {
		t.Fatal(err)
	}
	blk, err := seg.Seal(txn)
	if err == nil {
		err = seg.Write(blk)
	}
	if err == nil {
		err = txn.Commit()
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, cached := range []bool{true, false} {
		db.View(func(txn *badger.Txn) error {
			sc := chainstore.NewStoreCheck(txn, seg)
			defer sc.Close()
			sc.Close() // the objects are located before the first Add
			for _, cl := range claims {
				if cached {
					chainstore.Get(txn, seg, cl.ID) // the walk reads the block (claim 3's fails its hash)
				}
				sc.Add(cl)
			}
			steps, err := sc.Finish()
			if err != nil {
				t.Fatal(err)
			}
			once, err := chainstore.CheckStore(txn, seg, claims)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []*chainstore.StoreProblem{steps, once} {
				if p == nil || !p.Object || p.Entry != claims[3].Entry || p.Key != claims[3].Digest.String() {
					t.Errorf("cached %v: %+v; want claim 3's object, by its hash", cached, p)
				}
			}
			return nil
		})
	}
}

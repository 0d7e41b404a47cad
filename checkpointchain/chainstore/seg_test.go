package chainstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"

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
	var cps []checkpointchain.Checkpoint
	var claims []chainstore.Claim
	var ch checkpointchain.Chain
	var txn *badger.Txn
	for i, id := range []string{"01A", "01B", "01C", "01D", "01E"} {
		var parent *string
		if ch.Head != "" {
			parent = ptr(ch.Head)
		}
		r := req("artifact", parent, `{"content":"work of `+id+`","files_changed":["f.go"]}`)
		a := worker
		a.Workspace = "wsS"
		c, b, err := checkpointchain.Build(r, a, ch, taxonomy.Base(), id, ts1)
		if err != nil {
			t.Fatal(err)
		}
		// Two checkpoints to a batch, so two share a block.
		if i%2 == 0 {
			txn = db.NewTransaction(true)
		}
		if ch, err = chainstore.Put(seg.Txn(txn), c, b, ch); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 || i == 4 {
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
		item, err := txn.Get(casKey(cps[0].Digest))
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

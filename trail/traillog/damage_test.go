package traillog

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/fb"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/transparency-dev/merkle/proof"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/trail"
)

// blockTrailers returns, for each block of the uncompressed table file b
// but its last, the offset of the block's entry count (the uint32 before
// its checksum). Layout (badger/v4 table/builder.go): each block ends with
// the entry offsets, the entry count, the checksum and the checksum's
// length; the file ends with the index (a flatbuffer listing the blocks),
// its length, its checksum and the checksum's length.
func blockTrailers(t *testing.T, b []byte) []int {
	t.Helper()
	pos := len(b) - 4
	chkLen := int(binary.BigEndian.Uint32(b[pos:]))
	pos -= chkLen + 4
	indexLen := int(binary.BigEndian.Uint32(b[pos:]))
	index := fb.GetRootAsTableIndex(b[pos-indexLen:pos], 0)
	var out []int
	var bo fb.BlockOffset
	for i := 0; i < index.OffsetsLength()-1; i++ { // Badger reads the last block when it opens the table
		if !index.Offsets(&bo, i) {
			t.Fatalf("block %d: no offset", i)
		}
		end := int(bo.Offset() + bo.Len())
		blockChk := int(binary.BigEndian.Uint32(b[end-4:]))
		out = append(out, end-4-blockChk-4)
	}
	return out
}

// TestDamagedBlockIsAFindingNotAPanic gives each block of the trail's table
// file in turn an impossible entry count, which makes Badger index past the
// block and panic when it reads it (before its checksum is checked). Reading
// the trail through such a block must not panic: Check reports the damage,
// and the Merkle proofs and roots either come back right or as an error
// (ErrDamaged or a missing node), never as a panic or a wrong proof.
func TestDamagedBlockIsAFindingNotAPanic(t *testing.T) {
	dir := t.TempDir()
	opts := badger.DefaultOptions(dir).WithLogger(nil).WithCompression(options.None).
		WithChecksumVerificationMode(options.OnBlockRead)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{t: t, dir: dir, db: db, clk: newTestClock(), ids: clock.NewIDs(nil)}
	if tl.log, err = Open(db, nil); err != nil {
		t.Fatal(err)
	}
	const n = 300
	tl.interleaved(n, "w1", "w2", "w3")
	root, err := tl.log.Root(n)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) != 1 {
		t.Fatalf("%d table files, want 1", len(ssts))
	}
	orig, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	trailers := blockTrailers(t, orig)
	if len(trailers) < 5 {
		t.Fatalf("%d blocks, want more", len(trailers))
	}
	found := 0
	for i, off := range trailers {
		b := bytes.Clone(orig)
		binary.BigEndian.PutUint32(b[off:], 0x7fffffff)
		if err := os.WriteFile(ssts[0], b, 0o644); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("block %d damaged: panic: %v", i, p)
				}
			}()
			db, err := badger.Open(opts.WithReadOnly(true))
			if err != nil {
				return // refused: fine
			}
			defer db.Close()
			res, err := Check(context.Background(), db, CheckOptions{Full: true, SignedSize: n, SignedRoot: root})
			if err != nil {
				t.Errorf("block %d damaged: Check: %v", i, err)
				return
			}
			if !res.OK() {
				found++
			}
			l, err := Open(db, nil)
			if err != nil {
				return // the heads or nodes it reads at open are damaged: an error
			}
			for idx := uint64(0); idx < n; idx += 7 {
				p, err := l.InclusionProof(idx, n)
				if err != nil {
					continue
				}
				e, err := l.At(idx + 1)
				if err != nil {
					continue
				}
				leaf, _ := trail.LeafData(e)
				if err := proof.VerifyInclusion(trail.Hasher{}, idx, n, trail.Hasher{}.HashLeaf(leaf), p, root); err != nil {
					t.Errorf("block %d damaged: InclusionProof(%d, %d) served a wrong proof: %v", i, idx, n, err)
				}
			}
		}()
	}
	if found == 0 {
		t.Errorf("no damaged block was reported by Check (%d blocks)", len(trailers))
	}
	t.Logf("%d blocks damaged one at a time, %d reported by Check", len(trailers), found)
}

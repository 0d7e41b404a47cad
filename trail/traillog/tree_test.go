package traillog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/transparency-dev/merkle/proof"

	"github.com/wacpd/wacpd/trail"
)

// refRoot computes the RFC 6962 root of leaves by the definition (MTH), to
// check the stored tree against an independent computation.
func refRoot(leaves [][]byte) []byte {
	h := trail.Hasher{}
	switch len(leaves) {
	case 0:
		return h.EmptyRoot()
	case 1:
		return h.HashLeaf(leaves[0])
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	return h.HashChildren(refRoot(leaves[:k]), refRoot(leaves[k:]))
}

// TestMerkleProofsEverySize appends 300 entries one commit at a time and,
// at every size, checks the root against the definition, every inclusion
// proof (and that it fails for a wrong entry, index or size), and a
// consistency proof from every smaller size.
func TestMerkleProofsEverySize(t *testing.T) {
	tl := newMemLog(t)
	h := trail.Hasher{}
	var leaves [][]byte
	for size := uint64(1); size <= 300; size++ {
		e := tl.append(tl.wsEv("ws-a"))[0]
		leaf, err := trail.LeafData(e)
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, leaf)
		root, err := tl.log.Root(size)
		if err != nil {
			t.Fatal(err)
		}
		if want := refRoot(leaves); !bytes.Equal(root, want) {
			t.Fatalf("Root(%d) = %x, want %x", size, root, want)
		}
		// Inclusion proofs of a sample of leaves (all of them for small sizes).
		for i := uint64(0); i < size; i++ {
			if size > 40 && i%17 != 0 && i != size-1 {
				continue
			}
			p, err := tl.log.InclusionProof(i, size)
			if err != nil {
				t.Fatalf("InclusionProof(%d, %d): %v", i, size, err)
			}
			lh := h.HashLeaf(leaves[i])
			if err := proof.VerifyInclusion(h, i, size, lh, p, root); err != nil {
				t.Fatalf("VerifyInclusion(%d, %d): %v", i, size, err)
			}
			if size > 1 {
				wrong := h.HashLeaf(leaves[(i+1)%size])
				if proof.VerifyInclusion(h, i, size, wrong, p, root) == nil {
					t.Fatalf("inclusion proof (%d, %d) verifies the wrong entry", i, size)
				}
				if proof.VerifyInclusion(h, (i+1)%size, size, lh, p, root) == nil {
					t.Fatalf("inclusion proof (%d, %d) verifies at the wrong index", i, size)
				}
			}
			if i < size-1 && proof.VerifyInclusion(h, i, size-1, lh, p, refRoot(leaves[:size-1])) == nil {
				t.Fatalf("inclusion proof (%d, %d) verifies in the tree of size %d", i, size, size-1)
			}
		}
		// Consistency from every smaller size (a sample for large sizes).
		for from := uint64(1); from < size; from++ {
			if size > 40 && from%13 != 0 {
				continue
			}
			p, err := tl.log.ConsistencyProof(from, size)
			if err != nil {
				t.Fatalf("ConsistencyProof(%d, %d): %v", from, size, err)
			}
			old := refRoot(leaves[:from])
			if err := proof.VerifyConsistency(h, from, size, p, old, root); err != nil {
				t.Fatalf("VerifyConsistency(%d, %d): %v", from, size, err)
			}
			if proof.VerifyConsistency(h, from, size, p, refRoot(leaves[:from+1]), root) == nil {
				t.Fatalf("consistency proof (%d, %d) verifies a wrong old root", from, size)
			}
		}
	}
	if _, err := tl.log.InclusionProof(300, 300); !errors.Is(err, ErrTreeSize) {
		t.Fatalf("InclusionProof(300, 300) = %v, want ErrTreeSize", err)
	}
	if _, err := tl.log.Root(301); !errors.Is(err, ErrTreeSize) {
		t.Fatalf("Root(301) = %v, want ErrTreeSize", err)
	}
}

// TestMerkleTreeSurvivesReopen and backfill: the tree is rebuilt from its
// stored nodes, or from the entries when the nodes are missing.
func TestMerkleTreeSurvivesReopen(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(37, "a", "b")
	want, err := tl.log.Root(37)
	if err != nil {
		t.Fatal(err)
	}
	tl.reopen()
	if got, err := tl.log.Root(37); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Root after reopen = %x, %v; want %x", got, err, want)
	}
	// Drop every stored node: Open backfills them from the entries.
	if err := tl.db.DropPrefix(prefixNode); err != nil {
		t.Fatal(err)
	}
	tl.reopen()
	if got, err := tl.log.Root(37); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Root after backfill = %x, %v; want %x", got, err, want)
	}
	if _, err := tl.log.InclusionProof(5, 20); err != nil {
		t.Fatalf("InclusionProof after backfill: %v", err)
	}
}

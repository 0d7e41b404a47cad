package auditor_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/transparency-dev/merkle/testonly"
	"github.com/zeebo/blake3"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/trail"
)

const maxTree = 300

// entryHashes returns n made-up global entry hashes, and one more that is
// not among them.
func entryHashes(n int) (hashes []string, outsider string) {
	for i := range n + 1 {
		sum := blake3.Sum256(binary.BigEndian.AppendUint64([]byte("entry"), uint64(i)))
		hashes = append(hashes, trail.FormatHash(sum[:]))
	}
	return hashes[:n], hashes[n]
}

// mth is RFC 6962's Merkle Tree Hash as docs/audit.md states it, written
// from the definition with BLAKE3 directly: leaf = BLAKE3(0x00 || entry
// hash bytes), node = BLAKE3(0x01 || left || right) splitting at the
// largest power of two below n, empty = BLAKE3("").
func mth(t *testing.T, hashes []string) []byte {
	switch len(hashes) {
	case 0:
		s := blake3.Sum256(nil)
		return s[:]
	case 1:
		b, err := trail.HashBytes(hashes[0])
		if err != nil {
			t.Fatal(err)
		}
		s := blake3.Sum256(append([]byte{0x00}, b...))
		return s[:]
	}
	k := 1
	for k*2 < len(hashes) {
		k *= 2
	}
	s := blake3.Sum256(append(append([]byte{0x01}, mth(t, hashes[:k])...), mth(t, hashes[k:])...))
	return s[:]
}

func formatAll(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = trail.FormatHash(b)
	}
	return out
}

// tree returns a reference tree (transparency-dev's testonly) over
// hashes, and the root of every size 0..len(hashes).
func tree(t *testing.T, hashes []string) (*testonly.Tree, []string) {
	tr := testonly.New(trail.Hasher{})
	roots := []string{trail.FormatHash(trail.Hasher{}.EmptyRoot())}
	for _, h := range hashes {
		b, err := trail.HashBytes(h)
		if err != nil {
			t.Fatal(err)
		}
		tr.AppendData(b)
		roots = append(roots, trail.FormatHash(tr.Hash()))
	}
	return tr, roots
}

func TestRoot(t *testing.T) {
	hashes, _ := entryHashes(maxTree)
	_, roots := tree(t, hashes)
	for size := 0; size <= maxTree; size++ {
		got, err := auditor.Root(hashes[:size])
		if want := trail.FormatHash(mth(t, hashes[:size])); err != nil || got != want || got != roots[size] {
			t.Fatalf("Root(%d hashes) = %s, %v; want %s (definition) = %s (testonly)", size, got, err, want, roots[size])
		}
	}
	if _, err := auditor.Root([]string{"blake3:00"}); err == nil {
		t.Errorf("Root(malformed hash) = nil error, want one")
	}
}

// TestInclusionProofs: for every size 1..300 and every index, the proof
// verifies, and fails for a wrong entry, a wrong index and a wrong size
// (with that size's root).
func TestInclusionProofs(t *testing.T) {
	t.Parallel()
	hashes, outsider := entryHashes(maxTree + 1)
	tr, roots := tree(t, hashes)
	bad := func(err error) bool { return errors.Is(err, auditor.ErrProof) }
	for size := uint64(1); size <= maxTree; size++ {
		root := roots[size]
		for index := range size {
			p, err := tr.InclusionProof(index, size)
			if err != nil {
				t.Fatal(err)
			}
			path := formatAll(p)
			if err := auditor.VerifyInclusion(hashes[index], index, size, path, root); err != nil {
				t.Fatalf("VerifyInclusion(leaf %d, size %d) = %v, want nil", index, size, err)
			}
			if err := auditor.VerifyInclusion(outsider, index, size, path, root); !bad(err) {
				t.Fatalf("VerifyInclusion(another entry at %d, size %d) = %v, want ErrProof", index, size, err)
			}
			if size > 1 {
				other := (index + 1) % size
				if err := auditor.VerifyInclusion(hashes[index], other, size, path, root); !bad(err) {
					t.Fatalf("VerifyInclusion(leaf %d claimed at %d, size %d) = %v, want ErrProof", index, other, size, err)
				}
				if err := auditor.VerifyInclusion(hashes[other], index, size, path, root); !bad(err) {
					t.Fatalf("VerifyInclusion(leaf %d with leaf %d's proof, size %d) = %v, want ErrProof", other, index, size, err)
				}
			}
			if err := auditor.VerifyInclusion(hashes[index], index, size, path, roots[size+1]); !bad(err) {
				t.Fatalf("VerifyInclusion(leaf %d, size %d, root of size %d) = %v, want ErrProof", index, size, size+1, err)
			}
			for _, wrong := range []uint64{size + 1, size - 1} {
				if wrong > index && wrong != size {
					if err := auditor.VerifyInclusion(hashes[index], index, wrong, path, roots[wrong]); !bad(err) {
						t.Fatalf("VerifyInclusion(leaf %d, proof of size %d as size %d) = %v, want ErrProof", index, size, wrong, err)
					}
				}
			}
			if index == size-1 {
				if err := auditor.VerifyInclusion(hashes[index], size, size, path, root); !bad(err) {
					t.Fatalf("VerifyInclusion(index %d = size) = %v, want ErrProof", size, err)
				}
			}
			if len(path) > 0 {
				short := path[:len(path)-1]
				if err := auditor.VerifyInclusion(hashes[index], index, size, short, root); !bad(err) {
					t.Fatalf("VerifyInclusion(leaf %d, size %d, truncated proof) = %v, want ErrProof", index, size, err)
				}
			}
		}
	}
	if err := auditor.VerifyInclusion("blake3:xyz", 0, 1, nil, roots[1]); !bad(err) {
		t.Errorf("VerifyInclusion(malformed entry hash) = %v, want ErrProof", err)
	}
}

// TestConsistencyProofs: for every pair of sizes 1 <= from <= to <= 300
// the proof verifies, and fails for a wrong root or size.
func TestConsistencyProofs(t *testing.T) {
	t.Parallel()
	hashes, _ := entryHashes(maxTree + 1)
	tr, roots := tree(t, hashes)
	bad := func(err error) bool { return errors.Is(err, auditor.ErrProof) }
	for to := uint64(1); to <= maxTree; to++ {
		for from := uint64(1); from <= to; from++ {
			p, err := tr.ConsistencyProof(from, to)
			if err != nil {
				t.Fatal(err)
			}
			path := formatAll(p)
			if err := auditor.VerifyConsistency(from, to, path, roots[from], roots[to]); err != nil {
				t.Fatalf("VerifyConsistency(%d, %d) = %v, want nil", from, to, err)
			}
			if err := auditor.VerifyConsistency(from, to, path, roots[from-1], roots[to]); !bad(err) {
				t.Fatalf("VerifyConsistency(%d, %d, root of %d) = %v, want ErrProof", from, to, from-1, err)
			}
			if err := auditor.VerifyConsistency(from, to, path, roots[from], roots[to+1]); !bad(err) {
				t.Fatalf("VerifyConsistency(%d, %d, to root of %d) = %v, want ErrProof", from, to, to+1, err)
			}
			if from < to {
				if err := auditor.VerifyConsistency(from+1, to, path, roots[from+1], roots[to]); !bad(err) {
					t.Fatalf("VerifyConsistency(proof %d->%d as %d->%d) = %v, want ErrProof", from, to, from+1, to, err)
				}
			}
			if err := auditor.VerifyConsistency(from, to+1, path, roots[from], roots[to+1]); !bad(err) {
				t.Fatalf("VerifyConsistency(proof %d->%d as %d->%d) = %v, want ErrProof", from, to, from, to+1, err)
			}
		}
	}
}

// TestEngineProofs checks the daemon's own Merkle tree (traillog.Log) with
// the verifier: its roots are the roots of its entries, and its inclusion
// and consistency proofs verify.
func TestEngineProofs(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	smallTrail(t, e)
	l := e.Trail()
	entries := readAll(t, l)
	hashes := make([]string, len(entries))
	for i, en := range entries {
		hashes[i] = en.Integrity.EntryHash
	}
	n := uint64(len(entries))
	roots := make([]string, n+1)
	for size := uint64(0); size <= n; size++ {
		r, err := l.Root(size)
		if err != nil {
			t.Fatal(err)
		}
		roots[size] = trail.FormatHash(r)
		if want, _ := auditor.Root(hashes[:size]); roots[size] != want {
			t.Fatalf("traillog.Log.Root(%d) = %s, want %s", size, roots[size], want)
		}
	}
	for size := uint64(1); size <= n; size++ {
		for index := range size {
			p, err := l.InclusionProof(index, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := auditor.VerifyInclusion(hashes[index], index, size, formatAll(p), roots[size]); err != nil {
				t.Errorf("traillog.Log.InclusionProof(%d, %d) does not verify: %v", index, size, err)
			}
		}
		for from := uint64(1); from <= size; from++ {
			p, err := l.ConsistencyProof(from, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := auditor.VerifyConsistency(from, size, formatAll(p), roots[from], roots[size]); err != nil {
				t.Errorf("traillog.Log.ConsistencyProof(%d, %d) does not verify: %v", from, size, err)
			}
		}
	}
}

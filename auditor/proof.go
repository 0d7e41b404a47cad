package auditor

import (
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/wacpd/wacpd/trail"
)

// LeafHash returns the Merkle leaf hash of the entry whose global
// entry_hash is entryHash: BLAKE3(0x00 || the 32 bytes of entryHash).
func LeafHash(entryHash string) ([]byte, error) {
	b, err := trail.HashBytes(entryHash)
	if err != nil {
		return nil, err
	}
	return trail.Hasher{}.HashLeaf(b), nil
}

var rangeFactory = &compact.RangeFactory{Hash: trail.Hasher{}.HashChildren}

// Root returns the Merkle root of the trail whose global entry hashes are
// entryHashes, in order ("blake3:<hex>").
func Root(entryHashes []string) (string, error) {
	rng := rangeFactory.NewEmptyRange(0)
	for i, h := range entryHashes {
		leaf, err := LeafHash(h)
		if err != nil {
			return "", fmt.Errorf("entry #%d: %w", i+1, err)
		}
		if err := rng.Append(leaf, nil); err != nil {
			return "", err
		}
	}
	if len(entryHashes) == 0 {
		return trail.FormatHash(trail.Hasher{}.EmptyRoot()), nil
	}
	root, err := rng.GetRootHash(nil)
	if err != nil {
		return "", err
	}
	return trail.FormatHash(root), nil
}

// VerifyInclusion checks an inclusion proof (RFC 6962 §2.1.1, with
// trail.Hasher): that the entry whose global entry_hash is entryHash is
// leaf index (entry #index+1) of the tree of size entries whose root is
// root. Hashes are "blake3:<hex>" strings, as the audit endpoints send them.
// It returns an error wrapping ErrProof if the proof does not verify.
func VerifyInclusion(entryHash string, index, size uint64, path []string, root string) error {
	leaf, err := LeafHash(entryHash)
	if err != nil {
		return fmt.Errorf("%w: entry hash: %v", ErrProof, err)
	}
	p, err := decodeHashes(path)
	if err != nil {
		return err
	}
	r, err := trail.HashBytes(root)
	if err != nil {
		return fmt.Errorf("%w: root: %v", ErrProof, err)
	}
	if err := proof.VerifyInclusion(trail.Hasher{}, index, size, leaf, p, r); err != nil {
		return fmt.Errorf("%w: inclusion of leaf %d in tree size %d: %v", ErrProof, index, size, err)
	}
	return nil
}

// VerifyConsistency checks a consistency proof (RFC 6962 §2.1.2, with
// trail.Hasher): that the tree of size from with root fromRoot is a prefix
// of the tree of size to with root toRoot. It returns an error wrapping
// ErrProof if the proof does not verify.
func VerifyConsistency(from, to uint64, path []string, fromRoot, toRoot string) error {
	p, err := decodeHashes(path)
	if err != nil {
		return err
	}
	r1, err := trail.HashBytes(fromRoot)
	if err != nil {
		return fmt.Errorf("%w: from root: %v", ErrProof, err)
	}
	r2, err := trail.HashBytes(toRoot)
	if err != nil {
		return fmt.Errorf("%w: to root: %v", ErrProof, err)
	}
	if err := proof.VerifyConsistency(trail.Hasher{}, from, to, p, r1, r2); err != nil {
		return fmt.Errorf("%w: consistency of size %d with size %d: %v", ErrProof, from, to, err)
	}
	return nil
}

func decodeHashes(hs []string) ([][]byte, error) {
	out := make([][]byte, len(hs))
	for i, h := range hs {
		b, err := trail.HashBytes(h)
		if err != nil {
			return nil, fmt.Errorf("%w: proof hash %d: %v", ErrProof, i, err)
		}
		out[i] = b
	}
	return out, nil
}

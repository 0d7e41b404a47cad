package trail

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/transparency-dev/merkle"
	"github.com/transparency-dev/merkle/compact"
	"github.com/zeebo/blake3"
)

// Hasher is RFC 6962 §2.1 Merkle tree hashing with BLAKE3-256 in place of
// SHA-256: a leaf hashes as BLAKE3(0x00 || leaf), an interior node as
// BLAKE3(0x01 || left || right), the empty tree as BLAKE3("").
type Hasher struct{}

var _ merkle.LogHasher = Hasher{}

// EmptyRoot returns the root of the empty tree.
func (Hasher) EmptyRoot() []byte {
	s := blake3.Sum256(nil)
	return s[:]
}

// HashLeaf returns the hash of a leaf.
func (Hasher) HashLeaf(leaf []byte) []byte {
	if len(leaf) <= 64 { // an entry hash: no hasher to allocate
		var b [65]byte
		b[0] = 0x00
		n := copy(b[1:], leaf)
		s := blake3.Sum256(b[:1+n])
		return s[:]
	}
	h := blake3.New()
	h.Write([]byte{0x00})
	h.Write(leaf)
	return h.Sum(nil)
}

// HashChildren returns the hash of an interior node.
func (Hasher) HashChildren(l, r []byte) []byte {
	if len(l)+len(r) <= 64 { // two node hashes
		var b [65]byte
		b[0] = 0x01
		n := copy(b[1:], l)
		n += copy(b[1+n:], r)
		s := blake3.Sum256(b[:1+n])
		return s[:]
	}
	h := blake3.New()
	h.Write([]byte{0x01})
	h.Write(l)
	h.Write(r)
	return h.Sum(nil)
}

// Size returns 32.
func (Hasher) Size() int { return 32 }

// LeafData returns the Merkle leaf of an entry: the 32 bytes of its global
// entry_hash. The tree's leaf i is entry #i+1 of the global trail.
func LeafData(e Entry) ([]byte, error) { return HashBytes(e.Integrity.EntryHash) }

// HashBytes decodes a "blake3:<hex>" hash into its 32 bytes.
func HashBytes(h string) ([]byte, error) {
	hexPart, ok := strings.CutPrefix(h, "blake3:")
	if !ok || len(hexPart) != 64 {
		return nil, fmt.Errorf("trail: %q is not a blake3 hash", h)
	}
	return hex.DecodeString(hexPart)
}

// FormatHash prints 32 hash bytes as "blake3:<hex>".
func FormatHash(b []byte) string { return "blake3:" + hex.EncodeToString(b) }

// RangeFactory builds compact ranges with Hasher.
var RangeFactory = &compact.RangeFactory{Hash: Hasher{}.HashChildren}

package casstore

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/zeebo/blake3"
)

const (
	refPrefix  = "blake3:"
	refTextLen = len(refPrefix) + 2*len(Ref{}.sum)
)

// Ref is the address of an object: its BLAKE3-256 sum. Refs are comparable
// and can be used as map keys. The zero Ref addresses nothing; it prints as
// "blake3:" followed by 64 zeros.
type Ref struct{ sum [32]byte }

// RefOf returns the Ref of b: the address of content in the store. It is
// not the module's only hash: the trail hashes its entries and Merkle
// nodes with BLAKE3 too (trail.Hash, trail.Hasher), and tokens are stored
// as their SHA-256.
func RefOf(b []byte) Ref { return Ref{sum: blake3.Sum256(b)} }

// Parse parses the text form of a Ref: "blake3:" followed by exactly 64
// lowercase hex digits. Any other input returns an error wrapping
// ErrInvalidRef.
func Parse(s string) (Ref, error) {
	if len(s) < len(refPrefix) || s[:len(refPrefix)] != refPrefix {
		return Ref{}, invalidRef(s, `want prefix "blake3:"`)
	}
	if len(s) != refTextLen {
		return Ref{}, invalidRef(s, "want 64 hex digits")
	}
	var r Ref
	h := s[len(refPrefix):]
	for i := range r.sum {
		hi, ok1 := unhex(h[2*i])
		lo, ok2 := unhex(h[2*i+1])
		if !ok1 || !ok2 {
			return Ref{}, invalidRef(s, "want lowercase hex digits")
		}
		r.sum[i] = hi<<4 | lo
	}
	return r, nil
}

// MustParse is like Parse but panics if s is not a valid Ref. It is meant for
// constants in tests and examples.
func MustParse(s string) Ref {
	r, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return r
}

// FromBytes returns the Ref whose raw sum is b, which must be 32 bytes long.
// It is the inverse of Ref.Bytes.
func FromBytes(b []byte) (Ref, error) {
	var r Ref
	if len(b) != len(r.sum) {
		return Ref{}, fmt.Errorf("%w: %d raw bytes, want %d", ErrInvalidRef, len(b), len(r.sum))
	}
	copy(r.sum[:], b)
	return r, nil
}

// String returns the text form of r, "blake3:" followed by 64 lowercase hex
// digits.
func (r Ref) String() string {
	b, _ := r.AppendText(make([]byte, 0, refTextLen))
	return string(b)
}

// IsZero reports whether r is the zero Ref.
func (r Ref) IsZero() bool { return r == Ref{} }

// Bytes returns a copy of the 32 raw bytes of r's sum.
func (r Ref) Bytes() []byte { return bytes.Clone(r.sum[:]) }

// Sum returns the 32 bytes of the digest by value (no allocation).
func (r Ref) Sum() [32]byte { return r.sum }

// Compare returns -1, 0 or +1 as r sorts before, equal to or after o, in
// the byte order of their sums (the same as the order of their text forms).
func (r Ref) Compare(o Ref) int { return bytes.Compare(r.sum[:], o.sum[:]) }

// AppendText implements encoding.TextAppender.
func (r Ref) AppendText(b []byte) ([]byte, error) {
	b = append(b, refPrefix...)
	return hex.AppendEncode(b, r.sum[:]), nil
}

// MarshalText implements encoding.TextMarshaler; JSON encodes a Ref as its
// String form.
func (r Ref) MarshalText() ([]byte, error) { return r.AppendText(nil) }

// UnmarshalText implements encoding.TextUnmarshaler with Parse. On error r
// is left unchanged.
func (r *Ref) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// invalidRef builds a Parse error; it quotes at most 100 bytes of s so that
// hostile input cannot make log lines arbitrarily long.
func invalidRef(s, why string) error {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidRef, s, why)
}

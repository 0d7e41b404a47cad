package traillog

import (
	"github.com/transparency-dev/merkle/compact"

	"github.com/wacpd/wacpd/internal/blake3x"
	"github.com/wacpd/wacpd/trail"
)

// subtrees appends leaves (entry hashes, trail.LeafData) to rng as a
// sequence of compact.Range.Append calls would, with the same visits in
// the same order per level, but hashes the tree side by side: the leaves'
// hashes in one call of blake3x.Sum256Many, then each perfect subtree that
// starts at the range's end, level by level. A leaf and a node are hashed
// one at a time otherwise (trail.Hasher through zeebo/blake3), and those
// hashes were a tenth of a verify's CPU. stop, when above the range's end,
// is a size the range must stop at (the signed size, whose root is then
// checked): atStop is called there. It returns false as soon as visit or
// atStop reports a problem (ok false).
type subtrees struct {
	msgs [][]byte // reused: the messages of one level
	buf  []byte   // reused: their bytes
}

// append is subtrees' work for one chunk of leaves.
func (s *subtrees) append(rng *compact.Range, leaves [][32]byte, stop uint64, visit compact.VisitFn, ok func() bool, atStop func() bool) bool {
	hashes := make([][32]byte, len(leaves)) // not reused: rng keeps slices of its roots
	s.hash(0x00, len(leaves), func(i int) ([]byte, []byte) { return leaves[i][:], nil }, hashes)
	for i := 0; i < len(hashes); {
		end := rng.End()
		room := uint64(len(hashes) - i)
		if stop > end && stop-end < room {
			room = stop - end
		}
		size := uint64(1) // the largest perfect subtree at end within room
		for size*2 <= room && end%(size*2) == 0 {
			size *= 2
		}
		root := s.subtree(end, hashes[i:i+int(size)], visit)
		var err error
		if size == 1 {
			err = rng.Append(root, visit)
		} else {
			var sub *compact.Range
			if sub, err = trail.RangeFactory.NewRange(end, end+size, [][]byte{root}); err == nil {
				err = rng.AppendRange(sub, visit)
			}
		}
		if err != nil || !ok() {
			return false
		}
		if rng.End() == stop && !atStop() {
			return false
		}
		i += int(size)
	}
	return true
}

// subtree visits the nodes of the perfect subtree whose leaves, starting at
// leaf index begin, have hashes level0 (a power of two of them), and
// returns its root. The nodes are visited in the order appending the
// leaves one by one visits them: each leaf, then the nodes it completes,
// lowest first (so a check reports the same node first). A single leaf is
// not visited here: compact.Range.Append visits it.
func (s *subtrees) subtree(begin uint64, level0 [][32]byte, visit compact.VisitFn) []byte {
	if len(level0) == 1 {
		return level0[0][:]
	}
	levels := [][][32]byte{level0}
	for cur := level0; len(cur) > 1; {
		next := make([][32]byte, len(cur)/2)
		s.hash(0x01, len(next), func(i int) ([]byte, []byte) { return cur[2*i][:], cur[2*i+1][:] }, next)
		levels = append(levels, next)
		cur = next
	}
	for j := range level0 {
		visit(compact.NewNodeID(0, begin+uint64(j)), level0[j][:])
		for l := 1; l < len(levels) && (j+1)%(1<<l) == 0; l++ {
			k := (j+1)>>l - 1
			visit(compact.NewNodeID(uint(l), begin>>l+uint64(k)), levels[l][k][:])
		}
	}
	return levels[len(levels)-1][0][:]
}

// hash sets out[i], for i below n, to the BLAKE3-256 hash of prefix and
// the two halves part(i) gives (trail.Hasher's leaf and node hashes), each
// pair as long as the others (one or two hashes).
func (s *subtrees) hash(prefix byte, n int, part func(i int) ([]byte, []byte), out [][32]byte) {
	if n == 0 {
		return
	}
	s.buf, s.msgs = s.buf[:0], s.msgs[:0]
	for i := range n {
		a, b := part(i)
		s.buf = append(append(append(s.buf, prefix), a...), b...)
	}
	l := len(s.buf) / n // sliced once s.buf is whole: it moves as it grows
	for i := range n {
		s.msgs = append(s.msgs, s.buf[i*l:(i+1)*l:(i+1)*l])
	}
	blake3x.Sum256Many(s.msgs, out[:n])
}

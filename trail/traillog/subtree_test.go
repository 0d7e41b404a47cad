package traillog

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/compact"

	"github.com/wacpd/wacpd/trail"
)

type visited struct {
	id   compact.NodeID
	hash string
}

// TestSubtreesAppendsAsOneByOne: subtrees.append leaves the range, and
// visits the nodes in the order, that appending each leaf's hash with
// compact.Range.Append does, from ranges of every size up to 70 (starting
// at 0 and past it), with chunks of several sizes and a stop inside them.
func TestSubtreesAppendsAsOneByOne(t *testing.T) {
	leaf := func(i int) (l [32]byte) {
		copy(l[:], fmt.Sprintf("leaf %d", i))
		return l
	}
	for _, begin := range []uint64{0, 5} { // a range may start past 0 (the check's mark)
		for _, chunk := range []int{1, 3, 16, 64, 256} {
			for prefix := range 70 {
				for _, stop := range []uint64{0, begin + uint64(prefix+1), begin + uint64(prefix+37), begin + uint64(prefix+300)} {
					want, got := trail.RangeFactory.NewEmptyRange(begin), trail.RangeFactory.NewEmptyRange(begin)
					for i := range prefix {
						l := leaf(i)
						for _, r := range []*compact.Range{want, got} {
							if err := r.Append(trail.Hasher{}.HashLeaf(l[:]), nil); err != nil {
								t.Fatal(err)
							}
						}
					}
					var wantV, gotV []visited
					var wantStops, gotStops []uint64
					record := func(to *[]visited) compact.VisitFn {
						return func(id compact.NodeID, h []byte) { *to = append(*to, visited{id, string(h)}) }
					}
					n := prefix
					var s subtrees
					for c := 0; c < 3; c++ {
						leaves := make([][32]byte, chunk)
						for i := range leaves {
							leaves[i] = leaf(n + i)
							if err := want.Append(trail.Hasher{}.HashLeaf(leaves[i][:]), record(&wantV)); err != nil {
								t.Fatal(err)
							}
							if want.End() == stop {
								wantStops = append(wantStops, want.End())
							}
						}
						n += chunk
						ok := s.append(got, leaves, stop, record(&gotV), func() bool { return true }, func() bool {
							gotStops = append(gotStops, got.End())
							return true
						})
						if !ok {
							t.Fatalf("append reported a problem")
						}
					}
					where := fmt.Sprintf("from %d, chunks of %d after %d leaves, stop %d", begin, chunk, prefix, stop)
					if len(gotV) != len(wantV) {
						t.Fatalf("%s: %d visits, want %d", where, len(gotV), len(wantV))
					}
					for i := range wantV {
						if gotV[i] != wantV[i] {
							t.Fatalf("%s: visit %d is %v %x, want %v %x", where, i, gotV[i].id, gotV[i].hash, wantV[i].id, wantV[i].hash)
						}
					}
					if fmt.Sprint(gotStops) != fmt.Sprint(wantStops) {
						t.Fatalf("%s: stopped at %v, want %v", where, gotStops, wantStops)
					}
					wr, _ := want.GetRootHash(nil)
					gr, _ := got.GetRootHash(nil)
					if fmt.Sprintf("%x", got.Hashes()) != fmt.Sprintf("%x", want.Hashes()) {
						t.Fatalf("%s: the range's hashes are %x, want %x", where, got.Hashes(), want.Hashes())
					}
					if got.End() != want.End() || !bytes.Equal(gr, wr) {
						t.Fatalf("%s: range ends at %d with root %x, want %d, %x", where, got.End(), gr, want.End(), wr)
					}
				}
			}
		}
	}
}

// TestSubtreesStopOnProblem: append returns false at the first subtree
// after which ok reports a problem, and at a stop whose check fails.
func TestSubtreesStopOnProblem(t *testing.T) {
	leaves := make([][32]byte, 40)
	var s subtrees
	visits := 0
	rng := trail.RangeFactory.NewEmptyRange(0)
	if s.append(rng, leaves, 0, func(compact.NodeID, []byte) { visits++ }, func() bool { return visits < 10 }, func() bool { return true }) {
		t.Fatal("append went on after a problem")
	}
	if rng.End() >= 40 {
		t.Fatalf("append took every leaf (%d) after a problem", rng.End())
	}
	rng = trail.RangeFactory.NewEmptyRange(0)
	if s.append(rng, leaves, 5, func(compact.NodeID, []byte) {}, func() bool { return true }, func() bool { return false }) || rng.End() != 5 {
		t.Fatalf("append did not stop at the failed stop: end %d", rng.End())
	}
}

package seglog

import "testing"

// TestCachePositions: the cache keeps, finds and evicts blocks at every
// kind of position, packed in a word or not (an offset of 2^40 or more, a
// file number of 2^24 or more), oldest first, and never mixes up two.
func TestCachePositions(t *testing.T) {
	c := cache{max: 30, blocks: map[uint64][]byte{}}
	at := []Pos{{1, 0}, {1, 1 << 40}, {1 << 24, 5}, {2, 5}, {0, 1<<40 - 1}}
	for i, p := range at {
		c.put(p, []byte{byte(i), 0, 0, 0, 0})
	}
	for i, p := range at {
		if b := c.get(p); len(b) != 5 || b[0] != byte(i) {
			t.Fatalf("get(%v) = %v, want block %d", p, b, i)
		}
	}
	if c.get(Pos{1 << 24, 4}) != nil || c.get(Pos{0, 1 << 40}) != nil || c.get(Pos{2, 1 << 40}) != nil {
		t.Fatal("a position never put has a block")
	}
	// 25 of 30 bytes held: three more blocks of 5 evict the two oldest, one
	// packed and one not.
	c.put(Pos{3, 0}, []byte{5, 0, 0, 0, 0})
	c.put(Pos{4, 1 << 41}, []byte{6, 0, 0, 0, 0})
	c.put(Pos{5, 7}, []byte{7, 0, 0, 0, 0})
	if c.get(at[0]) != nil || c.get(at[1]) != nil {
		t.Fatal("the oldest blocks were not evicted")
	}
	for i, p := range append(at[2:], Pos{3, 0}, Pos{4, 1 << 41}, Pos{5, 7}) {
		if b := c.get(p); len(b) != 5 || b[0] != byte(i+2) {
			t.Fatalf("get(%v) = %v, want block %d", p, b, i+2)
		}
	}
	if c.size != 30 || len(c.blocks)+len(c.far) != 6 {
		t.Fatalf("size %d in %d blocks, want 30 in 6", c.size, len(c.blocks)+len(c.far))
	}
}

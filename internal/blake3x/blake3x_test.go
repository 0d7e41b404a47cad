package blake3x

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/blake3"
)

// check hashes msgs with Sum256Many and holds each hash to
// github.com/zeebo/blake3's.
func check(t testing.TB, msgs [][]byte) {
	t.Helper()
	out := make([][32]byte, len(msgs))
	Sum256Many(msgs, out)
	for i, m := range msgs {
		if want := blake3.Sum256(m); out[i] != want {
			t.Fatalf("message %d of %d (%d bytes): %x, want %x", i, len(msgs), len(m), out[i], want)
		}
	}
}

// TestSum256Many: every length up to past one chunk, alone and in groups
// of every size, with lanes of different lengths side by side.
func TestSum256Many(t *testing.T) {
	if !vector {
		t.Log("no AVX-512 here: this runs the one-by-one path only")
	}
	r := rand.New(rand.NewPCG(1, 2))
	msg := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for n := 0; n <= MaxLen+70; n++ {
		check(t, [][]byte{msg(n)})
	}
	for size := 1; size <= 3*lanes+1; size++ {
		msgs := make([][]byte, size)
		for i := range msgs {
			msgs[i] = msg(r.IntN(MaxLen + 200))
		}
		check(t, msgs)
	}
	// The same bytes in every lane, and lanes that end at a block's edge.
	same := make([][]byte, lanes)
	for i := range same {
		same[i] = bytes.Repeat([]byte{'x'}, 64*(i%4+1))
	}
	check(t, same)
	// Lanes of two chunks that end at different blocks: a lane that is done
	// keeps computing garbage while the others go on.
	for _, a := range []int{0, 1000, 1024, 1025, 1100, 1385, 2048} {
		check(t, [][]byte{bytes.Repeat([]byte{'a'}, a), bytes.Repeat([]byte{'b'}, 1385), bytes.Repeat([]byte{'c'}, 2000)})
	}
}

// TestSum256ManyOneByOne: the path without AVX-512 gives the same hashes.
func TestSum256ManyOneByOne(t *testing.T) {
	was := vector
	vector = false
	defer func() { vector = was }()
	check(t, [][]byte{nil, []byte("abc"), bytes.Repeat([]byte{1}, 2000)})
}

func FuzzSum256Many(f *testing.F) {
	f.Add([]byte("hello"), uint8(3))
	f.Add(bytes.Repeat([]byte{0xff}, 1100), uint8(17))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		// Cut data into messages of lengths drawn from cut, so lanes differ.
		var msgs [][]byte
		step := int(cut)%97 + 1
		for len(data) > 0 {
			n := min(len(data), step)
			msgs = append(msgs, data[:n])
			data = data[n:]
			step = step*7%(MaxLen+100) + 1
		}
		check(t, msgs)
	})
}

func BenchmarkSum256Many(b *testing.B) {
	msgs := make([][]byte, 256)
	for i := range msgs {
		msgs[i] = bytes.Repeat([]byte{byte(i)}, 300+i)
	}
	out := make([][32]byte, len(msgs))
	b.Run("many", func(b *testing.B) {
		for b.Loop() {
			Sum256Many(msgs, out)
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			for i, m := range msgs {
				out[i] = blake3.Sum256(m)
			}
		}
	})
}

// Package blake3x computes many BLAKE3-256 hashes of short messages at
// once: on amd64 with AVX-512, sixteen messages go through the compression
// function together, one per 32-bit lane of the vector registers
// (sum16_amd64.s, written by gen_amd64.py). BLAKE3 hashes one message's
// blocks one after another, and github.com/zeebo/blake3 (which this falls
// back to, and which the tests hold it to) runs many chunks of one long
// message side by side, not many short messages; verifying a trail hashes
// hundreds of thousands of independent entries of a few hundred bytes.
package blake3x

import (
	"encoding/binary"

	"github.com/zeebo/blake3"
)

// MaxLen is the longest message Sum256Many hashes side by side: two
// BLAKE3 chunks (a checkpoint object of about 1.3 KB is two). Longer ones
// are hashed one by one.
const MaxLen = 2 * chunkLen

// chunkLen is BLAKE3's chunk: 16 blocks of 64 bytes.
const chunkLen = 1024

// lanes is how many messages go through the compression function at once.
const lanes = 16

// BLAKE3's domain flags.
const (
	flagChunkStart = 1 << 0
	flagChunkEnd   = 1 << 1
	flagParent     = 1 << 2
	flagRoot       = 1 << 3
)

var iv = [8]uint32{0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19}

// state16 is the input and output of compress16. cv is word-major
// (cv[w][lane] is word w of lane's chaining value); each lane's block is
// in block[lane] as its 64 bytes. Its layout is the assembly's (offsets in
// gen_amd64.py).
type state16 struct {
	cv    [8][lanes]uint32
	block [lanes][64]byte
	ctr   [lanes]uint32 // the chunk counter's low words; the high words are zero
	blen  [lanes]uint32
	flags [lanes]uint32
}

// Sum256Many sets out[i] to the BLAKE3-256 hash of msgs[i]; out must be at
// least as long as msgs.
func Sum256Many(msgs [][]byte, out [][32]byte) {
	if !vector {
		for i, m := range msgs {
			out[i] = blake3.Sum256(m)
		}
		return
	}
	var s state16
	var group [lanes]int // indexes into msgs of the group's lanes
	n := 0
	for i, m := range msgs {
		if len(m) > MaxLen {
			out[i] = blake3.Sum256(m)
			continue
		}
		group[n] = i
		n++
		if n == lanes {
			sum16(&s, msgs, group[:n], out)
			n = 0
		}
	}
	if n > 0 {
		sum16(&s, msgs, group[:n], out)
	}
}

// sum16 hashes the messages group names (at most 16, each of at most two
// chunks) side by side: block after block, each lane in its own chunk with
// its own counter; a lane of two chunks ends with their parent node.
func sum16(s *state16, msgs [][]byte, group []int, out [][32]byte) {
	var blocks [lanes]int
	var first, second [lanes][8]uint32 // the chunks' chaining values, of a lane of two
	most, parents := 0, false
	for lane, i := range group {
		blocks[lane] = max(1, (len(msgs[i])+63)/64) // an empty message is one empty block
		most = max(most, blocks[lane])
		parents = parents || len(msgs[i]) > chunkLen
	}
	for j := range most {
		chunk, k := j/16, j%16 // the chunk of block j, and j's place in it
		for lane, i := range group {
			if j >= blocks[lane] {
				continue // done: its output is taken; the lane computes garbage
			}
			if k == 0 {
				for w := range 8 {
					if chunk == 1 {
						first[lane][w] = s.cv[w][lane]
					}
					s.cv[w][lane] = iv[w]
				}
			}
			if m := msgs[i][64*j:]; len(m) >= 64 {
				s.block[lane] = [64]byte(m) // copied inline, not by a call of memmove per block (BenchmarkSum256Many: 41.0 → 38.9 µs)
			} else {
				clear(s.block[lane][copy(s.block[lane][:], m):])
			}
			last := j == blocks[lane]-1
			var f uint32
			if k == 0 {
				f = flagChunkStart
			}
			if last || k == 15 {
				f |= flagChunkEnd
			}
			if last && blocks[lane] <= 16 {
				f |= flagRoot // one chunk: its last block is the root
			}
			s.blen[lane] = 64
			if last {
				s.blen[lane] = uint32(len(msgs[i]) - 64*j)
			}
			s.ctr[lane], s.flags[lane] = uint32(chunk), f
		}
		compress16(s)
		for lane, i := range group {
			switch {
			case j != blocks[lane]-1:
			case blocks[lane] <= 16:
				put(&out[i], s, lane)
			default: // later blocks overwrite the lane: keep its second chunk's value
				for w := range 8 {
					second[lane][w] = s.cv[w][lane]
				}
			}
		}
	}
	if !parents {
		return
	}
	// The parents: the two chunks' chaining values as one block, from the
	// key (IV), as the root.
	for lane, i := range group {
		if len(msgs[i]) <= chunkLen {
			continue
		}
		for w := range 8 {
			binary.LittleEndian.PutUint32(s.block[lane][4*w:], first[lane][w])
			binary.LittleEndian.PutUint32(s.block[lane][32+4*w:], second[lane][w])
			s.cv[w][lane] = iv[w]
		}
		s.ctr[lane], s.blen[lane], s.flags[lane] = 0, 64, flagParent|flagRoot
	}
	compress16(s)
	for lane, i := range group {
		if len(msgs[i]) > chunkLen {
			put(&out[i], s, lane)
		}
	}
}

// put writes lane's chaining value in s as a hash.
func put(out *[32]byte, s *state16, lane int) {
	for w := range 8 {
		binary.LittleEndian.PutUint32(out[4*w:], s.cv[w][lane])
	}
}

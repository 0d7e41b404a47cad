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

// MaxLen is the longest message Sum256Many hashes side by side: one BLAKE3
// chunk. Longer ones are hashed one by one.
const MaxLen = 1024

// lanes is how many messages go through the compression function at once.
const lanes = 16

// BLAKE3's domain flags.
const (
	flagChunkStart = 1 << 0
	flagChunkEnd   = 1 << 1
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

// sum16 hashes the messages group names (at most 16, each at most one
// chunk) side by side.
func sum16(s *state16, msgs [][]byte, group []int, out [][32]byte) {
	var blocks [lanes]int
	most := 0
	for lane, i := range group {
		blocks[lane] = max(1, (len(msgs[i])+63)/64) // an empty message is one empty block
		most = max(most, blocks[lane])
		for w := range 8 {
			s.cv[w][lane] = iv[w]
		}
	}
	for j := range most {
		for lane, i := range group {
			if j >= blocks[lane] {
				continue // done: its hash is out already; the lane computes garbage
			}
			if n := copy(s.block[lane][:], msgs[i][64*j:]); n < 64 {
				clear(s.block[lane][n:])
			}
			var f uint32
			if j == 0 {
				f = flagChunkStart
			}
			if j == blocks[lane]-1 {
				f |= flagChunkEnd | flagRoot
				s.blen[lane] = uint32(len(msgs[i]) - 64*j)
			} else {
				s.blen[lane] = 64
			}
			s.flags[lane] = f
		}
		compress16(s)
		for lane, i := range group {
			if j == blocks[lane]-1 {
				for w := range 8 {
					binary.LittleEndian.PutUint32(out[i][4*w:], s.cv[w][lane])
				}
			}
		}
	}
}

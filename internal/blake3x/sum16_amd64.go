//go:build amd64 && !purego

package blake3x

import "golang.org/x/sys/cpu"

//go:generate sh -c "python3 gen_amd64.py > sum16_amd64.s"

// vector reports whether compress16 runs: the CPU and the OS support
// AVX-512 Foundation.
var vector = cpu.X86.HasAVX512F

// compress16 runs BLAKE3's compression function on each of the 16 lanes
// of s and leaves each lane's new chaining value (the first half of its
// output) in s.cv.
//
//go:noescape
func compress16(s *state16)

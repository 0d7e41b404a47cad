//go:build amd64 && !purego

package canon

import "golang.org/x/sys/cpu"

// blocks reports whether plainBlocks runs: the CPU and the OS support AVX2.
var blocks = cpu.X86.HasAVX2

// plainBlocks returns the index of the first byte of s that is not plain,
// looking at whole blocks of 32 bytes only (len(s) rounded down to 32 when
// every whole block is plain).
//
//go:noescape
func plainBlocks(s []byte) int

//go:build !amd64 || purego

package canon

// blocks is false: plainBlocks is an assembly routine of amd64 only.
const blocks = false

func plainBlocks(s []byte) int { panic("canon: plainBlocks without AVX2") }

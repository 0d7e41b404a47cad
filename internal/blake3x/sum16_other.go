//go:build !amd64 || purego

package blake3x

const vector = false

func compress16(*state16) { panic("blake3x: no vector path") }

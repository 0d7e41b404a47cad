package bench

import (
	"crypto/sha256"
	"time"
)

// Machine is how busy the machine was around the run: the time one
// goroutine took for a fixed computation (calibrate) just before the run
// and just after it. The figures of a run are those of a quiet machine
// only when both are near the machine's quiet time (docs/performance.md
// gives this machine's); on the shared machine the bench was written on,
// another load sharing the cores made it 10-60 % longer, and the rates
// and ratios moved more than any change measured beside them.
type Machine struct {
	Before time.Duration `json:"before_ns"`
	After  time.Duration `json:"after_ns"`
}

// calibrate times the fixed computation: SHA-256 over 300 MiB, then a map
// of 3,000,000 entries filled (the hashing measures the core, the map the
// memory and the allocator).
func calibrate() time.Duration {
	b := make([]byte, 1<<20)
	start := time.Now()
	var sum [32]byte
	for range 300 {
		sum = sha256.Sum256(b)
		b[0] = sum[0] // each round depends on the last
	}
	m := make(map[int]int)
	for i := range 3_000_000 {
		m[i*7] = i
	}
	return time.Since(start)
}

package bench

import (
	"math"
	"slices"
	"time"
)

// Latency summarizes a set of latency samples.
type Latency struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// Summarize returns the count, p50, p99 and maximum of samples. It does not
// modify samples. No samples give the zero Latency.
func Summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Latency{N: len(s), P50: Percentile(s, 50), P99: Percentile(s, 99), Max: s[len(s)-1]}
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted, which
// must be in ascending order, by the nearest-rank method: the smallest
// sample that at least p percent of the samples are less than or equal to.
// It returns 0 for no samples; p <= 0 gives the minimum.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// rate returns n per second of d, or 0 when d is 0.
func rate(n int, d time.Duration) float64 { return ratio(float64(n), d.Seconds()) }

package bench

import (
	"slices"
	"testing"
	"time"
)

func ms(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 50, 7 * time.Millisecond},
		{"one p99", ms(7), 99, 7 * time.Millisecond},
		{"two p50 is the lower", ms(1, 2), 50, 1 * time.Millisecond},
		{"four p50", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"five p50 is the middle", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"hundred p50", hundred, 50, 50 * time.Millisecond},
		{"hundred p99", hundred, 99, 99 * time.Millisecond},
		{"hundred p100", hundred, 100, 100 * time.Millisecond},
		{"ten p99 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p0 is the min", ms(1, 2, 3), 0, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	in := ms(5, 1, 4, 2, 3)
	orig := slices.Clone(in)
	got := Summarize(in)
	want := Latency{N: 5, P50: 3 * time.Millisecond, P99: 5 * time.Millisecond, Max: 5 * time.Millisecond}
	if got != want {
		t.Errorf("Summarize(%v) = %+v, want %+v", orig, got, want)
	}
	if !slices.Equal(in, orig) {
		t.Errorf("Summarize changed its input to %v", in)
	}
	if got := Summarize(nil); got != (Latency{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", got)
	}
}

func TestRate(t *testing.T) {
	if got := rate(500, 2*time.Second); got != 250 {
		t.Errorf("rate(500, 2s) = %v, want 250", got)
	}
	if got := rate(5, 0); got != 0 {
		t.Errorf("rate(5, 0) = %v, want 0", got)
	}
}

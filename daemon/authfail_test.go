package daemon

import "testing"

// TestAuthFailuresFoldBeyondMaxSources: counts come out one per host,
// busiest first, and hosts beyond the limit share one "other" entry; no
// refusal is lost, and taking resets the counts.
func TestAuthFailuresFoldBeyondMaxSources(t *testing.T) {
	a := newAuthFailures()
	for range 5 {
		a.add("10.0.0.1:1000")
	}
	a.add("10.0.0.2:1001")
	a.add("10.0.0.2:1002")
	a.add("10.0.0.3:1003")
	a.add("[::1]:1004")
	a.add("not-an-address")
	got := a.take(2)
	want := []authFailCount{{"10.0.0.1", 5}, {"10.0.0.2", 2}, {"other", 3}}
	if len(got) != len(want) {
		t.Fatalf("take = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("take = %v, want %v", got, want)
		}
	}
	if again := a.take(2); len(again) != 0 {
		t.Fatalf("second take = %v, want nothing", again)
	}
}

package task

import (
	"errors"
	"testing"
)

// specTable is the Task spec's state derivation table (§4), written out
// edge by edge: Next must have exactly these transitions (C-2).
var specTable = map[[2]string]Status{
	{"draft", "human_approved"}:            Pending,
	{"draft", "approval_timeout_approve"}:  Pending,
	{"draft", "approval_timeout_cancel"}:   Cancelled,
	{"draft", "gate_rejected"}:             Cancelled,
	{"pending", "bound"}:                   Assigned,
	{"assigned", "started"}:                InProgress,
	{"in_progress", "complete"}:            Completed,
	{"in_progress", "failed"}:              Failed,
	{"assigned", "failed"}:                 Failed,
	{"completed", "integration_completed"}: Integrated,
	{"failed", "retry"}:                    Pending,
	{"draft", "cancel"}:                    Cancelled,
	{"pending", "cancel"}:                  Cancelled,
	{"assigned", "cancel"}:                 Cancelled,
	{"in_progress", "cancel"}:              Cancelled,
	{"completed", "cancel"}:                Cancelled,
	{"failed", "cancel"}:                   Cancelled,
}

func TestNextIsTheSpecTable(t *testing.T) {
	if got := len(Triggers()); got != 11 {
		t.Errorf("len(Triggers()) = %d, want 11", got)
	}
	n := 0
	for _, from := range Statuses() {
		for _, trig := range Triggers() {
			got, err := Next(from, trig)
			want, ok := specTable[[2]string{string(from), string(trig)}]
			switch {
			case ok && (err != nil || got != want):
				t.Errorf("Next(%s, %s) = %q, %v, want %s", from, trig, got, err, want)
			case !ok && !errors.Is(err, ErrInvalidTransition):
				t.Errorf("Next(%s, %s) = %q, %v, want ErrInvalidTransition", from, trig, got, err)
			case ok:
				n++
			}
		}
	}
	if n != len(specTable) {
		t.Errorf("%d transitions, want %d", n, len(specTable))
	}
	if _, err := Next(Draft, "unknown"); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("Next(draft, unknown) = %v, want ErrInvalidTransition", err)
	}
}

func TestStatuses(t *testing.T) {
	if got := len(Statuses()); got != 8 {
		t.Fatalf("len(Statuses()) = %d, want 8", got)
	}
	for _, s := range Statuses() {
		if !s.Valid() {
			t.Errorf("%s.Valid() = false", s)
		}
		if got, want := s.Terminal(), s == Integrated || s == Cancelled; got != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, got, want)
		}
		if got, want := s.Done(), s == Completed || s == Integrated; got != want {
			t.Errorf("%s.Done() = %v, want %v", s, got, want)
		}
	}
	if Status("closed").Valid() {
		t.Error(`Status("closed").Valid() = true`)
	}
}

package clocktest

import (
	"testing"
	"time"
)

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	c := New()
	t0 := c.Now()
	if !c.Now().Equal(t0) {
		t.Fatalf("Now moved without Advance: %v then %v", t0, c.Now())
	}
	c.Advance(90 * time.Second)
	if got := c.Now().Sub(t0); got != 90*time.Second {
		t.Fatalf("after Advance(90s) the clock moved %v", got)
	}
}

package daemon

import (
	"testing"
	"time"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// TestAuditReadTimeFilters checks that since and until take any RFC 3339
// timestamp: the trail compares timestamps as strings, so a filter in
// another form ("…:10Z", an offset) must be brought to the trail's own form
// first, or "…:10Z" would sort after "…:10.000000001Z" and drop the
// entries of that second. A filter that is not a timestamp is refused.
func TestAuditReadTimeFilters(t *testing.T) {
	clk := newFakeClock() // 2026-03-01T12:00:00Z
	e := openTest(t, withFakeClock(clk))
	s := newService(t, e)
	before := e.Trail().Len()
	clk.Advance(10 * time.Second)
	newWorker(t, e) // entries from 12:00:10 on, a few nanoseconds apart
	later := e.Trail().Len() - before
	if later == 0 {
		t.Fatal("no entries after the clock moved")
	}
	read := func(body string) ([]trail.Entry, error) {
		t.Helper()
		v, err := s.call(ctx, "audit.trail.read", []byte(body))
		if err != nil {
			return nil, err
		}
		return v.(wire.TrailPage).Entries, nil
	}
	tests := []struct {
		body string
		want int
	}{
		{`{"since":"2026-03-01T12:00:10Z"}`, int(later)},
		{`{"since":"2026-03-01T12:00:10.000000000Z"}`, int(later)},
		{`{"since":"2026-03-01T13:00:10+01:00"}`, int(later)},
		{`{"since":"2026-03-01T12:00:10.5Z"}`, 0},
		{`{"until":"2026-03-01T12:00:10Z"}`, int(before)},
		{`{"until":"2026-03-01T07:00:10-05:00"}`, int(before)},
		{`{"since":"2026-03-01T12:00:00Z","until":"2026-03-01T12:00:10Z"}`, int(before)},
	}
	for _, tt := range tests {
		got, err := read(tt.body)
		if err != nil || len(got) != tt.want {
			t.Errorf("audit.trail.read %s = %d entries, %v; want %d", tt.body, len(got), err, tt.want)
		}
	}
	for _, body := range []string{
		`{"since":"yesterday"}`, `{"until":"2026-03-01"}`, `{"since":"2026-03-01 12:00:10Z"}`,
		`{"until":"12:00:10"}`, `{"since":"2026-03-01T12:00:10"}`,
	} {
		_, err := read(body)
		wantCode(t, "audit.trail.read "+body, err, wire.CodeInvalidStructure)
	}
}

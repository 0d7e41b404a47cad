package clock_test

import (
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/wacpd/wacpd/clock"
)

var t0 = time.Date(2026, 11, 21, 22, 48, 25, 123456789, time.UTC)

// seq returns a fake now that reads the given times in turn, then repeats the
// last one. It is not safe for concurrent use.
func seq(times ...time.Time) func() time.Time {
	i := 0
	return func() time.Time {
		t := times[min(i, len(times)-1)]
		i++
		return t
	}
}

func TestNext_FrozenClock(t *testing.T) {
	c := clock.New(func() time.Time { return t0 })
	prev := c.Next()
	if !prev.Equal(t0) {
		t.Errorf("first Next() = %s, want %s", clock.Format(prev), clock.Format(t0))
	}
	for i := 1; i < 1000; i++ {
		got := c.Next()
		if want := prev.Add(time.Nanosecond); !got.Equal(want) {
			t.Fatalf("Next() #%d = %s, want %s", i, clock.Format(got), clock.Format(want))
		}
		prev = got
	}
	if !c.Last().Equal(prev) {
		t.Errorf("Last() = %s, want %s", clock.Format(c.Last()), clock.Format(prev))
	}
}

func TestNext_BackwardsJumps(t *testing.T) {
	times := []time.Time{
		t0,
		t0.Add(-time.Hour), // wall clock stepped back
		t0.Add(-time.Nanosecond),
		t0,
		t0.Add(time.Second), // forward again: used as is
		t0.Add(time.Second),
		t0.Add(-24 * time.Hour),
		t0.Add(2 * time.Second),
	}
	want := []time.Time{
		t0,
		t0.Add(1),
		t0.Add(2),
		t0.Add(3),
		t0.Add(time.Second),
		t0.Add(time.Second + 1),
		t0.Add(time.Second + 2),
		t0.Add(2 * time.Second),
	}
	c := clock.New(seq(times...))
	for i := range times {
		got := c.Next()
		if !got.Equal(want[i]) {
			t.Errorf("Next() #%d with now %s = %s, want %s", i, clock.Format(times[i]), clock.Format(got), clock.Format(want[i]))
		}
	}
}

func TestNext_UTCWithoutMonotonicReading(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	c := clock.New(func() time.Time { return t0.In(paris) })
	got := c.Next()
	if got.Location() != time.UTC || !got.Equal(t0) {
		t.Errorf("Next() = %v, want %v in UTC", got, t0)
	}
	live := clock.New(nil).Next()
	if strings.Contains(live.String(), "m=") {
		t.Errorf("clock.New(nil).Next() = %v, want no monotonic clock reading", live)
	}
	if p, err := clock.Parse(clock.Format(live)); err != nil || p != live {
		t.Errorf("Parse(Format(%v)) = %v, %v, want the same time", live, p, err)
	}
}

func TestObserve(t *testing.T) {
	c := clock.New(func() time.Time { return t0 })
	future := t0.Add(time.Hour)
	c.Observe(future)
	if got, want := c.Next(), future.Add(time.Nanosecond); !got.Equal(want) {
		t.Errorf("Next() after Observe(%s) = %s, want %s", clock.Format(future), clock.Format(got), clock.Format(want))
	}
	// A lower floor changes nothing.
	c.Observe(t0.Add(-time.Hour))
	if got, want := c.Next(), future.Add(2*time.Nanosecond); !got.Equal(want) {
		t.Errorf("Next() after Observe(past) = %s, want %s", clock.Format(got), clock.Format(want))
	}
	// Observe in another zone is stored in UTC.
	later := future.Add(time.Minute).In(time.FixedZone("X", -7*3600))
	c.Observe(later)
	if got := c.Last(); got.Location() != time.UTC || !got.Equal(later) {
		t.Errorf("Last() after Observe(%v) = %v, want the same instant in UTC", later, got)
	}
	// Now reads the clock without advancing it.
	before := c.Last()
	if got := c.Now(); !got.Equal(t0) {
		t.Errorf("Now() = %v, want %v", got, t0)
	}
	if got := c.Last(); !got.Equal(before) {
		t.Errorf("Last() after Now() = %v, want %v", got, before)
	}
}

func TestNext_Concurrent(t *testing.T) {
	c := clock.New(nil)
	const goroutines, each = 8, 2000
	out := make([][]time.Time, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				out[g] = append(out[g], c.Next())
			}
		}()
	}
	wg.Wait()
	seen := map[time.Time]bool{}
	for g, ts := range out {
		for i, ts := range ts {
			if i > 0 && !ts.After(out[g][i-1]) {
				t.Fatalf("goroutine %d: Next() #%d = %s, want after %s", g, i, clock.Format(ts), clock.Format(out[g][i-1]))
			}
			if seen[ts] {
				t.Fatalf("Next() returned %s twice", clock.Format(ts))
			}
			seen[ts] = true
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{t0, "2026-11-21T22:48:25.123456789Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000000000Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC), "2026-01-02T03:04:05.000000001Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 500_000_000, time.FixedZone("X", 2*3600)), "2026-01-02T01:04:05.500000000Z"},
		{time.Unix(0, 0), "1970-01-01T00:00:00.000000000Z"},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), "9999-12-31T23:59:59.999999999Z"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := clock.Format(tt.in); got != tt.want {
				t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
			}
			got, err := clock.Parse(tt.want)
			if err != nil || !got.Equal(tt.in) || got.Location() != time.UTC {
				t.Errorf("Parse(%q) = %v, %v, want %v in UTC", tt.want, got, err, tt.in)
			}
		})
	}
}

// Fixed-width strings sort in time order.
func TestFormat_SortsInTimeOrder(t *testing.T) {
	var ts []string
	for _, d := range []time.Duration{0, 1, 999, time.Microsecond, time.Millisecond, 100 * time.Millisecond, time.Second, time.Hour, 24 * time.Hour, 400 * 24 * time.Hour} {
		ts = append(ts, clock.Format(t0.Add(d)))
	}
	if !slices.IsSorted(ts) {
		t.Errorf("Format of increasing times = %q, want sorted strings", ts)
	}
}

func TestParse_Rejects(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"no nanos", "2026-11-21T22:48:25Z"},
		{"millis", "2026-11-21T22:48:25.123Z"},
		{"ten digits", "2026-11-21T22:48:25.1234567890Z"},
		{"utc offset", "2026-11-21T22:48:25.123456789+00:00"},
		{"non-utc offset", "2026-11-21T23:48:25.123456789+01:00"},
		{"same length with offset", "2026-11-21T22:48:25.1234567+01"},
		{"lowercase z", "2026-11-21T22:48:25.123456789z"},
		{"space for T", "2026-11-21 22:48:25.123456789Z"},
		{"no zone", "2026-11-21T22:48:25.1234567890"},
		{"leading space", " 2026-11-21T22:48:25.12345678Z"},
		{"trailing newline", "2026-11-21T22:48:25.12345678Z\n"},
		{"day out of range", "2026-02-30T00:00:00.000000000Z"},
		{"hour 24", "2026-11-21T24:00:00.000000000Z"},
		{"leap second", "2026-12-31T23:59:60.000000000Z"},
		{"garbage", "not a timestamp at all, really"},
		{"rfc1123", "Sat, 21 Nov 2026 22:48:25 GMT!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clock.Parse(tt.in)
			if !errors.Is(err, clock.ErrBadTimestamp) {
				t.Errorf("Parse(%q) = %v, %v, want ErrBadTimestamp", tt.in, got, err)
			}
		})
	}
}

// FuzzParseTimestamp checks that Parse accepts only strings Format writes.
func FuzzParseTimestamp(f *testing.F) {
	f.Add(clock.Format(t0))
	f.Fuzz(func(t *testing.T, s string) {
		got, err := clock.Parse(s)
		if err != nil {
			if !errors.Is(err, clock.ErrBadTimestamp) {
				t.Fatalf("Parse(%q) error = %v, want ErrBadTimestamp", s, err)
			}
			return
		}
		if got.Location() != time.UTC {
			t.Errorf("Parse(%q) = %v, want UTC", s, got)
		}
		if back := clock.Format(got); back != s {
			t.Errorf("Format(Parse(%q)) = %q, want the input", s, back)
		}
	})
}

// maxThenOnes is entropy whose first 10 bytes are 0xff (the largest random
// part of a ULID) and the rest 0x01, so the next increment overflows.
type maxThenOnes struct{ n int }

func (r *maxThenOnes) Read(p []byte) (int, error) {
	for i := range p {
		if r.n < 10 {
			p[i] = 0xff
		} else {
			p[i] = 0x01
		}
		r.n++
	}
	return len(p), nil
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

// checkIncreasing asserts ids are valid ULIDs in strictly increasing order.
func checkIncreasing(t *testing.T, ids []string) []ulid.ULID {
	t.Helper()
	us := make([]ulid.ULID, len(ids))
	for i, id := range ids {
		u, err := ulid.ParseStrict(id)
		if err != nil {
			t.Fatalf("New() #%d = %q, want a ULID: %v", i, id, err)
		}
		us[i] = u
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("New() #%d = %s, want greater than %s", i, id, ids[i-1])
		}
	}
	return us
}

func TestIDs_SameMillisecond(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entropy io.Reader
	}{
		{"crypto/rand", nil},
		{"overflowing entropy", &maxThenOnes{}},
		{"failing entropy", failingReader{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := clock.NewIDs(tt.entropy)
			ids := make([]string, 10_000)
			for i := range ids {
				ids[i] = g.New(t0)
			}
			us := checkIncreasing(t, ids)
			ms := ulid.Timestamp(t0)
			for i, u := range us {
				// Only an overflow of the 80 random bits may move to a later millisecond.
				if u.Time() < ms || (tt.name != "overflowing entropy" && u.Time() != ms) {
					t.Fatalf("New(t0) #%d = %s with time %d, want %d", i, ids[i], u.Time(), ms)
				}
			}
		})
	}
}

// An overflow of the random bits within one millisecond moves to the next.
func TestIDs_EntropyOverflow(t *testing.T) {
	g := clock.NewIDs(&maxThenOnes{})
	first, second := g.New(t0), g.New(t0)
	u1, u2 := ulid.MustParse(first), ulid.MustParse(second)
	ms := ulid.Timestamp(t0)
	if u1.Time() != ms || u2.Time() != ms+1 || second <= first {
		t.Errorf("New(t0), New(t0) = %s (ms %d), %s (ms %d), want ms %d then %d, increasing", first, u1.Time(), second, u2.Time(), ms, ms+1)
	}
}

func TestIDs_ObserveFarFuture(t *testing.T) {
	g := clock.NewIDs(nil)
	far := ulid.MustNew(ulid.Timestamp(t0.AddDate(200, 0, 0)), strings.NewReader(strings.Repeat("\x80", 10))).String()
	g.Observe(far)
	ids := []string{far}
	for range 1000 {
		ids = append(ids, g.New(t0))
	}
	us := checkIncreasing(t, ids)
	if got, want := us[1].Time(), us[0].Time(); got != want {
		t.Errorf("New(t0) after Observe(%s) has time %d, want the observed %d", far, got, want)
	}
}

func TestIDs_ObserveIgnores(t *testing.T) {
	g := clock.NewIDs(nil)
	first := g.New(t0)
	older := ulid.MustNew(ulid.Timestamp(t0.Add(-time.Hour)), nil).String()
	for _, s := range []string{older, "", "not-a-ulid", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", strings.ToLower(first) + "x"} {
		g.Observe(s)
	}
	if next := g.New(t0); next <= first || ulid.MustParse(next).Time() != ulid.Timestamp(t0) {
		t.Errorf("New(t0) after Observe of older and invalid ids = %s, want after %s in the same millisecond", next, first)
	}
}

func TestIDs_BackwardsClock(t *testing.T) {
	g := clock.NewIDs(nil)
	ids := []string{
		g.New(t0),
		g.New(t0.Add(-time.Hour)),
		g.New(t0.Add(-time.Millisecond)),
		g.New(t0.Add(time.Second)),
		g.New(t0),
	}
	checkIncreasing(t, ids)
	if got, want := ulid.MustParse(ids[3]).Time(), ulid.Timestamp(t0.Add(time.Second)); got != want {
		t.Errorf("New(t0+1s) has time %d, want %d", got, want)
	}
}

func TestIDs_Concurrent(t *testing.T) {
	g := clock.NewIDs(nil)
	const goroutines, each = 8, 2000
	out := make([][]string, goroutines)
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				out[i] = append(out[i], g.New(time.Now()))
			}
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, goroutines*each)
	for i, ids := range out {
		t.Run(string(rune('a'+i)), func(t *testing.T) { checkIncreasing(t, ids) })
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("New() returned %s twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != goroutines*each {
		t.Errorf("got %d distinct ids, want %d", len(seen), goroutines*each)
	}
}

// A time with no ULID timestamp (before 1970, after 10889) keeps the last
// ID's time instead of yielding the zero ULID.
func TestIDs_TimeOutsideULIDRange(t *testing.T) {
	for _, entropy := range []io.Reader{nil, failingReader{}} {
		g := clock.NewIDs(entropy)
		ids := []string{
			g.New(t0),
			g.New(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)),
			g.New(time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)),
			g.New(time.Unix(-1, 0)),
			g.New(t0),
		}
		us := checkIncreasing(t, ids)
		for i, u := range us[1:4] {
			if u.Time() != us[0].Time() {
				t.Errorf("New(out of range) #%d = %s with time %d, want the last time %d", i+1, ids[i+1], u.Time(), us[0].Time())
			}
		}
	}
}

func TestValidID(t *testing.T) {
	id := clock.NewIDs(nil).New(t0)
	tests := []struct {
		name, in string
		want     bool
	}{
		{"minted", id, true},
		{"largest", "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", true},
		{"empty", "", false},
		{"not a ulid", "not-a-ulid", false},
		{"lower case", strings.ToLower(id), false},
		{"too long", id + "0", false},
		{"too short", id[1:], false},
		{"time overflow", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", false},
		{"not crockford", "01ARZ3NDEKTSV4RRFFQ69G5FAU", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clock.ValidID(tt.in); got != tt.want {
				t.Errorf("ValidID(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

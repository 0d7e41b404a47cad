package placement

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/internal/clocktest"
)

const bucket = "wacp_leases"

// runJetStream starts a nats-server with JetStream, its store in
// t.TempDir().
func runJetStream(t *testing.T) *server.Server {
	t.Helper()
	return runServer(t, fmt.Sprintf("jetstream { store_dir: %q }\n", t.TempDir()))
}

// fakeConfig is the configuration of the tests on a fake clock: the
// loop's own timers are hours of real time away, so the tests renew with
// Renew and move time with the clock.
func fakeConfig(clock func() time.Time) Config {
	return Config{Bucket: bucket, TTL: time.Hour, Margin: 5 * time.Minute, RenewEvery: 20 * time.Minute, Clock: clock}
}

// open opens the leases of cfg on its own connection to s, as a daemon
// would.
func open(t *testing.T, s *server.Server, cfg Config) *Leases {
	t.Helper()
	js, err := jetstream.New(connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := OpenLeases(t.Context(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// bucketKV returns the bucket, as an operator or a tool would see it.
func bucketKV(t *testing.T, s *server.Server) jetstream.KeyValue {
	t.Helper()
	js, err := jetstream.New(connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// acquire acquires partition p for holder with ctx, failing the test on an
// error, and waits at the end of the test for the lease's goroutine (ctx
// must end with the test).
func acquire(t *testing.T, ctx context.Context, ls *Leases, holder string, p int) *Lease {
	t.Helper()
	l, err := ls.Acquire(ctx, holder, p)
	if err != nil {
		t.Fatalf("Acquire(%s, %d): %v", holder, p, err)
	}
	t.Cleanup(func() { <-l.Lost() })
	return l
}

// stored reads partition p's record from kv.
func stored(t *testing.T, kv jetstream.KeyValue, p int) (record, uint64) {
	t.Helper()
	e, err := kv.Get(t.Context(), key(p))
	if err != nil {
		t.Fatalf("get %s: %v", key(p), err)
	}
	r, err := decodeRecord(e.Value(), e.Revision())
	if err != nil {
		t.Fatalf("get %s: %v", key(p), err)
	}
	return r, e.Revision()
}

// refused fails the test unless Acquire of p for holder is refused with
// want.
func refused(t *testing.T, ls *Leases, holder string, p int, want error) {
	t.Helper()
	l, err := ls.Acquire(t.Context(), holder, p)
	if !errors.Is(err, want) {
		if l != nil {
			l.Release(t.Context())
		}
		t.Fatalf("Acquire(%s, %d) = %v, want %v", holder, p, err, want)
	}
}

// lost waits for l's goroutine to end and fails the test unless it ended
// for want.
func lost(t *testing.T, l *Lease, want error) {
	t.Helper()
	<-l.Lost()
	if err := l.Err(); !errors.Is(err, want) {
		t.Fatalf("lease %s/%d lost: %v, want %v", l.Holder(), l.Partition(), err, want)
	}
}

// TestLease_AcquireRenewRelease: the record a holder writes, renews and
// deletes, and what Valid says meanwhile.
func TestLease_AcquireRenewRelease(t *testing.T) {
	s := runJetStream(t)
	clk := clocktest.New()
	t0 := clk.Now()
	ls := open(t, s, fakeConfig(clk.Now))
	kv := bucketKV(t, s)

	a := acquire(t, t.Context(), ls, "d1", 3)
	r, rev := stored(t, kv, 3)
	if r.Holder != "d1" || r.Epoch != 0 || !r.Expires.Equal(t0.Add(time.Hour)) || rev != a.Token() || a.Token() == 0 {
		t.Fatalf("after Acquire: record %+v at revision %d, token %d", r, rev, a.Token())
	}
	for _, tt := range []struct {
		d    time.Duration
		want bool
	}{{0, true}, {55*time.Minute - 1, true}, {55 * time.Minute, false}} {
		if got := a.Valid(t0.Add(tt.d)); got != tt.want {
			t.Errorf("Valid(t0+%v) = %v, want %v", tt.d, got, tt.want)
		}
	}

	clk.Advance(10 * time.Minute)
	if err := a.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	r, rev2 := stored(t, kv, 3)
	if r.Holder != "d1" || r.Epoch != a.Token() || !r.Expires.Equal(t0.Add(70*time.Minute)) || rev2 <= rev {
		t.Fatalf("after Renew: record %+v at revision %d (was %d), token %d", r, rev2, rev, a.Token())
	}
	if a.Token() != rev {
		t.Errorf("Renew changed the token from %d to %d", rev, a.Token())
	}
	if !a.Valid(t0.Add(64*time.Minute)) || a.Valid(t0.Add(65*time.Minute)) {
		t.Errorf("after Renew at t0+10m: Valid(t0+64m) = %v, Valid(t0+65m) = %v; want true, false", a.Valid(t0.Add(64*time.Minute)), a.Valid(t0.Add(65*time.Minute)))
	}

	if err := a.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.Valid(clk.Now()) {
		t.Error("Valid after Release")
	}
	lost(t, a, ErrReleased)
	if _, err := kv.Get(t.Context(), key(3)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("record after Release: %v, want ErrKeyNotFound", err)
	}
	if err := a.Release(t.Context()); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if err := a.Renew(t.Context()); !errors.Is(err, ErrReleased) {
		t.Errorf("Renew after Release = %v, want ErrReleased", err)
	}
}

// TestLease_ExpiryAfterTheHolderStops: a second holder is refused while
// the first is valid (renewing pushes the expiry), and after the first
// stops renewing (its ctx ends, no release) it is refused until the
// recorded expiry, which comes a margin after the first stopped counting
// itself valid.
func TestLease_ExpiryAfterTheHolderStops(t *testing.T) {
	s := runJetStream(t)
	clk := clocktest.New()
	t0 := clk.Now()
	cfg := fakeConfig(clk.Now)
	la, lb := open(t, s, cfg), open(t, s, cfg)

	ctxA, stopA := context.WithCancel(t.Context())
	a := acquire(t, ctxA, la, "d1", 0)
	refused(t, lb, "d2", 0, ErrHeld)
	refused(t, lb, "d1", 0, ErrHeld) // the same id in another run is anyone
	clk.Advance(50 * time.Minute)
	if err := a.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Minute) // past the first expiry, before the renewed one
	refused(t, lb, "d2", 0, ErrHeld)

	stopA()
	lost(t, a, context.Canceled)
	if !a.Valid(clk.Now()) {
		t.Error("Valid false as soon as the holder stopped renewing; want true until the validity ends")
	}
	expires := t0.Add(110 * time.Minute)
	clk.Advance(expires.Sub(clk.Now()) - 1)
	refused(t, lb, "d2", 0, ErrHeld)
	clk.Advance(1)
	b := acquire(t, t.Context(), lb, "d2", 0)
	at := clk.Now()
	if a.Valid(at) || a.Valid(at.Add(-cfg.Margin)) {
		t.Errorf("d2 acquired at %v; d1 Valid then = %v, a margin before = %v; want false, false", at, a.Valid(at), a.Valid(at.Add(-cfg.Margin)))
	}
	if !a.Valid(at.Add(-cfg.Margin - 1)) {
		t.Errorf("d1 not valid until a margin before its expiry")
	}
	if b.Token() <= a.Token() {
		t.Errorf("token of the successor %d, not above %d", b.Token(), a.Token())
	}
}

// TestLease_RenewalRacesTakeover: a renewal and a takeover that start from
// the same revision (possible only when the holder's clock is a margin or
// more behind the taker's, or the holder stalled): exactly one wins, and
// the holder that lost learns it at once.
//
// The holder acquires at t0 (expiry t0+1h) and renews at t0+1m (expiry
// t0+61m); the taker's clock reads t0+1h, so it may take the first record
// but not the renewed one.
func TestLease_RenewalRacesTakeover(t *testing.T) {
	s := runJetStream(t)
	open(t, s, fakeConfig(time.Now)) // creates the bucket
	kv := bucketKV(t, s)
	setup := func(t *testing.T, p int, taker func() time.Time) (*Lease, *clocktest.Fake, *Leases) {
		clk := clocktest.New()
		a := acquire(t, t.Context(), open(t, s, fakeConfig(clk.Now)), "d1", p)
		clk.Advance(time.Minute)
		return a, clk, open(t, s, fakeConfig(taker))
	}
	takerAt := func() time.Time { return clocktest.New().Now().Add(time.Hour) }

	t.Run("takeover first", func(t *testing.T) {
		a, clk, lb := setup(t, 1, takerAt)
		b := acquire(t, t.Context(), lb, "d2", 1)
		if err := a.Renew(t.Context()); !errors.Is(err, ErrTaken) {
			t.Fatalf("Renew after the takeover = %v, want ErrTaken", err)
		}
		if a.Valid(clk.Now()) {
			t.Error("Valid after the renewal found the lease taken")
		}
		lost(t, a, ErrTaken)
		if r, rev := stored(t, kv, 1); r.Holder != "d2" || rev != b.Token() {
			t.Errorf("record %+v at %d, want d2's at %d", r, rev, b.Token())
		}
	})

	t.Run("renewal between the takeover's read and write", func(t *testing.T) {
		var a *Lease
		var once sync.Once
		var renewErr error
		// Acquire reads the clock after the record and before its write:
		// the holder renews there.
		taker := func() time.Time {
			once.Do(func() { renewErr = a.Renew(t.Context()) })
			return takerAt()
		}
		a, clk, lb := setup(t, 2, taker)
		refused(t, lb, "d2", 2, ErrHeld)
		if renewErr != nil {
			t.Fatalf("the racing renewal: %v", renewErr)
		}
		if !a.Valid(clk.Now()) || a.Err() != nil {
			t.Errorf("holder after winning: Valid %v, Err %v", a.Valid(clk.Now()), a.Err())
		}
		if r, _ := stored(t, kv, 2); r.Holder != "d1" || !r.Expires.Equal(clk.Now().Add(time.Hour)) {
			t.Errorf("record %+v, want d1's renewal", r)
		}
	})

	// Both start together; in odd rounds the renewal starts once the
	// taker has read the record, so that both writes are in flight at once.
	t.Run("concurrent", func(t *testing.T) {
		won := map[string]int{}
		for p := 10; p < 30; p++ {
			read := make(chan struct{})
			var once sync.Once
			taker := func() time.Time {
				once.Do(func() { close(read) })
				return takerAt()
			}
			a, clk, lb := setup(t, p, taker)
			var renewErr, acqErr error
			var b *Lease
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Go(func() {
				<-start
				if p%2 == 1 {
					<-read
				}
				renewErr = a.Renew(t.Context())
			})
			wg.Go(func() {
				<-start
				b, acqErr = lb.Acquire(t.Context(), "d2", p)
				once.Do(func() { close(read) }) // had it failed before reading the clock
			})
			close(start)
			wg.Wait()
			switch {
			case renewErr == nil && errors.Is(acqErr, ErrHeld):
				won["holder"]++
				if !a.Valid(clk.Now()) {
					t.Errorf("p%d: the holder won but is not valid", p)
				}
			case errors.Is(renewErr, ErrTaken) && acqErr == nil:
				won["taker"]++
				t.Cleanup(func() { <-b.Lost() })
				if a.Valid(clk.Now()) {
					t.Errorf("p%d: the taker won but the holder is still valid", p)
				}
			default:
				t.Errorf("p%d: renewal %v, takeover %v; want exactly one to win", p, renewErr, acqErr)
			}
		}
		t.Logf("wins: %v", won)
	})
}

// TestLease_AcquireRace: holders racing for a partition nobody holds, then
// for one whose record expired: each time exactly one wins.
func TestLease_AcquireRace(t *testing.T) {
	s := runJetStream(t)
	clk := clocktest.New()
	cfg := fakeConfig(clk.Now)
	const racers = 6
	var ls [racers]*Leases
	for i := range ls {
		ls[i] = open(t, s, cfg)
	}
	race := func() *Lease {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []*Lease
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				l, err := ls[i].Acquire(t.Context(), fmt.Sprintf("d%d", i), 7)
				if err != nil {
					if !errors.Is(err, ErrHeld) {
						t.Errorf("d%d: %v, want ErrHeld", i, err)
					}
					return
				}
				t.Cleanup(func() { <-l.Lost() })
				mu.Lock()
				winners = append(winners, l)
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("%d holders won, want 1", len(winners))
		}
		return winners[0]
	}
	first := race()
	clk.Advance(2 * time.Hour)
	if second := race(); second.Token() <= first.Token() {
		t.Errorf("token %d after %d", second.Token(), first.Token())
	}
}

// TestLease_Release: a successor acquires at once after a release, and
// after a release that follows the end of the holder's ctx.
func TestLease_Release(t *testing.T) {
	s := runJetStream(t)
	clk := clocktest.New()
	cfg := fakeConfig(clk.Now)
	la, lb := open(t, s, cfg), open(t, s, cfg)

	a := acquire(t, t.Context(), la, "d1", 4)
	if err := a.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := acquire(t, t.Context(), lb, "d2", 4)
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d", b.Token(), a.Token())
	}

	ctxB, stopB := context.WithCancel(t.Context())
	b2 := acquire(t, ctxB, lb, "d2", 5)
	stopB()
	lost(t, b2, context.Canceled)
	if err := b2.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b2.Valid(clk.Now()) {
		t.Error("Valid after Release")
	}
	acquire(t, t.Context(), la, "d1", 5)
}

// TestLease_TokensIncrease: the fencing token strictly increases across
// tenures of one partition, whoever holds it and however the previous
// tenure ended, with other partitions written in between.
func TestLease_TokensIncrease(t *testing.T) {
	s := runJetStream(t)
	clk := clocktest.New()
	cfg := fakeConfig(clk.Now)
	ls := []*Leases{open(t, s, cfg), open(t, s, cfg), open(t, s, cfg)}
	var last uint64
	for i := range 9 {
		holder := fmt.Sprintf("d%d", i%3)
		ctx, stop := context.WithCancel(t.Context())
		l := acquire(t, ctx, ls[i%3], holder, 0)
		if l.Token() <= last {
			t.Fatalf("tenure %d: token %d after %d", i, l.Token(), last)
		}
		last = l.Token()
		other := acquire(t, t.Context(), ls[i%3], holder, 100+i)
		if err := l.Renew(t.Context()); err != nil || l.Token() != last {
			t.Fatalf("tenure %d: Renew %v, token %d, want %d", i, err, l.Token(), last)
		}
		if err := other.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := l.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
		} else {
			stop()
			lost(t, l, context.Canceled)
			clk.Advance(2 * time.Hour)
		}
		stop()
	}
}

// TestLease_NotALeaseIsRefused: a value that is not a lease is never taken
// over, however old, and is left as it is.
func TestLease_NotALeaseIsRefused(t *testing.T) {
	s := runJetStream(t)
	clk := clocktest.New()
	ls := open(t, s, fakeConfig(clk.Now))
	kv := bucketKV(t, s)
	for i, v := range []string{
		`garbage`,
		`{"holder":"d1","epoch":0}`,
		`{"holder":"d1","epoch":0,"expires":"2000-01-01T00:00:00Z","x":1}`,
		`{"holder":"","epoch":0,"expires":"2000-01-01T00:00:00Z"}`,
		``,
	} {
		p := 20 + i
		rev, err := kv.Put(t.Context(), key(p), []byte(v))
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(24 * time.Hour)
		refused(t, ls, "d1", p, ErrNotLease)
		e, err := kv.Get(t.Context(), key(p))
		if err != nil || e.Revision() != rev || string(e.Value()) != v {
			t.Errorf("%q after the refusal: %v", v, err)
		}
	}
}

// TestLease_RenewAfterTheValidity: a holder whose validity ran out
// without a renewal has lost the lease; it does not write again.
func TestLease_RenewAfterTheValidity(t *testing.T) {
	s := runJetStream(t)
	clk := clocktest.New()
	ls := open(t, s, fakeConfig(clk.Now))
	kv := bucketKV(t, s)
	a := acquire(t, t.Context(), ls, "d1", 6)
	clk.Advance(55 * time.Minute)
	if err := a.Renew(t.Context()); !errors.Is(err, ErrLapsed) {
		t.Fatalf("Renew at the end of the validity = %v, want ErrLapsed", err)
	}
	lost(t, a, ErrLapsed)
	if _, rev := stored(t, kv, 6); rev != a.Token() {
		t.Errorf("record at revision %d after the lapse, want %d (untouched)", rev, a.Token())
	}
}

// TestLease_AdoptsItsOwnLostReply: a renewal that landed but whose reply
// was lost (written here behind the holder's back) is the holder's own;
// the same id in another tenure is not.
func TestLease_AdoptsItsOwnLostReply(t *testing.T) {
	s := runJetStream(t)
	clk := clocktest.New()
	ls := open(t, s, fakeConfig(clk.Now))
	kv := bucketKV(t, s)

	a := acquire(t, t.Context(), ls, "d1", 8)
	clk.Advance(time.Minute)
	_, rev := stored(t, kv, 8)
	landed, err := kv.Update(t.Context(), key(8), record{Holder: "d1", Epoch: a.Token(), Expires: clk.Now().Add(time.Hour)}.encode(), rev)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := a.Renew(t.Context()); err != nil {
		t.Fatalf("Renew after its own lost reply: %v", err)
	}
	if r, rev := stored(t, kv, 8); rev <= landed || !r.Expires.Equal(clk.Now().Add(time.Hour)) {
		t.Errorf("record %+v at %d, want a renewal after %d", r, rev, landed)
	}

	_, rev = stored(t, kv, 8)
	if _, err := kv.Update(t.Context(), key(8), record{Holder: "d1", Epoch: rev, Expires: clk.Now().Add(time.Hour)}.encode(), rev); err != nil {
		t.Fatal(err)
	}
	if err := a.Renew(t.Context()); !errors.Is(err, ErrTaken) {
		t.Fatalf("Renew after the same id wrote another epoch = %v, want ErrTaken", err)
	}
}

// TestLease_RenewsByItself: on the real clock, the holder's goroutine
// renews the record every RenewEvery without being asked.
func TestLease_RenewsByItself(t *testing.T) {
	s := runJetStream(t)
	cfg := Config{Bucket: bucket, TTL: time.Minute, Margin: 10 * time.Second, RenewEvery: 20 * time.Millisecond}
	ls := open(t, s, cfg)
	kv := bucketKV(t, s)
	w, err := kv.Watch(t.Context(), key(9), jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	a := acquire(t, t.Context(), ls, "d1", 9)
	renewals := 0
	deadline := time.After(time.Minute) // a bound, not a pace: renewals come every 20 ms
	for renewals < 3 {
		var e jetstream.KeyValueEntry
		select {
		case e = <-w.Updates():
		case <-deadline:
			t.Fatalf("%d renewals in a minute, want 3", renewals)
		}
		if e == nil { // the end of the initial values, if any
			continue
		}
		r, err := decodeRecord(e.Value(), e.Revision())
		if err != nil || r.Holder != "d1" {
			t.Fatalf("update %+v: %v", r, err)
		}
		if e.Revision() > a.Token() {
			if r.Epoch != a.Token() {
				t.Fatalf("renewal with epoch %d, want %d", r.Epoch, a.Token())
			}
			renewals++
		}
	}
	if err := a.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestLease_LapsesWhenItCannotRenew: on the real clock, a holder whose
// bucket stops answering loses the lease when its validity ends.
func TestLease_LapsesWhenItCannotRenew(t *testing.T) {
	s := runJetStream(t)
	cfg := Config{Bucket: bucket, TTL: time.Second, Margin: 200 * time.Millisecond, RenewEvery: 100 * time.Millisecond}
	ls := open(t, s, cfg)
	a := acquire(t, t.Context(), ls, "d1", 10)
	s.Shutdown()
	select {
	case <-a.Lost():
	case <-time.After(time.Minute):
		t.Fatal("the lease was not lost a minute after its bucket went away")
	}
	if err := a.Err(); !errors.Is(err, ErrLapsed) {
		t.Fatalf("lost: %v, want ErrLapsed", err)
	}
	if a.Valid(time.Now()) {
		t.Error("Valid after the lapse")
	}
}

// TestLease_BadArguments: configurations, holder ids and partitions
// Acquire and OpenLeases refuse.
func TestLease_BadArguments(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Bucket: bucket, Replicas: 6},
		{Bucket: bucket, Replicas: -1},
		{Bucket: bucket, TTL: -time.Second},
		{Bucket: bucket, TTL: time.Second, Margin: time.Second},
		{Bucket: bucket, TTL: time.Second, Margin: -1},
		{Bucket: bucket, TTL: time.Second, Margin: 500 * time.Millisecond, RenewEvery: 500 * time.Millisecond},
		{Bucket: bucket, RenewEvery: -1},
	} {
		if _, err := OpenLeases(t.Context(), nil, cfg); err == nil {
			t.Errorf("OpenLeases(%+v): no error", cfg)
		}
	}
	var c Config
	c.Bucket = bucket
	if err := c.fill(); err != nil || c.Replicas != 1 || c.TTL != 10*time.Second || c.Margin != 2*time.Second || c.RenewEvery != 2*time.Second || c.Clock == nil {
		t.Errorf("defaults: %+v, %v", c, err)
	}

	s := runJetStream(t)
	ls := open(t, s, fakeConfig(clocktest.New().Now))
	for _, h := range []string{"", "d 1", `d"1`, `d\1`, "d\x001", "dé", string(make([]byte, 129))} {
		if _, err := ls.Acquire(t.Context(), h, 0); err == nil {
			t.Errorf("Acquire(%q, 0): no error", h)
		}
	}
	for _, p := range []int{-1, MaxPartitions} {
		if _, err := ls.Acquire(t.Context(), "d1", p); !errors.Is(err, ErrPartition) {
			t.Errorf("Acquire(d1, %d) = %v, want ErrPartition", p, err)
		}
	}
}

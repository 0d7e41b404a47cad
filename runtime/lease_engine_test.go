package runtime

// Delivery leases through the Engine (lease.go; WACP Envelope §7
// redelivery), against real Badger. Expiry is driven by ExpireLeases with a
// fake clock, except in TestLeaseEngine_RunTimersWakesWaiter, which runs
// the timer loop.

import (
	"context"
	"testing"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

const testLease = time.Minute

func withLease(d time.Duration) func(*Config) {
	return func(c *Config) { c.DeliveryLease = d }
}

// leaseOK takes the next envelope of ws and checks it is id at attempt n.
func leaseOK(t testing.TB, e *Engine, ws, id string, n int) *envelope.Envelope {
	t.Helper()
	env, err := e.NextEnvelope(ctx, ws, 0)
	if err != nil || env == nil {
		t.Fatalf("NextEnvelope(%s) = %v, %v; want envelope %s (attempt %d)", ws, env, err, id, n)
	}
	if env.ID != id || env.Delivery == nil || env.Delivery.Attempt != n || env.Delivery.MaxAttempts != envelope.MaxDeliveries {
		t.Fatalf("NextEnvelope(%s) = %s with delivery %+v; want %s at attempt %d of %d", ws, env.ID, env.Delivery, id, n, envelope.MaxDeliveries)
	}
	return env
}

// leaseEnd returns when env's lease ends.
func leaseEnd(t testing.TB, env *envelope.Envelope) time.Time {
	t.Helper()
	at, err := clock.Parse(env.Delivery.LeaseExpiresAt)
	if err != nil {
		t.Fatalf("lease_expires_at %q: %v", env.Delivery.LeaseExpiresAt, err)
	}
	return at
}

func expire(t testing.TB, e *Engine, now time.Time, want int) {
	t.Helper()
	if n, err := e.ExpireLeases(ctx, now); n != want || err != nil {
		t.Fatalf("ExpireLeases(%s) = %d, %v; want %d", clock.Format(now), n, err, want)
	}
}

func emptyInbox(t testing.TB, e *Engine, ws string) {
	t.Helper()
	if env, err := e.NextEnvelope(ctx, ws, 0); env != nil || err != nil {
		t.Fatalf("NextEnvelope(%s) = %v, %v; want nothing to take", ws, env, err)
	}
}

// TestLeaseEngine_LostReplyRedelivered: an envelope taken and never
// acknowledged (the reply was lost) is not lost: it stays leased, then comes
// back when the lease ends, with envelope_redelivered in the receiver's
// trail, and the next lease is twice as long (linear backoff).
func TestLeaseEngine_LostReplyRedelivered(t *testing.T) {
	fc := newFakeClock()
	e := openVerified(t, withFakeClock(fc), withLease(testLease))
	w := idleWorker(t, e, e.Root())
	sent := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))

	first := leaseOK(t, e, w.ID, sent.ID, 1)
	end := leaseEnd(t, first)
	if d := end.Sub(fc.Now()); d < testLease || d > testLease+time.Second {
		t.Errorf("first lease ends %v after now, want %v", d, testLease)
	}
	emptyInbox(t, e, w.ID) // leased: not handed out twice
	expire(t, e, end.Add(-time.Nanosecond), 0)
	if got := localEntries(t, e, w.ID, trail.EventEnvelopeRedelivered); len(got) != 0 {
		t.Fatalf("envelope_redelivered before the lease ended: %d entries", len(got))
	}

	fc.Advance(testLease + time.Second)
	expire(t, e, end, 1)
	red := localEntries(t, e, w.ID, trail.EventEnvelopeRedelivered)
	if len(red) != 1 {
		t.Fatalf("envelope_redelivered entries in %s's trail = %d, want 1", w.ID, len(red))
	}
	b := entryBody(t, red[0])
	if len(b) != 4 || b["envelope_id"] != sent.ID || b["from"] != e.Root() || b["to"] != w.ID || b["timestamp"] != red[0].Timestamp {
		t.Errorf("envelope_redelivered body = %v; want envelope_id, from, to, timestamp of %s", b, sent.ID)
	}
	second := leaseOK(t, e, w.ID, sent.ID, 2)
	start, _ := clock.Parse(second.Delivery.LeaseExpiresAt)
	if d := start.Sub(fc.Now()); d < 2*testLease || d > 2*testLease+time.Second {
		t.Errorf("second lease lasts %v, want 2 × %v", d, testLease)
	}
}

// TestLeaseEngine_AckRemoves: an acknowledged envelope leaves the inbox for
// good; acknowledging again is harmless; another workspace cannot
// acknowledge it.
func TestLeaseEngine_AckRemoves(t *testing.T) {
	fc := newFakeClock()
	e := openVerified(t, withFakeClock(fc), withLease(testLease))
	w := idleWorker(t, e, e.Root())
	x := idleWorker(t, e, e.Root())
	a := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))
	b := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))

	env := leaseOK(t, e, w.ID, a.ID, 1)
	_, err := e.AckEnvelope(ctx, x.ID, a.ID)
	wantCode(t, "AckEnvelope by another workspace", err, wire.CodeNotFound)
	if res, err := e.AckEnvelope(ctx, w.ID, a.ID); err != nil || !res.Removed {
		t.Fatalf("AckEnvelope(%s) = %+v, %v; want removed", a.ID, res, err)
	}
	if res, err := e.AckEnvelope(ctx, w.ID, a.ID); err != nil || res.Removed {
		t.Errorf("AckEnvelope again = %+v, %v; want ok, not removed", res, err)
	}
	fc.Advance(10 * testLease)
	expire(t, e, leaseEnd(t, env).Add(10*testLease), 0)
	leaseOK(t, e, w.ID, b.ID, 1) // a is gone; b is next
	emptyInbox(t, e, w.ID)
	if got := localEntries(t, e, w.ID, trail.EventEnvelopeRedelivered); len(got) != 0 {
		t.Errorf("envelope_redelivered entries = %d after the ack, want 0", len(got))
	}
	// An envelope back after its lease ended is acknowledged all the same.
	fc.Advance(10 * testLease)
	expire(t, e, fc.Now(), 1)
	if res, err := e.AckEnvelope(ctx, w.ID, b.ID); err != nil || !res.Removed {
		t.Errorf("AckEnvelope of a redelivered envelope = %+v, %v; want removed", res, err)
	}
	emptyInbox(t, e, w.ID)
}

// TestLeaseEngine_AckLeased: what inbox.next does by default acknowledges
// every envelope leased to the workspace and nothing else.
func TestLeaseEngine_AckLeased(t *testing.T) {
	fc := newFakeClock()
	e := openVerified(t, withFakeClock(fc), withLease(testLease))
	w := idleWorker(t, e, e.Root())
	a := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))
	b := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))
	leaseOK(t, e, w.ID, a.ID, 1)
	ids, err := e.AckLeased(ctx, w.ID)
	if err != nil || len(ids) != 1 || ids[0] != a.ID {
		t.Fatalf("AckLeased = %v, %v; want [%s]", ids, err, a.ID)
	}
	leaseOK(t, e, w.ID, b.ID, 1)
	emptyInbox(t, e, w.ID)
	fc.Advance(10 * testLease)
	expire(t, e, fc.Now(), 1) // only b's lease was left
	leaseOK(t, e, w.ID, b.ID, 2)
}

// TestLeaseEngine_ExhaustedUndeliverable: four hand-overs (the first and 3
// redeliveries), each lease n × the base, then the envelope is
// undeliverable: envelope_undeliverable with reason delivery_exhausted in
// the sender's trail, a failed signal with that reason to the sender, and
// it leaves the inbox.
func TestLeaseEngine_ExhaustedUndeliverable(t *testing.T) {
	fc := newFakeClock()
	e := openVerified(t, withFakeClock(fc), withLease(testLease))
	w := idleWorker(t, e, e.Root())
	sent := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))
	for n := 1; n <= envelope.MaxDeliveries; n++ {
		env := leaseOK(t, e, w.ID, sent.ID, n)
		end := leaseEnd(t, env)
		if d := end.Sub(fc.Now()); d < time.Duration(n)*testLease || d > time.Duration(n)*testLease+time.Second {
			t.Errorf("lease %d lasts %v, want %d × %v", n, d, n, testLease)
		}
		if n < envelope.MaxDeliveries && len(trailWhere(t, e, trail.EventEnvelopeUndeliverable, nil)) != 0 {
			t.Fatalf("envelope_undeliverable after %d attempts", n)
		}
		fc.Advance(time.Duration(n)*testLease + time.Second)
		expire(t, e, fc.Now(), 1)
	}
	emptyInbox(t, e, w.ID)
	if got := localEntries(t, e, w.ID, trail.EventEnvelopeRedelivered); len(got) != envelope.MaxDeliveries-1 {
		t.Errorf("envelope_redelivered entries = %d, want %d", len(got), envelope.MaxDeliveries-1)
	}
	und := localEntries(t, e, e.Root(), trail.EventEnvelopeUndeliverable)
	if len(und) != 1 {
		t.Fatalf("envelope_undeliverable entries in the sender's trail = %d, want 1", len(und))
	}
	b := entryBody(t, und[0])
	if len(b) != 5 || b["envelope_id"] != sent.ID || b["from"] != e.Root() || b["to"] != w.ID ||
		b["reason"] != "delivery_exhausted" || b["timestamp"] != und[0].Timestamp {
		t.Errorf("envelope_undeliverable body = %v", b)
	}
	sigs := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{
		"type": string(taxonomy.SignalFailed), "from": w.ID, "reason": "delivery_exhausted", "ref": sent.ID})
	if len(sigs) != 1 {
		t.Errorf("failed signals with reason delivery_exhausted = %d, want 1", len(sigs))
	}
	if got := trailWhere(t, e, trail.EventSignalDelivered, map[string]string{"delivered_to": e.Root(), "from": w.ID}); len(got) < 2 {
		t.Errorf("signals from %s delivered to the sender = %d, want the acknowledged and the failed", w.ID, len(got))
	}
	if res, err := e.AckEnvelope(ctx, w.ID, sent.ID); err != nil || res.Removed {
		t.Errorf("AckEnvelope after exhaustion = %+v, %v; want ok, not removed", res, err)
	}
	if st := wsState(t, e, w.ID); st.Terminal() {
		t.Errorf("receiver is %s after delivery_exhausted; the signal has no state effect", st)
	}
}

// TestLeaseEngine_RestartKeepsLeases: leases and attempt counts are in the
// database: after a restart a leased envelope is still leased, and its
// attempts go on from where they were.
func TestLeaseEngine_RestartKeepsLeases(t *testing.T) {
	dir := t.TempDir()
	fc := newFakeClock()
	e := openEngineAt(t, dir, withFakeClock(fc), withLease(testLease))
	w := idleWorker(t, e, e.Root())
	sent := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))
	leaseOK(t, e, w.ID, sent.ID, 1)
	fc.Advance(testLease + time.Second)
	expire(t, e, fc.Now(), 1)
	env := leaseOK(t, e, w.ID, sent.ID, 2)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = openEngineAt(t, dir, withFakeClock(fc), withLease(testLease))
	emptyInbox(t, e, w.ID) // still leased
	end := leaseEnd(t, env)
	expire(t, e, end.Add(-time.Nanosecond), 0)
	fc.Advance(2*testLease + time.Second)
	expire(t, e, end, 1)
	leaseOK(t, e, w.ID, sent.ID, 3)
	verify(t, e)
}

// TestLeaseEngine_RunTimersWakesWaiter: the timer loop ends a lease on
// time, and an inbox.next waiting on the workspace's inbox gets the
// envelope back.
func TestLeaseEngine_RunTimersWakesWaiter(t *testing.T) {
	e := openVerified(t, withLease(50*time.Millisecond))
	w := idleWorker(t, e, e.Root())
	sent := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))
	tctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.RunTimers(tctx, time.Hour) }()
	defer func() { stop(); <-done }()

	leaseOK(t, e, w.ID, sent.ID, 1)
	env, err := e.NextEnvelope(ctx, w.ID, 20*time.Second)
	if err != nil || env == nil || env.ID != sent.ID || env.Delivery.Attempt != 2 {
		t.Fatalf("NextEnvelope while the envelope is leased = %v, %v; want it back at attempt 2 when the lease ends", env, err)
	}
	if got := localEntries(t, e, w.ID, trail.EventEnvelopeRedelivered); len(got) != 1 {
		t.Errorf("envelope_redelivered entries = %d, want 1", len(got))
	}
}

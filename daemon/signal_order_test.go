package daemon_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/trail"
)

// TestSignalsKeepOrderAfterAStreamError makes the WACP_SIGNALS stream
// refuse one signal (a second message on a subject, with a per-subject
// limit of one that discards new messages) while the signals behind it
// would be accepted. The publisher must not let a later signal pass the
// refused one: once the limit is lifted, the stream holds every signal, in
// commit order.
func TestSignalsKeepOrderAfterAStreamError(t *testing.T) {
	ctx := clientCtx(t)
	rig := newSignalRig(t, ctx, "signal-order-server-token")
	js, stream, nc := rig.js, rig.stream, rig.nc
	msgs := func() uint64 { return rig.msgs(t, ctx) }
	waitMsgs := func(n uint64) { rig.waitMsgs(t, ctx, n, 10*time.Second) }
	limit := func(on bool) {
		t.Helper()
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cfg := info.Config
		cfg.MaxMsgsPerSubject, cfg.Discard, cfg.DiscardNewPerSubject = -1, jetstream.DiscardOld, false
		if on {
			cfg.MaxMsgsPerSubject, cfg.Discard, cfg.DiscardNewPerSubject = 1, jetstream.DiscardNew, true
		}
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}

	coord := rig.coord
	worker := func() *client.Client { return rig.worker(t, ctx) }
	checkpoint := func(c *client.Client, parent *string) string {
		t.Helper()
		cp, err := artifact(ctx, c, parent)
		if err != nil {
			t.Fatal(err)
		}
		return cp.ID
	}

	// checkpoint id -> publish attempts of its signal
	attempts := countPublishAttempts(t, nc, func(_, ref string) string { return ref })
	attemptsOf := attempts.of

	w1, w2 := worker(), worker()
	// Setting up the workers signalled (their acknowledged receipts), and
	// the publisher stores those asynchronously: wait until the stream
	// holds every signal emitted so far.
	emitted, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: trail.EventSignalEmitted})
	if err != nil {
		t.Fatal(err)
	}
	before := uint64(len(emitted.Entries))
	waitMsgs(before)
	limit(true)
	first := checkpoint(w1, nil) // the first checkpoint signal on w1's subject: stored
	waitMsgs(before + 1)
	second := checkpoint(w1, &first) // a second on that subject: refused while the limit holds
	third := checkpoint(w2, nil)     // another subject: the stream would take it
	// The publisher tried the second, was refused, and tried it again (it
	// may send the third behind it; the stream must not keep it).
	for deadline := time.Now().Add(20 * time.Second); attemptsOf(second) < 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the publisher tried the refused signal %d times in 20s, want it to retry", attemptsOf(second))
		}
	}
	if got := msgs(); got != before+1 {
		t.Errorf("stream holds %d signals while the second is refused, want %d: a later signal passed it", got, before+1)
	}
	limit(false)
	waitMsgs(before + 3)

	var refs []string
	for seq := before + 1; seq <= before+3; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Ref string `json:"ref"`
		}
		if err := json.Unmarshal(m.Data, &s); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, s.Ref)
	}
	if want := []string{first, second, third}; !slices.Equal(refs, want) {
		t.Errorf("checkpoint signals in the stream refer to %v, want commit order %v", refs, want)
	}
}

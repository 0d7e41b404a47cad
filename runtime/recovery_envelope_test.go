package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// envelopeEvents returns the event types of the trail entries about the
// envelope id, in trail order.
func envelopeEvents(t testing.TB, e *Engine, id string) []trail.EventType {
	t.Helper()
	var got []trail.EventType
	for _, en := range globalTrail(t, e) {
		var b struct {
			ID string `json:"envelope_id"`
		}
		if json.Unmarshal(en.Body, &b) == nil && b.ID == id {
			got = append(got, en.EventType)
		}
	}
	return got
}

// TestRecovery_Envelopes_NothingInFlight (Recovery §5, "Envelope recovery"):
// an envelope is created and delivered in one commit, so a stop at any step
// of that commit leaves either no trace of it (the sender is told
// unavailable and may send again) or the envelope created, delivered and in
// its recipient's inbox after a restart — never one created and not
// delivered. A restart hands out once each the envelopes that were in the
// inbox.
func TestRecovery_Envelopes_NothingInFlight(t *testing.T) {
	// Learn the steps of one envelope's commit.
	var steps []string
	probe := openTest(t)
	pw := newWorker(t, probe)
	sendOK(t, probe, probe.Root(), envBody(pw.ID, "directive", ""))
	settled(t, probe)
	probe.cfg.failAt = func(step string) error { steps = append(steps, step); return nil }
	sendOK(t, probe, probe.Root(), envBody(pw.ID, "directive", ""))
	settled(t, probe)
	probe.cfg.failAt = nil
	if !slices.Contains(steps, "commit") {
		t.Fatalf("envelope commit steps %v lack commit", steps)
	}

	for i, step := range steps {
		if step == "badger" {
			continue // past the block's write the batch is durable (TestCrashConsistencyEveryStep)
		}
		t.Run(fmt.Sprintf("%02d_%s", i, step), func(t *testing.T) {
			dir := t.TempDir()
			e := openEngineAt(t, dir)
			w := newWorker(t, e)
			taken := drainInbox(t, e, w.ID) // newWorker's directive: leased, not acknowledged
			waiting := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))
			settled(t, e)
			before := int(e.Trail().Len())

			n := 0
			e.cfg.failAt = func(string) error {
				defer func() { n++ }()
				if n == i {
					return errors.New("disk on fire")
				}
				return nil
			}
			_, err := e.SendEnvelope(ctx, e.Root(), envBody(w.ID, "directive", ""))
			e.cfg.failAt = nil
			if Code(err) != wire.CodeUnavailable {
				t.Fatalf("SendEnvelope failing at %s: err = %v (code %q), want unavailable", step, err, Code(err))
			}
			waitAdmitting(t, e)
			// Nothing of the failed send is stored: system_degraded only.
			if got := int(e.Trail().Len()); got != before+1 {
				t.Fatalf("trail after a failure at %s: %d entries, want %d (system_degraded only)", step, got, before+1)
			}
			again := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}

			e2 := openEngineAt(t, dir)
			verify(t, e2)
			for _, id := range append(taken, waiting.ID, again.ID) {
				ev := envelopeEvents(t, e2, id)
				if len(ev) < 2 || ev[0] != trail.EventEnvelopeCreated || ev[1] != trail.EventEnvelopeDelivered {
					t.Fatalf("envelope %s after a restart: events %v, want envelope_created then envelope_delivered", id, ev)
				}
			}
			// The envelopes in the inbox are handed out once each, in order;
			// the one taken before the stop keeps its lease
			// (TestLeaseEngine_RestartKeepsLeases).
			got := drainInbox(t, e2, w.ID)
			if want := []string{waiting.ID, again.ID}; !slices.Equal(got, want) {
				t.Fatalf("inbox after a restart hands out %v, want %v", got, want)
			}
		})
	}
}

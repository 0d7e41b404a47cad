package daemon_test

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/trail"
)

// TestSignalsReachTheStreamOnceInEmissionOrder: workers checkpoint at once,
// so the publisher has many signals unconfirmed at a time; the stream must
// hold every emitted signal exactly once, in emission (id) order, with its
// id as Nats-Msg-Id.
func TestSignalsReachTheStreamOnceInEmissionOrder(t *testing.T) {
	ctx := clientCtx(t)
	rig := newSignalRig(t, ctx, "signal-pipeline-server-token")
	coord := rig.coord
	const workers, each = 8, 40
	ws := make([]*client.Client, workers)
	for i := range ws {
		ws[i] = rig.worker(t, ctx)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for _, c := range ws {
		wg.Go(func() {
			var parent *string
			for range each {
				cp, err := artifact(ctx, c, parent)
				if err != nil {
					errs <- err
					return
				}
				parent = &cp.ID
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var want []string
	for e, err := range coord.Entries(ctx, client.TrailQuery{EventType: trail.EventSignalEmitted}) {
		if err != nil {
			t.Fatal(err)
		}
		var b struct {
			SignalID string `json:"signal_id"`
		}
		if err := json.Unmarshal(e.Body, &b); err != nil {
			t.Fatal(err)
		}
		want = append(want, b.SignalID)
	}
	if len(want) < workers*each {
		t.Fatalf("trail has %d signal_emitted entries, want at least %d", len(want), workers*each)
	}

	rig.waitMsgs(t, ctx, uint64(len(want)), 20*time.Second)
	var got []string
	for seq := uint64(1); ; seq++ {
		m, err := rig.stream.GetMsg(ctx, seq)
		if err == jetstream.ErrMsgNotFound {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(m.Data, &s); err != nil {
			t.Fatal(err)
		}
		if h := m.Header.Get(jetstream.MsgIDHeader); h != s.ID {
			t.Errorf("signal %s published with Nats-Msg-Id %q", s.ID, h)
		}
		got = append(got, s.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("stream holds %d signals, trail emitted %d: not the same, once each, in emission order", len(got), len(want))
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("first difference at %d: stream %s, trail %s", i, got[i], want[i])
				break
			}
		}
	}
}

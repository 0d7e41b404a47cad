package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/signal"
)

// TestWatchDurableAcknowledges: a durable Watch acknowledges each signal
// its callback handled (without awaiting each acknowledgement, so that a
// slow round trip does not hold back the signals behind it): once the
// watch ends, the consumer has none pending and its ack floor is the last
// signal handled.
func TestWatchDurableAcknowledges(t *testing.T) {
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace} {
		t.Setenv(v, "")
	}
	ctx := testCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord := dial(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	worker := newWorker(t, ctx, coord, d.URL, true) // its acknowledged signal
	var head *string
	for range 3 {
		cp, err := worker.CreateCheckpoint(ctx, artifact(head, "provisional"))
		if err != nil {
			t.Fatal(err)
		}
		head = &cp.ID
	}
	const want = 4
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	seen := 0
	err := coord.Watch(wctx, client.WatchOptions{Durable: "acks", DeliverAll: true}, func(signal.Signal) error {
		if seen++; seen == want {
			stop()
		}
		return nil
	})
	if err != nil || seen != want {
		t.Fatalf("Watch = %v after %d signals, want nil after %d", err, seen, want)
	}
	info, err := coord.SignalsConsumer(ctx, "", "acks", false)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(rawConn(t, d.URL, d.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, info.Stream, info.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	// The acknowledgements were sent, not awaited: the server has them
	// shortly after.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ci, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ci.NumAckPending == 0 && ci.AckFloor.Consumer == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer after the watch: %d pending, ack floor %d; want 0 pending, floor %d",
				ci.NumAckPending, ci.AckFloor.Consumer, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

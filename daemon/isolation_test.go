package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wacpd/wacpd/daemon"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
)

// TestLongWaitsDoNotStarveOthers: agent tokens fill the daemon with long
// polls (inbox.next with a 20 s wait, 256 of them, the in-flight limit),
// from one token or spread over eight. Each token waits at most its share
// and is refused unavailable at once beyond it, and while the waits go on the
// coordinator, an auditor and another agent are served: a wait holds no
// request slot (with eight tokens the waits alone would fill the agents'
// slots).
func TestLongWaitsDoNotStarveOthers(t *testing.T) {
	for _, tokens := range []int{1, 8} {
		t.Run(fmt.Sprintf("%d tokens", tokens), func(t *testing.T) { starve(t, tokens) })
	}
}

func starve(t *testing.T, tokens int) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	other := directedWorker(t, ctx, coord)
	auditorToken, err := coord.CreateToken(ctx, "auditor", "starve")
	if err != nil {
		t.Fatal(err)
	}

	const waits, share = 256, 256 / 8
	replies := make(chan *nats.Msg, 2*waits)
	var first client.Created
	for k := range tokens {
		attacker := directedWorker(t, ctx, coord)
		if k == 0 {
			first = attacker
		}
		nc := natsConn(t, d.URL, attacker.Token)
		// Its directive first, so that its inbox is empty and every wait
		// waits.
		subject := "wacp.v1.agent." + attacker.Workspace.ID + ".inbox.next"
		if _, err := nc.Request(subject, []byte(`{}`), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := nc.ChanSubscribe("_INBOX.starve.>", replies); err != nil {
			t.Fatal(err)
		}
		for i := range waits / tokens {
			if err := nc.PublishRequest(subject, fmt.Sprintf("_INBOX.starve.%d", i), []byte(`{"wait":"20s"}`)); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// Every wait beyond a token's share is refused at once.
	want := waits - min(waits, tokens*share)
	refused := 0
	timeout := time.After(15 * time.Second)
	for refused < want {
		select {
		case m := <-replies:
			if code := m.Header.Get("Nats-Service-Error"); code != "unavailable" {
				t.Fatalf("a wait was answered %q (%s) while its inbox is empty, want unavailable", code, m.Data)
			}
			refused++
		case <-timeout:
			t.Fatalf("%d of %d waits refused in 15 s, want %d", refused, waits, want)
		}
	}

	if _, err := coord.Info(ctx); err != nil {
		t.Errorf("the coordinator's system.info while agents wait: %v", err)
	}
	if _, err := coord.ListWorkspaces(ctx, "", ""); err != nil {
		t.Errorf("the coordinator's workspace.list while agents wait: %v", err)
	}
	aud, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: auditorToken})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := aud.VerifyTrail(ctx, ""); err != nil || !v.OK {
		t.Errorf("an auditor's trail.verify while agents wait = %+v, %v", v, err)
	}
	oc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: other.Token, Workspace: other.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	if env, err := oc.NextEnvelope(ctx, 0); err != nil || env == nil {
		t.Errorf("another agent's inbox.next while agents wait = %v, %v; want its directive", env, err)
	}
	// The parked waits are still there: one is answered when an envelope
	// arrives.
	if _, err := coord.SendEnvelope(ctx, client.EnvelopeRequest{
		To: first.Workspace.ID, Type: taxonomy.EnvelopeFeedback, Payload: envelope.Payload{Content: "wake"},
	}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case m := <-replies:
			if m.Header.Get("Nats-Service-Error") != "" {
				t.Fatalf("a wait was refused late: %s", m.Data)
			}
			if !strings.Contains(string(m.Data), `"feedback"`) {
				t.Fatalf("a parked wait was answered %s, want the feedback envelope", m.Data)
			}
			return
		case <-timeout:
			t.Fatal("no parked wait was answered with the envelope sent to its inbox")
		}
	}
}

// TestAgentTokenEndsWithItsWorkspace: once a workspace is closed or failed,
// its agent's open connections are closed and its token is refused at
// connect.
func TestAgentTokenEndsWithItsWorkspace(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	closing, failing := directedWorker(t, ctx, coord), directedWorker(t, ctx, coord)
	tests := []struct {
		name string
		w    client.Created
		end  func(t *testing.T)
	}{
		{"closed", closing, func(t *testing.T) {
			wc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: closing.Token, Workspace: closing.Workspace.ID})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := wc.CreateCheckpoint(ctx, client.CheckpointRequest{
				Type: taxonomy.CheckpointArtifact, Intent: "done", Status: checkpointchain.StatusFinal,
				Confidence: checkpointchain.ConfidenceHigh,
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := wc.EmitSignal(ctx, client.SignalRequest{Type: string(taxonomy.SignalComplete)}); err != nil {
				t.Fatal(err)
			}
			if _, err := coord.Integrate(ctx, client.IntegrateRequest{Workspace: closing.Workspace.ID, Decision: "accept"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"failed", failing, func(t *testing.T) {
			if _, err := coord.Abort(ctx, failing.Workspace.ID, "ended"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gone := make(chan struct{})
			nc, err := nats.Connect(d.URL, nats.Token(tt.w.Token), nats.NoReconnect(),
				nats.ClosedHandler(func(*nats.Conn) { close(gone) }))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			tt.end(t)
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Error("the agent's open connection stays after its workspace ended")
			}
			_, err = client.Dial(ctx, client.Options{URL: d.URL, Token: tt.w.Token, Workspace: tt.w.Workspace.ID})
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Code != "unauthorized" {
				t.Errorf("Dial with the token of a %s workspace = %v, want unauthorized", tt.name, err)
			}
		})
	}
	// The coordinator's token is untouched.
	if _, err := coord.Info(ctx); err != nil {
		t.Errorf("the coordinator after its workspaces ended: %v", err)
	}
}

// TestSignalStreamRetention: past Config.SignalsMaxBytes the stream drops its
// oldest signals; the publisher goes on, and a durable consumer that was
// away goes on with the oldest signal kept.
func TestSignalStreamRetention(t *testing.T) {
	ctx := clientCtx(t)
	const limit = 8 << 10
	d := daemontest.Start(t, daemon.Config{SignalsMaxBytes: limit})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.SignalsConsumer(ctx, "", "away", false); err != nil {
		t.Fatal(err)
	}
	created := directedWorker(t, ctx, coord)
	wc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: created.Token, Workspace: created.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	var last checkpointchain.Checkpoint
	var parent *string
	const n = 100 // about 40 KiB of checkpoint signals
	for range n {
		if last, err = artifact(ctx, wc, parent); err != nil {
			t.Fatal(err)
		}
		parent = &last.ID
	}
	// The consumer that was away reads on, from the oldest kept signal to
	// the last checkpoint's: the publisher was never refused.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := 0
	err = coord.Watch(wctx, client.WatchOptions{Durable: "away"}, func(s signal.Signal) error {
		seen++
		if s.Ref != nil && *s.Ref == last.ID {
			cancel()
		}
		return nil
	})
	if err != nil || wctx.Err() == nil {
		t.Fatalf("Watch = %v before the last checkpoint's signal", err)
	}
	if seen >= n {
		t.Errorf("the consumer read %d signals, want fewer than %d: the stream kept them all", seen, n)
	}
	js, err := jetstream.New(natsConn(t, d.URL, d.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "WACP_SIGNALS")
	if err != nil {
		t.Fatal(err)
	}
	if st := s.CachedInfo().State; st.Bytes > limit || st.Msgs >= n {
		t.Errorf("WACP_SIGNALS holds %d messages, %d bytes; want fewer than %d, at most %d bytes", st.Msgs, st.Bytes, n, limit)
	}
}

// TestWatchSkipsWhatIsNotASignal: a message on a signal subject that is not
// a signal does not stop a watch. It is reported, skipped and never
// delivered again; the real signals around it arrive and are acknowledged.
// Nobody but the daemon can publish there on the embedded server, so the
// daemon runs on an external server whose own token can.
func TestWatchSkipsWhatIsNotASignal(t *testing.T) {
	ctx := clientCtx(t)
	const srvToken = "poison-server-token"
	d := daemontest.Start(t, daemon.Config{NATSURL: startNATSServer(t, srvToken), NATSToken: srvToken})
	opts := client.Options{URL: d.URL, Token: d.AdminToken, NATSToken: srvToken}
	coord, err := dialClient(t, ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	created := directedWorker(t, ctx, coord)
	wc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: created.Token, Workspace: created.Workspace.ID, NATSToken: srvToken})
	if err != nil {
		t.Fatal(err)
	}
	info, err := coord.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.SignalsConsumer(ctx, "", "ops", true); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(natsConn(t, d.URL, srvToken))
	if err != nil {
		t.Fatal(err)
	}
	poison := "wacp.v1.sig." + info.RootWorkspace + "." + created.Workspace.ID + ".complete"
	for _, body := range []string{"", "{}", `{"type":"io.nats.micro.v1.ping_response"}`, "not json"} {
		if _, err := js.Publish(ctx, poison, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	first, err := artifact(ctx, wc, nil)
	if err != nil {
		t.Fatal(err)
	}

	watchUntil := func(ref string) (got []string, skipped int) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		var mu sync.Mutex
		err := coord.Watch(wctx, client.WatchOptions{Durable: "ops", OnUndecodable: func(subject string, _ []byte, err error) {
			mu.Lock()
			defer mu.Unlock()
			if subject != poison || !errors.Is(err, client.ErrNotASignal) {
				t.Errorf("OnUndecodable(%s, %v), want %s and ErrNotASignal", subject, err, poison)
			}
			skipped++
		}}, func(s signal.Signal) error {
			if s.Ref != nil {
				got = append(got, *s.Ref)
				if *s.Ref == ref {
					cancel()
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Watch = %v, want it to go on past what is not a signal", err)
		}
		if !errors.Is(wctx.Err(), context.Canceled) {
			t.Fatalf("the signal of %s never arrived", ref)
		}
		return got, skipped
	}
	if got, skipped := watchUntil(first.ID); skipped != 4 || got[len(got)-1] != first.ID {
		t.Errorf("first watch: skipped %d, got %v; want 4 skipped and %s", skipped, got, first.ID)
	}
	second, err := artifact(ctx, wc, &first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, skipped := watchUntil(second.ID); skipped != 0 || len(got) != 1 {
		t.Errorf("second watch: skipped %d, got %v; want only %s: what was skipped and acknowledged is not delivered again", skipped, got, second.ID)
	}
}

// natsConn is a plain connection with token, closed when the test ends.
func natsConn(t *testing.T, url, token string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestPublisherTurnsJetStreamBackOn: when its disk fills, the NATS server
// turns JetStream off for good ("JetStream out of resources, will be
// DISABLED"). The publisher turns it on again once the disk has room, and
// the signals committed meanwhile arrive, without a restart.
func TestPublisherTurnsJetStreamBackOn(t *testing.T) {
	ctx := clientCtx(t)
	var ns *natsserver.Server
	d := daemontest.Start(t, daemon.WithServerHook(daemon.Config{}, func(s *natsserver.Server) { ns = s }))
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	created := directedWorker(t, ctx, coord)
	wc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: created.Token, Workspace: created.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	// What the server does on a full disk (handleOutOfSpace).
	if err := ns.ShutdownJetStream(); err != nil {
		t.Fatal(err)
	}
	cp, err := artifact(ctx, wc, nil)
	if err != nil {
		t.Fatalf("a checkpoint while JetStream is off: %v (the commit does not depend on the publish)", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		err := coord.Watch(wctx, client.WatchOptions{Durable: "back", DeliverAll: true}, func(s signal.Signal) error {
			if s.Ref != nil && *s.Ref == cp.ID {
				cancel()
			}
			return nil
		})
		if errors.Is(wctx.Err(), context.Canceled) {
			return // the signal arrived
		}
		if wctx.Err() != nil {
			t.Fatalf("the checkpoint's signal did not arrive in 20 s (last watch: %v): JetStream stays off", err)
		}
		// JetStream is still off: signals.consumer is unavailable. Try
		// again once the publisher had a chance (it retries every 250 ms).
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != "unavailable" {
			t.Fatalf("Watch while JetStream is off = %v, want unavailable", err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-wctx.Done():
		}
	}
}

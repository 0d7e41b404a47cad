package daemon_test

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
)

// signalRig is a daemon on a NATS server of the test's own (so that the
// test can read and reconfigure the WACP_SIGNALS stream with the server's
// token), the coordinator's client, and a connection to the stream.
type signalRig struct {
	url, token string
	d          *daemontest.Daemon
	coord      *client.Client
	nc         *nats.Conn
	js         jetstream.JetStream
	stream     jetstream.Stream
}

func newSignalRig(t *testing.T, ctx context.Context, token string) *signalRig {
	t.Helper()
	r := &signalRig{url: startNATSServer(t, token), token: token}
	r.d = daemontest.Start(t, daemon.Config{NATSURL: r.url, NATSToken: token})
	var err error
	if r.coord, err = dialClient(t, ctx, client.Options{URL: r.d.URL, Token: r.d.AdminToken, NATSToken: token}); err != nil {
		t.Fatal(err)
	}
	if r.nc, err = nats.Connect(r.url, nats.Token(token)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.nc.Close)
	if r.js, err = jetstream.New(r.nc); err != nil {
		t.Fatal(err)
	}
	if r.stream, err = r.js.Stream(ctx, "WACP_SIGNALS"); err != nil {
		t.Fatal(err)
	}
	return r
}

// worker creates a directed worker workspace and returns its agent's client.
func (r *signalRig) worker(t *testing.T, ctx context.Context) *client.Client {
	t.Helper()
	created := directedWorker(t, ctx, r.coord)
	c, err := dialClient(t, ctx, client.Options{URL: r.d.URL, Token: created.Token, Workspace: created.Workspace.ID, NATSToken: r.token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// msgs returns the number of signals the stream holds.
func (r *signalRig) msgs(t *testing.T, ctx context.Context) uint64 {
	t.Helper()
	info, err := r.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// waitMsgs waits until the stream holds n signals, for at most within.
func (r *signalRig) waitMsgs(t *testing.T, ctx context.Context, n uint64, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); r.msgs(t, ctx) != n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stream holds %d signals after %s, want %d", r.msgs(t, ctx), within, n)
		}
	}
}

// publishAttempts counts every attempt to publish a signal, stored or
// refused: each crosses the server, and a plain subscription on the signal
// subjects sees it. Attempts are counted under key(id, ref) of the signal.
type publishAttempts struct {
	mu sync.Mutex
	n  map[string]int
}

func countPublishAttempts(t *testing.T, nc *nats.Conn, key func(id, ref string) string) *publishAttempts {
	t.Helper()
	a := &publishAttempts{n: map[string]int{}}
	sub, err := nc.Subscribe("wacp.v1.sig.>", func(m *nats.Msg) {
		var s struct {
			ID  string `json:"id"`
			Ref string `json:"ref"`
		}
		if json.Unmarshal(m.Data, &s) != nil {
			return
		}
		if k := key(s.ID, s.Ref); k != "" {
			a.mu.Lock()
			a.n[k]++
			a.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return a
}

// of returns the attempts counted under k.
func (a *publishAttempts) of(k string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[k]
}

// all returns a copy of every count.
func (a *publishAttempts) all() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.n)
}

package client_test

// Delivery leases over the real daemon (embedded NATS, Badger): a lost
// inbox.next reply does not lose the envelope, inbox.next acknowledges the
// previous one, and the client drops repeats by envelope id.

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/wire"
)

// leaseWorld is a daemon with the given base lease, its coordinator, and a
// raw NATS connection of the coordinator for the live trail.
type leaseWorld struct {
	d     *daemontest.Daemon
	coord *client.Client
	admin *nats.Conn
}

func newLeaseWorld(t *testing.T, ctx context.Context, lease time.Duration) *leaseWorld {
	t.Helper()
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace} {
		t.Setenv(v, "")
	}
	d := daemontest.Start(t, daemon.Config{Config: runtime.Config{DeliveryLease: lease}})
	w := &leaseWorld{d: d, coord: dial(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})}
	w.admin = rawConn(t, d.URL, d.AdminToken)
	return w
}

// rawConn is a plain nats.go connection with token's own reply prefix.
func rawConn(t *testing.T, url, token string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token(token), nats.CustomInboxPrefix(wire.InboxPrefix(token)))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// worker creates an idle worker and returns its id and token.
func (w *leaseWorld) worker(t *testing.T, ctx context.Context) (id, token string) {
	t.Helper()
	created, err := w.coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if err != nil {
		t.Fatalf("CreateWorkspace = %v", err)
	}
	return created.Workspace.ID, created.Token
}

// redelivered subscribes to the live trail's envelope_redelivered entries
// of workspace ws.
func (w *leaseWorld) redelivered(t *testing.T, ws string) *nats.Subscription {
	t.Helper()
	sub, err := w.admin.SubscribeSync("wacp.v1.trail." + ws + ".envelope_redelivered")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.admin.Flush(); err != nil {
		t.Fatal(err)
	}
	return sub
}

// nextRedelivered waits for the next envelope_redelivered entry on sub and
// returns its body.
func nextRedelivered(t *testing.T, sub *nats.Subscription) map[string]any {
	t.Helper()
	m, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no envelope_redelivered in the live trail: %v", err)
	}
	var entry struct {
		EventType string         `json:"event_type"`
		Body      map[string]any `json:"body"`
	}
	if err := json.Unmarshal(m.Data, &entry); err != nil || entry.EventType != "envelope_redelivered" {
		t.Fatalf("live trail entry %s (%v); want envelope_redelivered", m.Data, err)
	}
	return entry.Body
}

// call makes one agent request on nc and returns the reply body; an error
// reply fails the test.
func call(t *testing.T, nc *nats.Conn, ws, op, body string) []byte {
	t.Helper()
	m, err := nc.Request("wacp.v1.agent."+ws+"."+op, []byte(body), 10*time.Second)
	if err != nil {
		t.Fatalf("%s %s: %v", op, body, err)
	}
	if code := m.Header.Get("Nats-Service-Error"); code != "" {
		t.Fatalf("%s %s = %s: %s", op, body, code, m.Data)
	}
	return m.Data
}

func takeRaw(t *testing.T, nc *nats.Conn, ws, body string) envelope.Envelope {
	t.Helper()
	var env envelope.Envelope
	if err := json.Unmarshal(call(t, nc, ws, "inbox.next", body), &env); err != nil {
		t.Fatal(err)
	}
	return env
}

func ackRaw(t *testing.T, nc *nats.Conn, ws, id string) bool {
	t.Helper()
	var r struct{ Removed bool }
	if err := json.Unmarshal(call(t, nc, ws, "inbox.ack", `{"id":"`+id+`"}`), &r); err != nil {
		t.Fatal(err)
	}
	return r.Removed
}

// TestInboxLostReply: an agent asks inbox.next and its reply never reaches
// it (nobody listens on the reply subject, and the connection goes away).
// The envelope is not lost: when the lease ends the daemon records
// envelope_redelivered and hands the same envelope out again, attempt 2.
func TestInboxLostReply(t *testing.T) {
	ctx := testCtx(t)
	w := newLeaseWorld(t, ctx, 300*time.Millisecond)
	ws, token := w.worker(t, ctx)
	sent := directive(t, ctx, w.coord, ws, "do not lose me")
	sub := w.redelivered(t, ws)

	lost := rawConn(t, w.d.URL, token)
	if err := lost.PublishRequest("wacp.v1.agent."+ws+".inbox.next", lost.NewInbox(), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := lost.Flush(); err != nil {
		t.Fatal(err)
	}
	lost.Close()

	body := nextRedelivered(t, sub)
	if body["envelope_id"] != sent.ID || body["from"] != sent.From || body["to"] != ws || body["timestamp"] == nil {
		t.Errorf("envelope_redelivered body = %v; want envelope_id %s, from, to, timestamp", body, sent.ID)
	}
	agent := dial(t, ctx, client.Options{URL: w.d.URL, Token: token, Workspace: ws})
	env, err := agent.NextEnvelope(ctx, 10*time.Second)
	if err != nil || env == nil || env.ID != sent.ID || env.Delivery == nil || env.Delivery.Attempt != 2 {
		t.Fatalf("NextEnvelope after the lost reply = %+v, %v; want %s again at attempt 2", env, err, sent.ID)
	}
	if env.Payload.Content != "do not lose me" {
		t.Errorf("redelivered content = %q", env.Payload.Content)
	}
	if removed, err := agent.Ack(ctx, env.ID); err != nil || !removed {
		t.Errorf("Ack(%s) = %v, %v; want removed", env.ID, removed, err)
	}
}

// TestInboxNextAcksPrevious: a wire-v1 inbox.next acknowledges the
// envelope leased to the caller before taking the next; with
// ack_previous:false it leaves it leased for inbox.ack.
func TestInboxNextAcksPrevious(t *testing.T) {
	ctx := testCtx(t)
	w := newLeaseWorld(t, ctx, time.Hour)
	ws, token := w.worker(t, ctx)
	a := directive(t, ctx, w.coord, ws, "a")
	b := directive(t, ctx, w.coord, ws, "b")
	c := directive(t, ctx, w.coord, ws, "c")
	nc := rawConn(t, w.d.URL, token)

	if got := takeRaw(t, nc, ws, `{}`); got.ID != a.ID || got.Delivery == nil || got.Delivery.Attempt != 1 {
		t.Fatalf("inbox.next = %s %+v, want %s at attempt 1", got.ID, got.Delivery, a.ID)
	}
	if got := takeRaw(t, nc, ws, `{}`); got.ID != b.ID {
		t.Fatalf("second inbox.next = %s, want %s", got.ID, b.ID)
	}
	if ackRaw(t, nc, ws, a.ID) {
		t.Errorf("inbox.ack %s removed it; want it already acknowledged by the second inbox.next", a.ID)
	}
	if got := takeRaw(t, nc, ws, `{"ack_previous":false}`); got.ID != c.ID {
		t.Fatalf("inbox.next ack_previous:false = %s, want %s", got.ID, c.ID)
	}
	if !ackRaw(t, nc, ws, b.ID) {
		t.Errorf("inbox.ack %s did not remove it; ack_previous:false must leave it leased", b.ID)
	}
	if !ackRaw(t, nc, ws, c.ID) {
		t.Errorf("inbox.ack %s did not remove it", c.ID)
	}
	if got := call(t, nc, ws, "inbox.next", `{}`); string(got) != "{}" {
		t.Errorf("inbox.next on an acknowledged inbox = %s, want {}", got)
	}
}

// TestClientDropsRepeats: the client's acknowledgement of an envelope it
// handled is lost (here: its context was already done), so the daemon
// delivers the envelope again after its lease. The client recognises the
// id, acknowledges it again and skips it.
func TestClientDropsRepeats(t *testing.T) {
	ctx := testCtx(t)
	w := newLeaseWorld(t, ctx, 300*time.Millisecond)
	ws, token := w.worker(t, ctx)
	a := directive(t, ctx, w.coord, ws, "a")
	sub := w.redelivered(t, ws)
	agent := dial(t, ctx, client.Options{URL: w.d.URL, Token: token, Workspace: ws})

	env, err := agent.NextEnvelope(ctx, 10*time.Second)
	if err != nil || env == nil || env.ID != a.ID {
		t.Fatalf("NextEnvelope = %+v, %v; want %s", env, err, a.ID)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := agent.Ack(done, a.ID); err == nil {
		t.Fatal("Ack with a done context succeeded; the test needs it lost")
	}
	if body := nextRedelivered(t, sub); body["envelope_id"] != a.ID {
		t.Fatalf("envelope_redelivered of %v, want %s", body["envelope_id"], a.ID)
	}
	b := directive(t, ctx, w.coord, ws, "b")
	env, err = agent.NextEnvelope(ctx, 10*time.Second)
	if err != nil || env == nil || env.ID != b.ID {
		t.Fatalf("NextEnvelope after the repeat = %+v, %v; want %s (the repeat of %s dropped)", env, err, b.ID, a.ID)
	}
	nc := rawConn(t, w.d.URL, token)
	if ackRaw(t, nc, ws, a.ID) {
		t.Errorf("inbox.ack %s removed it; the client should have acknowledged the repeat", a.ID)
	}
}

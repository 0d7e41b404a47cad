package daemon

import (
	"log/slog"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/trail"
)

// TestLiveFeedSkipsSubjectsNobodyReads: the live feed publishes an entry
// only on a subject someone subscribes to (the server's own count of
// interest), and then as the entry's encoding.
func TestLiveFeedSkipsSubjectsNobodyReads(t *testing.T) {
	ns := runNATSServer(t, &natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true, NoLog: true})
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	p := &publisher{nc: nc, lg: slog.New(slog.DiscardHandler), interest: ns.GlobalAccount().SubscriptionInterest}
	entry := func(id, ws string) trail.Entry {
		return trail.Entry{ID: id, Timestamp: "2026-11-25T00:00:00Z", Workspace: ws, Actor: trail.ActorProtocol,
			EventType: trail.EventCheckpointCreated, Body: []byte(`{"checkpoint_id":"c"}`), Integrity: trail.Integrity{Algorithm: trail.Algorithm}}
	}
	entries := []trail.Entry{entry("e1", "w1"), entry("e2", "w2"), entry("e3", "")}
	published := func() uint64 {
		t.Helper()
		before := nc.Stats().OutMsgs
		p.feed = entries
		p.publishFeed()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return nc.Stats().OutMsgs - before
	}
	if n := published(); n != 0 {
		t.Fatalf("with no subscriber the feed published %d messages, want 0", n)
	}
	sub, err := nc.SubscribeSync("wacp.v1.trail.w1.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := published(); n != 1 {
		t.Fatalf("with a subscriber to w1's feed the feed published %d messages, want 1", n)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := entries[0].MarshalJSON()
	if m.Subject != "wacp.v1.trail.w1.checkpoint_created" || string(m.Data) != string(want) {
		t.Errorf("feed message %s %s, want wacp.v1.trail.w1.checkpoint_created %s", m.Subject, m.Data, want)
	}
}

// runNATSServer runs a NATS server with opts and stops it at cleanup;
// with a log, the server logs into it from its start.
func runNATSServer(t *testing.T, opts *natsserver.Options, log ...natsserver.Logger) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) > 0 && log[0] != nil {
		ns.SetLoggerV2(log[0], false, false, false)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	return ns
}

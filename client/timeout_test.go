package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/client"
)

// TestCallTimesOut: a request that a service receives and never answers
// ends after the client's timeout with ErrUnreachable, "no reply in time"
// (here Dial's first call, system.info, to a NATS server whose only
// subscriber takes every request and answers none).
func TestCallTimesOut(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	taken := make(chan string, 1)
	if _, err := nc.Subscribe(">", func(m *nats.Msg) {
		select {
		case taken <- m.Subject:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace} {
		t.Setenv(v, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = client.Dial(ctx, client.Options{URL: ns.ClientURL(), Token: "wacp_x", Timeout: 300 * time.Millisecond})
	if !errors.Is(err, client.ErrUnreachable) || !strings.Contains(err.Error(), "no reply in time") {
		t.Fatalf("Dial to a service that never answers = %v, want ErrUnreachable, no reply in time", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Dial gave up after %v, before its timeout of 300ms", d)
	}
	select {
	case s := <-taken:
		if !strings.Contains(s, "system.info") {
			t.Errorf("the request went to %s, want system.info", s)
		}
	default:
		t.Error("the service received no request")
	}
}

package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/wire"
)

// routedWorld is an authzWorld whose embedded server the test can inspect.
type routedWorld struct {
	*authzWorld
	ns *natsserver.Server
}

func newRoutedWorld(t *testing.T, cfg daemon.Config) *routedWorld {
	t.Helper()
	nsc := make(chan *natsserver.Server, 1)
	cfg = daemon.WithServerHook(cfg, func(ns *natsserver.Server) { nsc <- ns })
	w := newAuthzWorldCfg(t, cfg)
	return &routedWorld{authzWorld: w, ns: <-nsc}
}

// activeWorker creates an active worker and connects as it.
func (w *authzWorld) activeWorker(t *testing.T) (created, *agentConn) {
	t.Helper()
	c := w.create(t, w.admin, `{"role":"worker"}`)
	w.admin.do("envelope", `{"to":"`+c.id+`","type":"directive"}`)
	return c, w.server.dialAgent(t, c.token, c.id)
}

// routed reports whether the daemon's account has a subscription to ws's
// agent subjects besides micro's endpoints (which match no subject of
// five tokens after the workspace).
func (w *routedWorld) routed(ws string) bool {
	return w.ns.GlobalAccount().SubscriptionInterest("wacp.v1.agent." + ws + ".no.such.op.here")
}

// routedStats is one endpoint's routed requests in $SRV.STATS.
type routedStats struct {
	NumRequests int `json:"num_requests"`
	NumErrors   int `json:"num_errors"`
}

func (w *authzWorld) routedStats(t *testing.T, endpoint string) routedStats {
	t.Helper()
	var st struct {
		Endpoints []struct {
			Name string `json:"name"`
			Data struct {
				Routed *routedStats `json:"routed"`
			} `json:"data"`
		} `json:"endpoints"`
	}
	w.admin.decode(w.admin.call("$SRV.STATS.wacp", ``), &st)
	for _, e := range st.Endpoints {
		if e.Name == endpoint {
			if e.Data.Routed == nil {
				t.Fatalf("$SRV.STATS %s has no data.routed", endpoint)
			}
			return *e.Data.Routed
		}
	}
	t.Fatalf("$SRV.STATS has no endpoint %s", endpoint)
	return routedStats{}
}

// TestRoutedRequests: a worker's agent requests are routed to the daemon
// from the moment it is let in; a subject under its workspace that names
// no endpoint is not_found at once (not a timeout); $SRV.STATS counts the
// routed requests of each endpoint, errors apart.
func TestRoutedRequests(t *testing.T) {
	w := newRoutedWorld(t, daemon.Config{})
	a, ac := w.activeWorker(t)
	if !w.routed(a.id) {
		t.Fatalf("workspace %s is not routed to the daemon after its agent connected", a.id)
	}

	m, err := ac.nc.Request("wacp.v1.agent."+a.id+".no.such.op", []byte(`{}`), 5*time.Second)
	if err != nil {
		t.Fatalf("request to no endpoint: %v, want a not_found answer", err)
	}
	if code := m.Header.Get("Nats-Service-Error"); code != "not_found" {
		t.Errorf("request to no endpoint = %q %s, want not_found", code, m.Data)
	}

	before := w.routedStats(t, "agent_signal")
	ac.do("signal", `{"type":"started"}`)
	m, err = ac.nc.Request("wacp.v1.agent."+a.id+".signal", []byte(`{"type":"no-such-signal"}`), 5*time.Second)
	if err != nil || m.Header.Get("Nats-Service-Error") == "" {
		t.Fatalf("a bad signal = %v %s, want an error answer", err, m.Data)
	}
	after := w.routedStats(t, "agent_signal")
	if got := after.NumRequests - before.NumRequests; got != 2 {
		t.Errorf("$SRV.STATS agent_signal data.routed.num_requests grew by %d, want 2", got)
	}
	if got := after.NumErrors - before.NumErrors; got != 1 {
		t.Errorf("$SRV.STATS agent_signal data.routed.num_errors grew by %d, want 1", got)
	}
}

// TestRouteEndsWithItsWorkspace: when a workspace ends, the daemon stops
// taking its routed subjects.
func TestRouteEndsWithItsWorkspace(t *testing.T) {
	w := newRoutedWorld(t, daemon.Config{})
	a, _ := w.activeWorker(t)
	if !w.routed(a.id) {
		t.Fatalf("workspace %s is not routed", a.id)
	}
	w.admin.do("workspace.abort", `{"id":"`+a.id+`","reason":"test"}`)
	deadline := time.Now().Add(10 * time.Second)
	for w.routed(a.id) {
		if time.Now().After(deadline) {
			t.Fatal("an aborted workspace is still routed after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRouteDropsWhatIsNotARequest: a message on a worker's own checkpoint
// subject without an inbox to answer to (none, the subject itself, another
// subject) is not taken as a request: that is how another service's
// answer, pointed at the worker's endpoint, would arrive. The worker's
// chain is still empty after the daemon stopped (its shutdown waits for
// the requests it took) and started again.
func TestRouteDropsWhatIsNotARequest(t *testing.T) {
	dir := t.TempDir()
	d := daemontest.Start(t, daemon.Config{DataDir: dir})
	w := coordinatorOf(t, d)
	a, ac := w.activeWorker(t)

	cp := []byte(`{"type":"artifact","intent":"reflected","status":"provisional","confidence":"high"}`)
	for _, reply := range []string{"", "wacp.v1.agent." + a.id + ".checkpoint", "elsewhere"} {
		if err := ac.nc.PublishMsg(&nats.Msg{Subject: "wacp.v1.agent." + a.id + ".checkpoint", Reply: reply, Data: cp}); err != nil {
			t.Fatal(err)
		}
	}
	// One connection's messages reach the route in order, and it hands
	// them over in order: once this is answered, the three were dropped or
	// handed over, and Stop waits for what was handed over.
	ac.do("workspace.get", `{}`)
	ac.close()
	d.Stop()

	d = daemontest.Start(t, daemon.Config{DataDir: dir})
	ac = (server{url: d.URL}).dialAgent(t, a.token, a.id)
	var list struct {
		Checkpoints []json.RawMessage `json:"checkpoints"`
	}
	ac.decode(ac.do("checkpoint.list", `{}`), &list)
	if len(list.Checkpoints) != 0 {
		t.Errorf("the worker's chain holds %d checkpoints, want 0: a message without an inbox was taken as a request", len(list.Checkpoints))
	}
}

// TestRouteBeforeTheServiceIsOneRequest: a coordinator connected before
// the service started has its route made first and micro's subscriptions
// after it, so micro's see its requests too; each still has one effect,
// even with a Nats-Request-Info header of the sender's naming its own
// account. The test waits until micro has taken its copy, then stops the
// daemon (which waits for the handlers it started) and counts.
func TestRouteBeforeTheServiceIsOneRequest(t *testing.T) {
	dir := t.TempDir()
	early := make(chan *nats.Conn, 1)
	cfg := daemon.WithServerHook(daemon.Config{DataDir: dir}, func(ns *natsserver.Server) {
		tok, err := os.ReadFile(filepath.Join(dir, daemon.AdminTokenFile))
		if err != nil {
			t.Error(err)
			early <- nil
			return
		}
		nc, err := nats.Connect(ns.ClientURL(), nats.Token(strings.TrimSpace(string(tok))))
		if err != nil {
			t.Error(err)
		}
		early <- nc
	})
	d := daemontest.Start(t, cfg)
	nc := <-early
	if nc == nil {
		t.FailNow()
	}
	defer nc.Close()
	w := coordinatorOf(t, d)
	count := func(c *agentConn) int {
		var page struct {
			Workspaces []json.RawMessage `json:"workspaces"`
		}
		c.decode(c.do("workspace.list", `{}`), &page)
		return len(page.Workspaces)
	}
	before := count(w.admin)
	microSeen := func() int {
		var st struct {
			Endpoints []struct {
				Name        string `json:"name"`
				NumRequests int    `json:"num_requests"`
			} `json:"endpoints"`
		}
		w.admin.decode(w.admin.call("$SRV.STATS.wacp", ``), &st)
		for _, e := range st.Endpoints {
			if e.Name == "agent_workspace_create" {
				return e.NumRequests
			}
		}
		return 0
	}
	seen := microSeen()

	m := nats.NewMsg("wacp.v1.agent." + w.root + ".workspace.create")
	m.Data = []byte(`{"role":"worker"}`)
	m.Header.Set("Nats-Request-Info", `{"acc":"coordinator:`+w.root+`"}`)
	if _, err := nc.RequestMsg(m, 10*time.Second); err != nil {
		t.Fatalf("workspace.create: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for microSeen() == seen {
		if time.Now().After(deadline) {
			t.Fatal("micro's subscription never saw the early connection's request: the case this test is about did not happen")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.admin.close()
	nc.Close()
	d.Stop()

	d = daemontest.Start(t, daemon.Config{DataDir: dir})
	admin := (server{url: d.URL}).dialAgent(t, d.AdminToken, w.root)
	if got := count(admin) - before; got != 1 {
		t.Errorf("one workspace.create made %d workspaces, want 1", got)
	}
}

// coordinatorOf returns a bare authzWorld of d: the coordinator connected,
// acting as the root.
func coordinatorOf(t *testing.T, d *daemontest.Daemon) *authzWorld {
	t.Helper()
	w := &authzWorld{server: server{url: d.URL}}
	w.admin = w.server.dialAgent(t, d.AdminToken, "")
	var info struct {
		Root string `json:"root_workspace"`
	}
	w.admin.decode(w.admin.call("wacp.v1.system.info", `{}`), &info)
	w.root, w.admin.ws = info.Root, info.Root
	return w
}

// TestRouteFirstSubscriptionsAtOnce: the first subscriptions of two
// connections of one routed account, made at the same moment, do not race
// in the embedded server. Each subscription in such an account is mapped
// back through the account's reply import, whose reverse mapping the
// server builds on first use without a lock (nats-server v2.15.2,
// client.addShadowSub); the daemon builds it before the account's first
// client is let in. Under -race this fails without that.
func TestRouteFirstSubscriptionsAtOnce(t *testing.T) {
	w := newRoutedWorld(t, daemon.Config{})
	for range 8 {
		c := w.create(t, w.admin, `{"role":"worker"}`)
		w.admin.do("envelope", `{"to":"`+c.id+`","type":"directive"}`)
		errs := make(chan error, 2)
		for range 2 {
			go func() {
				nc, err := nats.Connect(w.server.url, nats.Token(c.token), nats.NoReconnect(),
					nats.CustomInboxPrefix(wire.InboxPrefix(c.token)))
				if err != nil {
					errs <- err
					return
				}
				defer nc.Close()
				if _, err := nc.SubscribeSync(wire.InboxPrefix(c.token) + ".x.*"); err != nil {
					errs <- err
					return
				}
				errs <- nc.Flush()
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("connect and subscribe as %s: %v", c.id, err)
			}
		}
	}
}

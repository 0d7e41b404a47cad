package daemon_test

import (
	"encoding/json"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
)

// servedWorld is an authzWorld whose embedded server the test can inspect.
type servedWorld struct {
	*authzWorld
	ns *natsserver.Server
}

func newServedWorld(t *testing.T, cfg daemon.Config) *servedWorld {
	t.Helper()
	nsc := make(chan *natsserver.Server, 1)
	cfg = daemon.WithServerHook(cfg, func(ns *natsserver.Server) { nsc <- ns })
	w := newAuthzWorldCfg(t, cfg)
	return &servedWorld{authzWorld: w, ns: <-nsc}
}

// accountServers returns the connections of the daemon's account server
// for principal p ("agent:<ws>"), with the account each is in.
func (w *servedWorld) accountServers(t *testing.T, p string) []*natsserver.ConnInfo {
	t.Helper()
	cz, err := w.ns.Connz(&natsserver.ConnzOptions{User: "wacpd for " + p, Limit: 16, Username: true})
	if err != nil {
		t.Fatal(err)
	}
	return cz.Conns
}

// waitAccountServers waits until principal p's account server has n
// connections (the daemon closes them after a commit or a tick, on its
// own goroutines).
func (w *servedWorld) waitAccountServers(t *testing.T, p string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(w.accountServers(t, p)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d account server connections after 10s, want %d", p, len(w.accountServers(t, p)), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// endpointStats is one endpoint of $SRV.STATS.
type endpointStats struct {
	Name        string `json:"name"`
	NumRequests int    `json:"num_requests"`
	Data        struct {
		InAccounts struct {
			NumRequests int `json:"num_requests"`
			NumErrors   int `json:"num_errors"`
		} `json:"in_accounts"`
	} `json:"data"`
}

func (w *servedWorld) stats(t *testing.T, endpoint string) endpointStats {
	t.Helper()
	var st struct {
		Endpoints []endpointStats `json:"endpoints"`
	}
	w.admin.decode(w.admin.call("$SRV.STATS.wacp", ``), &st)
	for _, e := range st.Endpoints {
		if e.Name == endpoint {
			return e
		}
	}
	t.Fatalf("$SRV.STATS has no endpoint %s", endpoint)
	return endpointStats{}
}

// TestAccountServerAnswersInTheCallersAccount: a worker's requests are
// answered by the daemon's connection in the worker's own account, made
// when the worker connected; a subject under its grants that names no
// endpoint is not_found at once (not a timeout); $SRV.STATS counts what the
// account servers answered, errors apart.
func TestAccountServerAnswersInTheCallersAccount(t *testing.T) {
	w := newServedWorld(t, daemon.Config{})
	a := w.create(t, w.admin, `{"role":"worker"}`)
	w.admin.do("envelope", `{"to":"`+a.id+`","type":"directive"}`)
	ac := w.server.dialAgent(t, a.token, a.id)

	conns := w.accountServers(t, "agent:"+a.id)
	if len(conns) != 1 || conns[0].Account != "agent:"+a.id {
		t.Fatalf("account servers of agent:%s = %+v, want one connection in account agent:%s", a.id, conns, a.id)
	}

	m, err := ac.nc.Request("wacp.v1.agent."+a.id+".no.such.op", []byte(`{}`), 5*time.Second)
	if err != nil {
		t.Fatalf("request to no endpoint: %v, want a not_found answer", err)
	}
	if code := m.Header.Get("Nats-Service-Error"); code != "not_found" {
		t.Errorf("request to no endpoint = %q %s, want not_found", code, m.Data)
	}

	before := w.stats(t, "agent_signal")
	ac.do("signal", `{"type":"started"}`)
	m, err = ac.nc.Request("wacp.v1.agent."+a.id+".signal", []byte(`{"type":"no-such-signal"}`), 5*time.Second)
	if err != nil || m.Header.Get("Nats-Service-Error") == "" {
		t.Fatalf("a bad signal = %v %s, want an error answer", err, m.Data)
	}
	after := w.stats(t, "agent_signal")
	if got := after.Data.InAccounts.NumRequests - before.Data.InAccounts.NumRequests; got != 2 {
		t.Errorf("$SRV.STATS agent_signal in_accounts.num_requests grew by %d, want 2", got)
	}
	if got := after.Data.InAccounts.NumErrors - before.Data.InAccounts.NumErrors; got != 1 {
		t.Errorf("$SRV.STATS agent_signal in_accounts.num_errors grew by %d, want 1", got)
	}
}

// TestAccountServerDropsWhatIsNotARequest: a message on a worker's own
// checkpoint endpoint without an inbox to answer to (none, the endpoint
// itself, another subject) is not taken as a request: that is how another
// service's answer, reflected onto the endpoint, would arrive. The
// worker's chain is still empty after the daemon stopped (its shutdown
// waits for the requests it took) and started again.
func TestAccountServerDropsWhatIsNotARequest(t *testing.T) {
	dir := t.TempDir()
	d := daemontest.Start(t, daemon.Config{DataDir: dir})
	w := &servedWorld{authzWorld: &authzWorld{server: server{url: d.URL}}}
	w.admin = w.server.dialAgent(t, d.AdminToken, "")
	var info struct {
		Root string `json:"root_workspace"`
	}
	w.admin.decode(w.admin.call("wacp.v1.system.info", `{}`), &info)
	w.root, w.admin.ws = info.Root, info.Root
	a, ac := w.activeWorker(t)

	cp := []byte(`{"type":"artifact","intent":"reflected","status":"provisional","confidence":"high"}`)
	for _, reply := range []string{"", "wacp.v1.agent." + a.id + ".checkpoint", "elsewhere"} {
		if err := ac.nc.PublishMsg(&nats.Msg{Subject: "wacp.v1.agent." + a.id + ".checkpoint", Reply: reply, Data: cp}); err != nil {
			t.Fatal(err)
		}
	}
	// One connection's messages reach the account server in order, and it
	// hands them over in order: once this is answered, the three were
	// dropped or handed over, and Stop waits for what was handed over.
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

// activeWorker creates an active worker and connects as it.
func (w *servedWorld) activeWorker(t *testing.T) (created, *agentConn) {
	t.Helper()
	c := w.create(t, w.admin, `{"role":"worker"}`)
	w.admin.do("envelope", `{"to":"`+c.id+`","type":"directive"}`)
	return c, w.server.dialAgent(t, c.token, c.id)
}

// TestIdleAccountServerCloses: an account server whose principal has had
// no connection for the idle time closes, and is made again at the
// principal's next connection; one whose principal stays connected is
// kept.
func TestIdleAccountServerCloses(t *testing.T) {
	w := newServedWorld(t, daemon.WithAccountIdle(daemon.Config{}, 40*time.Millisecond))
	kept, keptConn := w.activeWorker(t)
	idle, idleConn := w.activeWorker(t)

	idleConn.close()
	w.waitAccountServers(t, "agent:"+idle.id, 0)
	// The pass that closed idle's came after kept's idle time too.
	if n := len(w.accountServers(t, "agent:"+kept.id)); n != 1 {
		t.Errorf("a connected principal's account server: %d connections, want 1", n)
	}
	keptConn.do("signal", `{"type":"started"}`)

	again := w.server.dialAgent(t, idle.token, idle.id)
	if n := len(w.accountServers(t, "agent:"+idle.id)); n != 1 {
		t.Fatalf("after reconnecting: %d account server connections, want 1", n)
	}
	again.do("signal", `{"type":"started"}`)
}

// TestAccountServerEndsWithItsWorkspace: an agent's account server closes
// when its workspace ends (long before it would idle), and a revoked
// user's when its last token is revoked.
func TestAccountServerEndsWithItsWorkspace(t *testing.T) {
	w := newServedWorld(t, daemon.Config{})
	ended, _ := w.activeWorker(t)
	if n := len(w.accountServers(t, "agent:"+ended.id)); n != 1 {
		t.Fatalf("account server connections = %d, want 1", n)
	}
	w.admin.do("workspace.abort", `{"id":"`+ended.id+`","reason":"test"}`)
	w.waitAccountServers(t, "agent:"+ended.id, 0)

	w.server.dialAgent(t, w.user, "").call("wacp.v1.system.info", `{}`)
	if n := len(w.accountServers(t, "user:authz-user")); n != 1 {
		t.Fatalf("the user's account server connections = %d, want 1", n)
	}
	w.admin.do("token.revoke", `{"kind":"user","name":"authz-user"}`)
	w.waitAccountServers(t, "user:authz-user", 0)
}

// accountServerStats decodes the data micro's STATS carries, to make sure
// it is an object with in_accounts (the contract api.md documents).
func TestServedStatsShape(t *testing.T) {
	w := newServedWorld(t, daemon.Config{})
	var st struct {
		Endpoints []struct {
			Name string          `json:"name"`
			Data json.RawMessage `json:"data"`
		} `json:"endpoints"`
	}
	w.admin.decode(w.admin.call("$SRV.STATS.wacp", ``), &st)
	if len(st.Endpoints) == 0 {
		t.Fatal("$SRV.STATS lists no endpoint")
	}
	for _, e := range st.Endpoints {
		var d map[string]map[string]any
		if err := json.Unmarshal(e.Data, &d); err != nil || d["in_accounts"] == nil {
			t.Errorf("%s data = %s, want an object with in_accounts", e.Name, e.Data)
		}
	}
}

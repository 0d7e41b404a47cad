package daemon_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/wacpd/wacpd/daemon"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/internal/daemontest"
)

// authzWorld is one daemon and the principals that do not belong to a
// fixture: the coordinator, a user and an auditor.
type authzWorld struct {
	server     server // how to reach the daemon's NATS server
	adminToken string
	admin      *agentConn // the coordinator, acting as the root
	root       string
	user       string // a user token
	auditor    string // an auditor token
}

// newAuthzWorld starts a daemon, makes the root active (a worker's query is
// delivered to it, so the coordinator's own requests are judged by role,
// not by the root being idle) and mints a user and an auditor token.
func newAuthzWorld(t *testing.T) *authzWorld { return newAuthzWorldCfg(t, daemon.Config{}) }

// newAuthzWorldCfg is newAuthzWorld with cfg. When cfg.NATSURL is set, the
// daemon runs on that server, whose token is cfg.NATSToken.
func newAuthzWorldCfg(t *testing.T, cfg daemon.Config) *authzWorld {
	t.Helper()
	d := daemontest.Start(t, cfg)
	w := &authzWorld{server: server{url: d.URL, token: cfg.NATSToken}, adminToken: d.AdminToken}
	w.admin = w.server.dialAgent(t, d.AdminToken, "")
	var info struct {
		Root string `json:"root_workspace"`
	}
	w.admin.decode(w.admin.call("wacp.v1.system.info", `{}`), &info)
	w.root, w.admin.ws = info.Root, info.Root

	a := w.create(t, w.admin, `{"role":"worker"}`)
	w.admin.do("envelope", `{"to":"`+a.id+`","type":"directive"}`)
	ac := w.server.dialAgent(t, a.token, a.id)
	ac.do("envelope", `{"to":"`+w.root+`","type":"query"}`)
	ac.close()

	var tok struct {
		Token string `json:"token"`
	}
	w.admin.decode(w.admin.do("token.create", `{"kind":"user","name":"authz-user"}`), &tok)
	w.user = tok.Token
	w.admin.decode(w.admin.do("token.create", `{"kind":"auditor","name":"authz-auditor"}`), &tok)
	w.auditor = tok.Token
	return w
}

type created struct{ id, token string }

// create runs workspace.create as c and returns the new workspace's id and
// token.
func (w *authzWorld) create(t *testing.T, c *agentConn, body string) created {
	t.Helper()
	var r struct {
		Workspace struct {
			ID string `json:"id"`
		} `json:"workspace"`
		Token string `json:"token"`
	}
	c.decode(c.do("workspace.create", body), &r)
	return created{r.Workspace.ID, r.Token}
}

// authzFixture is a fresh subtree for one cell of the table:
//
//	root
//	├── D  worker, delegate, active
//	│   └── W  worker, active, one final checkpoint CP  (the workspace the requests are about)
//	├── O  observer, active, visibility [W]
//	└── X  worker, active
//
// W is then moved to the row's state.
type authzFixture struct {
	D, W, O, X created
	cp         string
}

func (w *authzWorld) fixture(t *testing.T, state string) *authzFixture {
	t.Helper()
	f := &authzFixture{}
	f.D = w.create(t, w.admin, `{"role":"worker","delegate":true}`)
	w.admin.do("envelope", `{"to":"`+f.D.id+`","type":"directive"}`)
	dc := w.server.dialAgent(t, f.D.token, f.D.id)
	defer dc.close()
	f.W = w.create(t, dc, `{"role":"worker"}`)
	dc.do("envelope", `{"to":"`+f.W.id+`","type":"directive"}`)
	wc := w.server.dialAgent(t, f.W.token, f.W.id)
	defer wc.close()
	var cp struct {
		ID string `json:"id"`
	}
	wc.decode(wc.do("checkpoint", `{"type":"artifact","intent":"fixture","status":"final","confidence":"high"}`), &cp)
	f.cp = cp.ID
	f.O = w.create(t, w.admin, `{"role":"observer","visibility":["`+f.W.id+`"]}`)
	oc := w.server.dialAgent(t, f.O.token, f.O.id)
	defer oc.close()
	oc.do("signal", `{"type":"started"}`)
	f.X = w.create(t, w.admin, `{"role":"worker"}`)
	w.admin.do("envelope", `{"to":"`+f.X.id+`","type":"directive"}`)

	switch state {
	case stActive:
	case stSuspended:
		w.admin.do("workspace.suspend", `{"id":"`+f.W.id+`"}`)
	case stMigrating:
		w.admin.do("workspace.migrate", `{"id":"`+f.W.id+`","new_agent":"agent-2"}`)
	case stIntegrating:
		wc.do("signal", `{"type":"complete"}`)
	case stConflicted:
		wc.do("signal", `{"type":"complete"}`)
		w.admin.do("integrate", `{"workspace":"`+f.W.id+`","decision":"accept","strategy":"layered",
			"conflicts":[{"conflict_type":"content_overlap","resources":["f"],"description":"authz"}]}`)
	default:
		t.Fatalf("fixture: unknown state %q", state)
	}
	if got := w.stateOf(t, f.W.id); got.State != state {
		t.Fatalf("fixture: W is %s, want %s", got.State, state)
	}
	return f
}

// wsState is what a refused request must leave unchanged.
type wsState struct {
	State     string `json:"state"`
	UpdatedAt string `json:"updated_at"`
}

func (w *authzWorld) stateOf(t *testing.T, id string) wsState {
	t.Helper()
	var s wsState
	w.admin.decode(w.admin.do("workspace.get", `{"id":"`+id+`"}`), &s)
	return s
}

// agentConn is a plain nats.go connection acting as one workspace, used to
// set fixtures up: every call must succeed.
type agentConn struct {
	t     *testing.T
	nc    *nats.Conn
	ws    string
	token string
}

func (s server) dialAgent(t *testing.T, token, ws string) *agentConn {
	t.Helper()
	nc, why := s.connect(t, token, func(error) {})
	if nc == nil {
		t.Fatalf("connect as %s: %s", ws, why)
	}
	c := &agentConn{t: t, nc: nc, ws: ws, token: token}
	t.Cleanup(c.close)
	return c
}

func (c *agentConn) close() { c.nc.Close() }

// do calls the agent op on c's workspace.
func (c *agentConn) do(op, body string) []byte {
	c.t.Helper()
	return c.call("wacp.v1.agent."+c.ws+"."+op, body)
}

func (c *agentConn) call(subject, body string) []byte {
	c.t.Helper()
	m, err := c.nc.RequestMsg(tokenRequest(subject, body, c.token), 10*time.Second)
	if err != nil {
		c.t.Fatalf("%s %s: %v", subject, body, err)
	}
	if code := m.Header.Get("Nats-Service-Error"); code != "" {
		c.t.Fatalf("%s %s = %s: %s", subject, body, code, m.Data)
	}
	return m.Data
}

func (c *agentConn) decode(b []byte, v any) {
	c.t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		c.t.Fatalf("decode %s: %v", b, err)
	}
}

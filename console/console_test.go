package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// memBackend is a Backend over fixed records: tokens that can be revoked,
// a queue of gates, workspaces with their checkpoints, and a trail feed.
// The daemon's own Backend is tested in daemon (console_test.go) and
// end to end in e2e (console_test.go).
type memBackend struct {
	mu       sync.Mutex
	ids      map[string]Identity
	gates    []highway.Gate
	ws       []workspace.Workspace
	cps      map[string][]checkpointchain.Checkpoint
	entries  []trail.Entry
	resolved []highway.ResolveRequest
	feed     chan trail.Entry
}

func newMem() *memBackend {
	return &memBackend{ids: map[string]Identity{
		"tok-user":    {Kind: KindUser, Name: "alice", Active: true, Capabilities: []user.Capability{user.InjectDirective}},
		"tok-reader":  {Kind: KindUser, Name: "carol", Active: true},
		"tok-auditor": {Kind: KindAuditor, Name: "bob", Active: true},
		"tok-agent":   {Kind: "agent"},
		"tok-coord":   {Kind: "coordinator"},
		"tok-tool":    {Kind: "tool", Name: "acme"},
	}, cps: map[string][]checkpointchain.Checkpoint{}, feed: make(chan trail.Entry, 16)}
}

func (m *memBackend) revoke(tok string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ids, tok)
}

func (m *memBackend) Identify(token string) (Identity, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.ids[token]
	return id, ok
}

func (m *memBackend) Call(ctx context.Context, token, op string, body []byte) ([]byte, error) {
	if _, ok := m.Identify(token); !ok {
		return nil, &Refusal{Code: "unauthorized", Status: 401, Message: "no such token"}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch op {
	case "highway.queue":
		return json.Marshal(wire.HighwayQueue{Gates: m.gates})
	case "highway.get":
		var req wire.HighwayGetRequest
		json.Unmarshal(body, &req)
		for _, g := range m.gates {
			if g.ID == req.ID {
				return json.Marshal(g)
			}
		}
		return nil, &Refusal{Code: "not_found", Status: 404, Message: "no gate " + req.ID}
	case "highway.resolve":
		req, err := highway.DecodeResolveRequest(body)
		if err != nil {
			return nil, &Refusal{Code: "invalid_structure", Status: 400, Message: err.Error()}
		}
		m.resolved = append(m.resolved, req)
		return []byte(`{}`), nil
	case "audit.checkpoint.get":
		var req wire.GetRequest
		json.Unmarshal(body, &req)
		for _, cps := range m.cps {
			for _, cp := range cps {
				if cp.ID == req.ID {
					return json.Marshal(cp)
				}
			}
		}
		return nil, &Refusal{Code: "not_found", Status: 404, Message: "no checkpoint"}
	case "audit.trail.read":
		return json.Marshal(wire.TrailPage{Entries: m.entries})
	case "audit.sth":
		return json.Marshal(wire.TreeHead{TreeHead: trail.TreeHead{Origin: "wacpd/x", Size: 3, Note: "not a note"}})
	case "audit.trail.verify":
		return json.Marshal(trail.VerifyResult{OK: true, Entries: 3})
	}
	return nil, &Refusal{Code: "not_found", Status: 404, Message: "no op " + op}
}

func (m *memBackend) Workspaces(ctx context.Context, token string) ([]workspace.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ws, nil
}

func (m *memBackend) Checkpoints(ctx context.Context, token, ws, after string, limit int) ([]checkpointchain.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cps[ws], nil
}

func (m *memBackend) Follow(ctx context.Context, token string, fn func(trail.Entry) error) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if _, ok := m.Identify(token); !ok {
				return ErrEnded
			}
		case e := <-m.feed:
			if err := fn(e); err != nil {
				return err
			}
		}
	}
}

// rig is a console on an httptest server with a browser-like client
// (a cookie jar, no redirects followed).
type rig struct {
	t   *testing.T
	m   *memBackend
	c   *Console
	srv *httptest.Server
	cl  *http.Client
}

func newRig(t *testing.T) *rig {
	t.Helper()
	m := newMem()
	c, err := New(Config{Backend: m})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &rig{t: t, m: m, c: c, srv: srv, cl: cl}
}

type resp struct {
	status int
	body   string
	h      http.Header
}

func (r *rig) do(method, path string, form url.Values, hdr map[string]string) resp {
	r.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, r.srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := r.cl.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, string(b), res.Header}
}

func (r *rig) get(path string) resp { return r.do("GET", path, nil, nil) }

func (r *rig) post(path string, form url.Values) resp { return r.do("POST", path, form, nil) }

// login logs in with tok and returns the session's CSRF token.
func (r *rig) login(tok string) string {
	r.t.Helper()
	if got := r.post("/login", url.Values{"token": {tok}}); got.status != http.StatusSeeOther || got.h.Get("Location") != "/" {
		r.t.Fatalf("POST /login (%s) = %d %s, want 303 to /", tok, got.status, got.h.Get("Location"))
	}
	page := r.get("/")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page.body)
	if page.status != 200 || m == nil {
		r.t.Fatalf("GET / after login = %d, no CSRF token:\n%s", page.status, page.body)
	}
	return m[1]
}

func TestLoginRefusals(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		token  string
		status int
		want   string
	}{
		{"empty", "/login", "", 400, "Enter a user or auditor token"},
		{"unknown", "/login", "tok-nobody", 401, "does not accept this token"},
		{"agent", "/login", "tok-agent", 403, "workspace agent&#39;s token"},
		{"coordinator", "/login", "tok-coord", 403, "coordinator&#39;s (admin) token"},
		{"tool", "/login", "tok-tool", 403, "tool service&#39;s token"},
		{"token in the URL", "/login?token=tok-user", "tok-user", 400, "never goes in a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			got := r.post(tt.path, url.Values{"token": {tt.token}})
			if got.status != tt.status || !strings.Contains(got.body, tt.want) {
				t.Errorf("POST %s (%q) = %d, want %d with %q:\n%s", tt.path, tt.token, got.status, tt.status, tt.want, got.body)
			}
			if got.h.Get("Set-Cookie") != "" {
				t.Errorf("a refused login set a cookie: %s", got.h.Get("Set-Cookie"))
			}
			if page := r.get("/"); page.status != http.StatusSeeOther || !strings.HasPrefix(page.h.Get("Location"), "/login") {
				t.Errorf("after a refused login GET / = %d %s, want the login page", page.status, page.h.Get("Location"))
			}
		})
	}
	// The token in a GET is never taken.
	r := newRig(t)
	if got := r.get("/login?token=tok-user"); got.h.Get("Set-Cookie") != "" {
		t.Errorf("GET /login?token= set a cookie")
	}
}

func TestLoginSessionCookie(t *testing.T) {
	for _, tok := range []string{"tok-user", "tok-auditor"} {
		r := newRig(t)
		got := r.post("/login", url.Values{"token": {tok}})
		ck := got.h.Get("Set-Cookie")
		for _, want := range []string{cookieName + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
			if !strings.Contains(ck, want) {
				t.Errorf("login %s: Set-Cookie %q lacks %s", tok, ck, want)
			}
		}
		if strings.Contains(ck, tok) {
			t.Errorf("login %s: the cookie carries the token", tok)
		}
		r.login(tok)
	}
}

func TestCSRF(t *testing.T) {
	r := newRig(t)
	csrf := r.login("tok-user")
	for _, tt := range []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no token", url.Values{}, nil},
		{"another token", url.Values{"csrf": {csrf + "x"}}, nil},
		{"cross-site fetch", url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"another origin", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}},
	} {
		got := r.do("POST", "/logout", tt.form, tt.hdr)
		if got.status != http.StatusForbidden {
			t.Errorf("%s: POST /logout = %d, want 403", tt.name, got.status)
		}
		if page := r.get("/"); page.status != 200 {
			t.Fatalf("%s: the refused logout ended the session (GET / = %d)", tt.name, page.status)
		}
	}
	// A gate answered cross-site is not sent.
	r.m.gates = []highway.Gate{{ID: "g1", Type: highway.EnvelopeDelivery, Subject: json.RawMessage(`{}`)}}
	r.do("POST", "/queue/g1", url.Values{"csrf": {csrf}, "decision": {"approve"}}, map[string]string{"Sec-Fetch-Site": "cross-site"})
	r.post("/queue/g1", url.Values{"decision": {"approve"}})
	if len(r.m.resolved) != 0 {
		t.Errorf("forged forms resolved %v", r.m.resolved)
	}
	// A login from another origin is refused too (login CSRF).
	r2 := newRig(t)
	if got := r2.do("POST", "/login", url.Values{"token": {"tok-user"}}, map[string]string{"Origin": "http://evil.example"}); got.status != http.StatusForbidden {
		t.Errorf("cross-origin login = %d, want 403", got.status)
	}
	// The right token, same origin, logs out.
	if got := r.do("POST", "/logout", url.Values{"csrf": {csrf}}, map[string]string{"Origin": r.srv.URL}); got.status != http.StatusSeeOther {
		t.Fatalf("POST /logout = %d, want 303", got.status)
	}
	if page := r.get("/"); page.status != http.StatusSeeOther {
		t.Errorf("after logout GET / = %d, want 303 to the login", page.status)
	}
}

func TestRevokedTokenEndsSession(t *testing.T) {
	r := newRig(t)
	r.login("tok-user")
	r.m.revoke("tok-user")
	got := r.get("/trail")
	if got.status != http.StatusSeeOther || got.h.Get("Location") != "/login?m=ended" {
		t.Fatalf("GET /trail after revocation = %d %s, want 303 to /login?m=ended", got.status, got.h.Get("Location"))
	}
	if n := r.c.sessions.live(); n != 0 {
		t.Errorf("%d sessions held after revocation, want 0", n)
	}
	if page := r.get("/login?m=ended"); !strings.Contains(page.body, "Your session has ended") {
		t.Errorf("the login page does not say the session ended:\n%s", page.body)
	}
	// The token back (re-issued with the same text) does not revive it.
	r.m.ids["tok-user"] = Identity{Kind: KindUser, Name: "alice", Active: true}
	if got := r.get("/"); got.status != http.StatusSeeOther {
		t.Errorf("the ended session came back: GET / = %d", got.status)
	}
}

func TestRevokedTokenEndsLiveStream(t *testing.T) {
	r := newRig(t)
	r.login("tok-user")
	req, _ := http.NewRequest("GET", r.srv.URL+"/trail/events", nil)
	res, err := r.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	r.m.feed <- trail.Entry{ID: "e1", Workspace: "w1", Actor: "a", EventType: trail.EventCheckpointCreated, Body: json.RawMessage(`{"x":"<b>"}`)}
	r.m.revoke("tok-user")
	b, _ := io.ReadAll(res.Body) // ends when the stream does
	body := string(b)
	if !strings.Contains(body, "event: entry") || !strings.Contains(body, `"id":"e1"`) {
		t.Errorf("the stream did not carry the entry:\n%s", body)
	}
	if !strings.Contains(body, "event: ended\ndata: the session has ended") {
		t.Errorf("the stream did not end with the session:\n%s", body)
	}
}

const hostile = `</pre><script>alert("x")</script><img src=x onerror=alert(1)>"'`

func TestHostileTextIsEscaped(t *testing.T) {
	r := newRig(t)
	parent := "cp0"
	cp := checkpointchain.Checkpoint{ID: "cp1", Workspace: "w1", Type: "artifact", Intent: hostile, Parent: &parent, Status: "final", Confidence: "high",
		Timestamp: "2026-01-01T00:00:00.000000000Z",
		Payload:   checkpointchain.Payload{Content: hostile, FilesChanged: []string{hostile}, Extra: map[string]json.RawMessage{"note": json.RawMessage(`"` + strings.ReplaceAll(hostile, `"`, `\"`) + `"`)}}}
	r.m.ws = []workspace.Workspace{{ID: "w1", Role: "worker", State: workspace.Active, Agent: hostile, Owner: hostile}}
	r.m.cps["w1"] = []checkpointchain.Checkpoint{cp}
	r.m.entries = []trail.Entry{{ID: "e1", Workspace: "w1", Actor: hostile, EventType: trail.EventCheckpointCreated, Body: json.RawMessage(`{"intent":` + string(mustJSON(hostile)) + `}`)}}
	subject := map[string]any{"checkpoint_pending": map[string]string{}, "note": hostile}
	pend := subject["checkpoint_pending"].(map[string]string)
	for _, f := range pendingFields {
		pend[f] = hostile
	}
	r.m.gates = []highway.Gate{{ID: "g1", Type: highway.EnvelopeDelivery, Subject: mustJSON(subject), SubjectID: hostile, Irreversible: true}}
	r.login("tok-user")
	for _, path := range []string{"/", "/ws/w1", "/checkpoint/cp1", "/trail", "/queue"} {
		got := r.get(path)
		if got.status != 200 {
			t.Fatalf("GET %s = %d:\n%s", path, got.status, got.body)
		}
		for _, bad := range []string{"<script>alert", "<img src=x", "</pre><script"} {
			if strings.Contains(got.body, bad) {
				t.Errorf("GET %s: the page has %q unescaped", path, bad)
			}
		}
		if !strings.Contains(got.body, "&lt;script&gt;alert(") && !strings.Contains(got.body, `\u003cscript\u003e`) {
			t.Errorf("GET %s: the hostile text is not on the page, escaped", path)
		}
	}
	// The confirmation page of the irreversible gate, too.
	got := r.post("/queue/g1", url.Values{"csrf": {r.csrf()}, "decision": {"approve"}})
	if got.status != 200 || strings.Contains(got.body, "<script>alert") || !strings.Contains(got.body, "&lt;script&gt;") {
		t.Errorf("the confirmation page: %d, escaped: %v", got.status, !strings.Contains(got.body, "<script>alert"))
	}
}

// csrf reads the session's CSRF token from a page.
func (r *rig) csrf() string {
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(r.get("/").body)
	if m == nil {
		r.t.Fatal("no CSRF token")
	}
	return m[1]
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestIrreversibleApprovalNeedsSecondConfirmation(t *testing.T) {
	r := newRig(t)
	subject := map[string]any{"checkpoint_pending": map[string]string{}}
	for _, f := range pendingFields {
		subject["checkpoint_pending"].(map[string]string)[f] = "value of " + f
	}
	r.m.gates = []highway.Gate{
		{ID: "g-irr", Type: highway.EnvelopeDelivery, Subject: mustJSON(subject), Irreversible: true},
		{ID: "g-rev", Type: highway.EnvelopeDelivery, Subject: json.RawMessage(`{"a":1}`)},
	}
	csrf := r.login("tok-user")
	q := r.get("/queue")
	for _, f := range pendingFields {
		if !strings.Contains(q.body, "<dt>"+f+"</dt><dd class=\"text\">value of "+f+"</dd>") {
			t.Errorf("the queue does not show %s verbatim", f)
		}
	}
	if !strings.Contains(q.body, "IRREVERSIBLE") {
		t.Error("the irreversible gate is not marked")
	}
	// One approval shows the confirmation and sends nothing.
	got := r.post("/queue/g-irr", url.Values{"csrf": {csrf}, "decision": {"approve"}})
	if got.status != 200 || !strings.Contains(got.body, "Yes, approve this irreversible action") || !strings.Contains(got.body, `name="confirm" value="yes"`) {
		t.Fatalf("the first approval: %d\n%s", got.status, got.body)
	}
	if len(r.m.resolved) != 0 {
		t.Fatalf("one approval resolved the irreversible gate: %+v", r.m.resolved)
	}
	// A rejection needs no confirmation; a reversible gate neither.
	r.post("/queue/g-rev", url.Values{"csrf": {csrf}, "decision": {"approve"}})
	// The confirmed form sends confirm: true.
	if got := r.post("/queue/g-irr", url.Values{"csrf": {csrf}, "decision": {"approve"}, "confirm": {"yes"}}); got.status != http.StatusSeeOther {
		t.Fatalf("the confirmed approval = %d\n%s", got.status, got.body)
	}
	want := []highway.ResolveRequest{
		{GateID: "g-rev", Action: highway.Approve},
		{GateID: "g-irr", Action: highway.Approve, Confirm: true},
	}
	if fmt.Sprint(r.m.resolved) != fmt.Sprint(want) {
		t.Errorf("resolved %+v, want %+v", r.m.resolved, want)
	}
}

func TestWhoSeesWhat(t *testing.T) {
	r := newRig(t)
	r.m.gates = []highway.Gate{{ID: "g1", Type: highway.EnvelopeDelivery, Subject: json.RawMessage(`{}`)}}
	r.login("tok-auditor")
	if got := r.get("/queue"); got.status != http.StatusForbidden || !strings.Contains(got.body, "read-only") {
		t.Errorf("an auditor's GET /queue = %d", got.status)
	}
	if got := r.get("/"); strings.Contains(got.body, `href="/queue"`) {
		t.Error("an auditor's navigation links the queue")
	}
	// A user without the gate's capability reads it and gets no form.
	r2 := newRig(t)
	r2.m.gates = r.m.gates
	r2.login("tok-reader")
	got := r2.get("/queue")
	if got.status != 200 || strings.Contains(got.body, `name="decision"`) || !strings.Contains(got.body, "inject_directive") {
		t.Errorf("a user without inject_directive: %d, form shown: %v", got.status, strings.Contains(got.body, `name="decision"`))
	}
	r3 := newRig(t)
	r3.m.gates = r.m.gates
	r3.login("tok-user")
	if got := r3.get("/queue"); !strings.Contains(got.body, `name="decision" value="approve"`) {
		t.Error("a user with inject_directive gets no form")
	}
}

func TestSecurityHeaders(t *testing.T) {
	r := newRig(t)
	r.login("tok-user")
	for _, path := range []string{"/login", "/", "/trail", "/queue", "/audit", "/nothing", "/static/console.js"} {
		got := r.get(path)
		csp := got.h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
		if got.h.Get("X-Frame-Options") != "DENY" || got.h.Get("Referrer-Policy") != "no-referrer" || got.h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", path, got.h)
		}
		if strings.Contains(got.body, "<script>") || regexp.MustCompile(`\son[a-z]+=`).MatchString(got.body) || strings.Contains(got.body, "style=") {
			t.Errorf("GET %s: inline script, handler or style in the page", path)
		}
	}
}

func TestPagesRender(t *testing.T) {
	r := newRig(t)
	r.m.ws = []workspace.Workspace{{ID: "root", State: workspace.Idle, Role: "coordinator"}, {ID: "w1", Parent: ptr("root"), Role: "worker", State: workspace.Active}}
	r.m.cps["w1"] = []checkpointchain.Checkpoint{{ID: "cp1", Workspace: "w1", Type: "artifact", Intent: "first", Status: "final", Confidence: "high"}}
	r.login("tok-user")
	for _, tt := range []struct{ path, want string }{
		{"/", `<a href="/ws/w1">`},
		{"/ws/w1", `<a href="/checkpoint/cp1">`},
		{"/ws/nope", "does not exist"},
		{"/checkpoint/cp1", "first"},
		{"/trail?ws=w1&type=checkpoint_created", `data-src="/trail/events?type=checkpoint_created&amp;ws=w1"`},
		{"/audit?verify=1", "Verified: 3 entries"},
		{"/queue", "No gate is pending"},
	} {
		got := r.get(tt.path)
		if !strings.Contains(got.body, tt.want) {
			t.Errorf("GET %s = %d, lacks %q:\n%s", tt.path, got.status, tt.want, got.body)
		}
	}
}

func ptr(s string) *string { return &s }

func TestParseResolveForm(t *testing.T) {
	tests := []struct {
		name string
		form url.Values
		want highway.ResolveRequest
		ok   bool
	}{
		{"approve", url.Values{"decision": {"approve"}}, highway.ResolveRequest{GateID: "g", Action: highway.Approve}, true},
		{"per step", url.Values{"decision": {"per_step"}, "confirm": {"yes"}}, highway.ResolveRequest{GateID: "g", Action: highway.Approve, Outcome: "per_step", Confirm: true}, true},
		{"halt", url.Values{"decision": {"halt"}}, highway.ResolveRequest{GateID: "g", Action: highway.Reject, Outcome: "halt"}, true},
		{"modify", url.Values{"decision": {"modify"}, "modifications": {` {"a": 1} `}}, highway.ResolveRequest{GateID: "g", Action: highway.Modify, Modifications: json.RawMessage(`{"a":1}`)}, true},
		{"approve ignores modifications", url.Values{"decision": {"approve"}, "modifications": {`{"a":1}`}}, highway.ResolveRequest{GateID: "g", Action: highway.Approve}, true},
		{"modify without", url.Values{"decision": {"modify"}}, highway.ResolveRequest{}, false},
		{"modify an array", url.Values{"decision": {"modify"}, "modifications": {`[1]`}}, highway.ResolveRequest{}, false},
		{"modify twice a name", url.Values{"decision": {"modify"}, "modifications": {`{"a":1,"a":2}`}}, highway.ResolveRequest{}, false},
		{"no decision", url.Values{}, highway.ResolveRequest{}, false},
		{"deny is not a button", url.Values{"decision": {"deny"}}, highway.ResolveRequest{}, false},
	}
	for _, tt := range tests {
		got, err := parseResolveForm("g", tt.form)
		if (err == nil) != tt.ok || (tt.ok && fmt.Sprint(got) != fmt.Sprint(tt.want)) {
			t.Errorf("%s: parseResolveForm(%v) = %+v, %v; want %+v, ok %v", tt.name, tt.form, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseResolveForm: whatever form the console accepts, the daemon's
// decoder accepts as the same request.
func FuzzParseResolveForm(f *testing.F) {
	for _, s := range []string{"decision=approve", "decision=per_step&confirm=yes", "decision=modify&modifications=%7B%22a%22%3A1%7D",
		"decision=halt", "decision=modify&modifications=%7B%7D", "decision=reject&modifications=x"} {
		f.Add("g1", s)
	}
	f.Fuzz(func(t *testing.T, gate, query string) {
		form, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		req, err := parseResolveForm(gate, form)
		if err != nil {
			return
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("marshal %+v: %v", req, err)
		}
		back, err := highway.DecodeResolveRequest(body)
		if err != nil {
			t.Fatalf("the daemon refuses %s: %v", body, err)
		}
		if fmt.Sprint(back) != fmt.Sprint(req) {
			t.Fatalf("decoded %+v, sent %+v", back, req)
		}
	})
}

// FuzzOrderedFields: the members of an object, as written, are the
// object: rebuilt in order they decode to the same value.
func FuzzOrderedFields(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,2],"c":{"d":null}}`, `{"checkpoint_pending":{"x":"y"}}`, `[1]`, `{"a":1} x`, `{"a":1,"a":2}`, `{"\u003c":"\u003e"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fields, err := orderedFields(raw)
		if err != nil {
			return
		}
		var b strings.Builder
		b.WriteString("{")
		for i, fl := range fields {
			if i > 0 {
				b.WriteString(",")
			}
			b.Write(mustJSON(fl.Name))
			b.WriteString(":")
			b.Write(fl.Value)
		}
		b.WriteString("}")
		var want, got any
		if err := json.Unmarshal(raw, &want); err != nil {
			// encoding/json is stricter about invalid UTF-8 in names
			// than the token reader; nothing to compare.
			return
		}
		if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
			t.Fatalf("rebuilt %q does not decode: %v", b.String(), err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("rebuilt %v, want %v", got, want)
		}
	})
}

package daemon_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// browserClient is an HTTP client with a cookie jar that does not follow
// redirects.
func browserClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func fetch(t *testing.T, cl *http.Client, method, u string, form url.Values) (int, string, http.Header) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

// TestConsole runs the web console on the real daemon's -http listener:
// which tokens log in, what a user with and without view_trail_any and
// an auditor see, hostile checkpoint text escaped, the live feed, and a
// revoked token ending a session and its live stream. CARP keeps its
// routes.
func TestConsole(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{HTTPAddr: "127.0.0.1:0"})
	var info wire.DaemonFile
	b, _ := os.ReadFile(filepath.Join(d.Dir, daemon.InfoFile))
	if err := json.Unmarshal(b, &info); err != nil || info.HTTPURL == "" {
		t.Fatalf("%s: %s", daemon.InfoFile, b)
	}
	base := info.HTTPURL
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	worker := directedWorker(t, ctx, coord)
	agent, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: worker.Token, Workspace: worker.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}
	const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	cp, err := agent.CreateCheckpoint(ctx, client.CheckpointRequest{Type: taxonomy.CheckpointArtifact, Intent: hostile,
		Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceHigh, Payload: checkpointchain.Payload{Content: hostile}})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(kind, name string, caps ...user.Capability) string {
		t.Helper()
		tok, err := coord.CreateToken(ctx, kind, name, caps...)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	anyTok, ownTok, audTok, toolTok := mint("user", "ann", user.ViewTrailAny, user.InjectDirective), mint("user", "olly"), mint("auditor", "aud"), mint("tool", "acme")

	// Which tokens log in.
	for _, tt := range []struct {
		name, token string
		status      int
		want        string
	}{
		{"agent", worker.Token, 403, "workspace agent&#39;s token"},
		{"coordinator", d.AdminToken, 403, "coordinator&#39;s (admin) token"},
		{"tool", toolTok, 403, "tool service&#39;s token"},
		{"unknown", "wacp_nothing", 401, "does not accept this token"},
	} {
		status, body, _ := fetch(t, browserClient(), "POST", base+"/login", url.Values{"token": {tt.token}})
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("login with the %s token = %d, want %d with %q", tt.name, status, tt.status, tt.want)
		}
	}
	login := func(tok string) *http.Client {
		t.Helper()
		cl := browserClient()
		if status, body, h := fetch(t, cl, "POST", base+"/login", url.Values{"token": {tok}}); status != http.StatusSeeOther || h.Get("Location") != "/" {
			t.Fatalf("login = %d %s\n%s", status, h.Get("Location"), body)
		}
		return cl
	}
	ann, olly, aud := login(anyTok), login(ownTok), login(audTok)
	ws := worker.Workspace.ID

	// Who sees what.
	for _, tt := range []struct {
		who    string
		cl     *http.Client
		path   string
		status int
		want   string
		not    string
	}{
		{"ann (view_trail_any)", ann, "/", 200, ws, ""},
		{"ann", ann, "/ws/" + ws, 200, `href="/checkpoint/` + cp.ID + `"`, ""},
		{"ann", ann, "/checkpoint/" + cp.ID, 200, "&lt;script&gt;alert(", "<script>alert"},
		{"ann", ann, "/ws/" + ws, 200, "&lt;script&gt;alert(", "<script>alert"},
		{"ann", ann, "/queue", 200, "No gate is pending", ""},
		{"olly (own trail)", olly, "/", 200, "workspace", ws},
		{"olly", olly, "/ws/" + ws, 404, "not yours to read", cp.ID},
		{"olly", olly, "/checkpoint/" + cp.ID, 403, "capability_denied", "&lt;script"},
		{"auditor", aud, "/", 200, ws, ""},
		{"auditor", aud, "/ws/" + ws, 200, cp.ID, ""},
		{"auditor", aud, "/queue", 403, "read-only", ""},
		{"auditor", aud, "/audit?verify=1", 200, "Verified:", ""},
	} {
		status, body, _ := fetch(t, tt.cl, "GET", base+tt.path, nil)
		if status != tt.status || !strings.Contains(body, tt.want) || (tt.not != "" && strings.Contains(body, tt.not)) {
			t.Errorf("%s: GET %s = %d, want %d with %q and without %q:\n%s", tt.who, tt.path, status, tt.status, tt.want, tt.not, body)
		}
	}

	// The live feed: a checkpoint committed while the stream is open.
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/trail/events?type=checkpoint_created", nil)
	res, err := (&http.Client{Jar: aud.Jar}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitLine := func(want string, within time.Duration) {
		t.Helper()
		timeout := time.After(within)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended before %q", want)
				}
				if strings.Contains(l, want) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q on the live stream", want)
			}
		}
	}
	waitLine(": following the trail", 20*time.Second)
	cp2, err := agent.CreateCheckpoint(ctx, client.CheckpointRequest{Type: taxonomy.CheckpointArtifact, Intent: "second", Parent: &cp.ID,
		Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceHigh, Payload: checkpointchain.Payload{Content: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	waitLine(`"checkpoint_id":"`+cp2.ID+`"`, 20*time.Second)

	// Revocation ends the auditor's stream and the user's session.
	if _, err := coord.RevokeToken(ctx, "auditor", "aud", "left"); err != nil {
		t.Fatal(err)
	}
	// Within the backend's recheck (5 s), before the console's own
	// keep-alive check (15 s) would end it.
	waitLine("event: ended", 10*time.Second)
	if _, err := coord.RevokeToken(ctx, "user", "ann", "left"); err != nil {
		t.Fatal(err)
	}
	if status, _, h := fetch(t, ann, "GET", base+"/", nil); status != http.StatusSeeOther || h.Get("Location") != "/login?m=ended" {
		t.Errorf("after revocation GET / = %d %s, want 303 to /login?m=ended", status, h.Get("Location"))
	}

	// CARP keeps its routes: an unauthenticated resolve is CARP's refusal,
	// not a console page.
	status, body, h := fetch(t, browserClient(), "POST", base+"/carp/v1/resolve", nil)
	if status != http.StatusUnauthorized || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || !strings.Contains(body, "carp_version") {
		t.Errorf("POST /carp/v1/resolve = %d %s %s", status, h.Get("Content-Type"), body)
	}
	// Another method on a CARP operation, or a path no operation has,
	// is CARP's refusal too.
	status, body, h = fetch(t, browserClient(), "GET", base+"/carp/v1/execute", nil)
	if status != http.StatusMethodNotAllowed || h.Get("Allow") != "POST" || !strings.Contains(body, `"INVALID_REQUEST"`) {
		t.Errorf("GET /carp/v1/execute = %d %s %s", status, h.Get("Allow"), body)
	}
	status, body, _ = fetch(t, browserClient(), "POST", base+"/carp/v1/approval", nil)
	if status != http.StatusNotFound || !strings.Contains(body, "carp_version") {
		t.Errorf("POST /carp/v1/approval = %d %s", status, body)
	}
}

package daemon_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/wire"
)

// TestAuthz sends every request of the authorization table with every
// principal's own NATS connection and checks the answer against the table
// (docs/security.md). Each cell gets a fresh fixture, so state-changing
// requests do not affect each other. A request that is refused must leave W
// unchanged.
func TestAuthz(t *testing.T) {
	runAuthzTable(t, newAuthzWorld(t), func(_ authzRow, answer string) string { return answer })
}

// runAuthzTable runs every cell of the authorization table in w and checks
// it against want(the table's answer).
func runAuthzTable(t *testing.T, w *authzWorld, want func(authzRow, string) string) {
	for _, row := range authzRows {
		t.Run(row.name, func(t *testing.T) {
			for i, col := range authzColumns {
				t.Run(col, func(t *testing.T) {
					got, detail := w.cell(t, row, col)
					if want := want(row, row.want[i]); got != want {
						t.Errorf("%s by %s = %s, want %s\n%s", row.name, col, got, want, detail)
					}
				})
			}
		})
	}
}

// TestAuthzExternal runs the table against a daemon on an external NATS
// server (-nats-url), which admits every connection with its own token and
// cannot tell principals apart: the daemon checks the Wacp-Token header
// instead. Every cell is the embedded server's answer, except that what the
// embedded server refuses the daemon refuses itself: publish denied becomes
// permission_denied, and connection refused (no or an unknown token)
// becomes unauthorized (on the CARP endpoints, FORBIDDEN and
// UNAUTHORIZED: they answer CARP's codes).
func TestAuthzExternal(t *testing.T) {
	const srvToken = "authz-server-token"
	w := newAuthzWorldCfg(t, daemon.Config{NATSURL: startNATSServer(t, srvToken), NATSToken: srvToken})
	runAuthzTable(t, w, externalAnswer)
}

// externalAnswer is the answer on an external server for answer on the
// embedded one.
func externalAnswer(row authzRow, answer string) string {
	carpRow := strings.HasPrefix(row.op, "carp.")
	switch {
	case answer == pub && carpRow:
		return "FORBIDDEN"
	case answer == refused && carpRow:
		return "UNAUTHORIZED"
	case answer == pub:
		return denied
	case answer == refused:
		return "unauthorized"
	}
	return answer
}

// startNATSServer runs a NATS server with JetStream on a free port of
// 127.0.0.1 that admits connections with token, and stops it at cleanup.
func startNATSServer(t *testing.T, token string) string {
	t.Helper()
	return daemon.RunNATSServer(t, &natsserver.Options{
		Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true, NoLog: true, Authorization: token,
		JetStream: true, StoreDir: t.TempDir(), DisableJetStreamBanner: true,
	}).ClientURL()
}

// TestAuthzSubjects tries every action of the subjects table (deliveries,
// reply inboxes, JetStream, the micro service) as every principal and checks
// the answer against the table (docs/security.md).
func TestAuthzSubjects(t *testing.T) {
	w := newAuthzWorld(t)
	for _, row := range subjectRows {
		t.Run(row.name, func(t *testing.T) {
			for i, col := range authzColumns {
				t.Run(col, func(t *testing.T) {
					got, detail := w.subjectCell(t, row, col)
					if want := row.want[i]; got != want {
						t.Errorf("%s (%s %s) by %s = %s, want %s\n%s", row.name, row.action, row.subject, col, got, want, detail)
					}
				})
			}
		})
	}
}

// cell runs one request of row as the principal of column col on a fresh
// fixture and returns the answer.
func (w *authzWorld) cell(t *testing.T, row authzRow, col string) (answer, detail string) {
	switch col {
	case "no token":
		return w.server.probe(t, "", row.subject(w.root), row.body)
	case "bad token":
		return w.server.probe(t, randomToken(t), row.subject(w.root), row.body)
	}
	f := w.fixture(t, row.state)
	token, ws := w.principal(t, f, col)
	head := "null"
	if ws == f.W.id {
		head = `"` + f.cp + `"`
	}
	body := strings.NewReplacer("<W>", f.W.id, "<D>", f.D.id, "<CP>", f.cp, "<HEAD>", head, "<WS>", ws).Replace(row.body)
	before := w.stateOf(t, f.W.id)
	answer, detail = w.server.probe(t, token, row.subject(ws), body)
	if answer != ok && answer != empty {
		if after := w.stateOf(t, f.W.id); after != before {
			t.Errorf("%s by %s was refused (%s) but changed W from %+v to %+v", row.name, col, answer, before, after)
		}
	}
	return answer, detail
}

// subjectCell runs the action of row as the principal of column col on a
// fresh fixture and returns the answer.
func (w *authzWorld) subjectCell(t *testing.T, row subjectRow, col string) (answer, detail string) {
	var token, ws string
	r := strings.NewReplacer("<ws>", w.root)
	switch col {
	case "no token":
	case "bad token":
		token = randomToken(t)
	default:
		f := w.fixture(t, stActive)
		token, ws = w.principal(t, f, col)
		r = strings.NewReplacer("<ws>", ws, "<W>", f.W.id, "<D>", f.D.id, "<W inbox>", wire.InboxPrefix(f.W.token))
	}
	subject, body := r.Replace(row.subject), r.Replace(row.body)
	switch row.action {
	case actSubscribe:
		return w.server.probeSubscribe(t, token, subject)
	case actPublish:
		return w.server.probePublish(t, token, subject, body)
	}
	return w.server.probe(t, token, subject, body)
}

// principal returns the token of column col and the workspace it acts on.
func (w *authzWorld) principal(t *testing.T, f *authzFixture, col string) (token, ws string) {
	switch col {
	case "coordinator":
		token, ws = w.adminToken, w.root
	case "delegate":
		token, ws = f.D.token, f.D.id
	case "worker":
		token, ws = f.W.token, f.W.id
	case "observer":
		token, ws = f.O.token, f.O.id
	case "other worker":
		token, ws = f.X.token, f.X.id
	case "other worker as W":
		token, ws = f.X.token, f.W.id
	case "user":
		token, ws = w.user, f.W.id
	case "auditor":
		token, ws = w.auditor, f.W.id
	default:
		t.Fatalf("unknown column %q", col)
	}
	return token, ws
}

// TestAuthzPublishDeniedLooksLikeATimeout pins down what a plain nats.go
// client, with no error handler, sees when the server refuses a request's
// publish: no reply, so the request times out, and the connection's last
// error is the permissions violation.
func TestAuthzPublishDeniedLooksLikeATimeout(t *testing.T) {
	w := newAuthzWorld(t)
	f := w.fixture(t, stActive)
	nc, err := nats.Connect(w.server.url, nats.Token(f.X.token), nats.CustomInboxPrefix(wire.InboxPrefix(f.X.token)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subject := "wacp.v1.agent." + f.W.id + ".workspace.get"
	if _, err := nc.Request(subject, []byte(`{}`), 500*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Errorf("Request(%s) by another workspace's token = %v, want %v", subject, err, nats.ErrTimeout)
	}
	want := `nats: permissions violation: Permissions Violation for Publish to "` + subject + `"`
	if err := nc.LastError(); err == nil || err.Error() != want {
		t.Errorf("LastError() = %v, want %s", err, want)
	}
}

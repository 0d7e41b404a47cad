package daemon_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/wire"
)

// The probes connect as one principal, try one thing and return the answer
// as the tables of docs/security.md write it, with a detail for failure
// messages.

// server says how to reach the daemon's NATS server: the embedded one
// (token empty), where a principal connects with its own token, or an
// external one, where every connection uses the server's token and the
// principal's token goes in the Wacp-Token header of each request.
type server struct {
	url   string
	token string
}

// connect connects as the principal of token (none when empty). It
// returns a nil connection and why when the server refuses it. onErr
// receives the connection's asynchronous errors.
func (s server) connect(t *testing.T, token string, onErr func(error)) (*nats.Conn, string) {
	t.Helper()
	opts := []nats.Option{nats.Timeout(5 * time.Second), nats.NoReconnect(), nats.PermissionErrOnSubscribe(true),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { onErr(err) })}
	if token != "" {
		opts = append(opts, nats.CustomInboxPrefix(wire.InboxPrefix(token)))
	}
	switch {
	case s.token != "":
		opts = append(opts, nats.Token(s.token))
	case token != "":
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(s.url, opts...)
	if errors.Is(err, nats.ErrAuthorization) {
		return nil, err.Error()
	}
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return nc, ""
}

// tokenRequest returns a request to subject carrying token in the Wacp-Token
// header, which only a daemon on an external server reads.
func tokenRequest(subject, body, token string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = []byte(body)
	if token != "" {
		m.Header.Set(daemon.TokenHeader, token)
	}
	return m
}

// probe sends one request. The answer is "connection refused", "publish
// denied" (the server's asynchronous permissions violation ended the wait;
// no reply came), an error code from the reply's Nats-Service-Error header,
// "empty" (a page with no entries) or "ok".
func (s server) probe(t *testing.T, token, subject, body string) (answer, detail string) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	nc, why := s.connect(t, token, func(err error) {
		if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `Publish to "`+subject+`"`) {
			cancel(err)
		}
	})
	if nc == nil {
		return refused, why
	}
	defer nc.Close()
	m, err := nc.RequestMsgWithContext(ctx, tokenRequest(subject, body, token))
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, nats.ErrPermissionViolation) {
			return pub, cause.Error()
		}
		t.Fatalf("request %s: %v", subject, err)
	}
	if code := m.Header.Get("Nats-Service-Error"); code != "" {
		return code, string(m.Data)
	}
	if jsError(m.Data) {
		return "jetstream error", string(m.Data)
	}
	var page struct {
		Entries *[]json.RawMessage `json:"entries"`
	}
	if json.Unmarshal(m.Data, &page) == nil && page.Entries != nil && len(*page.Entries) == 0 {
		return empty, string(m.Data)
	}
	return ok, string(m.Data)
}

// probePublish publishes one message without a reply subject. The answer is
// "connection refused", "publish denied" or "ok". The server reports a
// refused publish before it answers the flush that follows.
func (s server) probePublish(t *testing.T, token, subject, body string) (answer, detail string) {
	t.Helper()
	nc, why := s.connect(t, token, func(error) {})
	if nc == nil {
		return refused, why
	}
	defer nc.Close()
	if err := nc.Publish(subject, []byte(body)); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `Publish to "`+subject+`"`) {
		return pub, err.Error()
	}
	return ok, ""
}

// probeSubscribe subscribes to subject. The answer is "connection
// refused", "subscribe denied" or "ok". The server reports a refused
// subscription before it answers the flush that follows.
func (s server) probeSubscribe(t *testing.T, token, subject string) (answer, detail string) {
	t.Helper()
	nc, why := s.connect(t, token, func(error) {})
	if nc == nil {
		return refused, why
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatalf("subscribe %s: %v", subject, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if _, err := sub.NextMsg(time.Millisecond); errors.Is(err, nats.ErrPermissionViolation) {
		return subDenied, err.Error()
	}
	return ok, ""
}

// jsError reports whether reply is a JetStream API error response.
func jsError(reply []byte) bool {
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal(reply, &r) == nil && r.Error != nil
}

// randomToken returns a well-formed token the daemon never issued.
func randomToken(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "wacp_" + base64.RawURLEncoding.EncodeToString(b)
}

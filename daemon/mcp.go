package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wacpd/wacpd/mcpagent"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// The MCP endpoint (issue 18; seed 004 §8.2): /mcp on the -http listener
// serves package mcpagent's server over MCP's streamable HTTP transport.
// Every HTTP request carries the Bearer token of a workspace's agent (or
// the coordinator's, acting as the root workspace); any other token kind
// is refused 403, a missing, unknown or ended one 401, each with a wire
// error body. A session belongs to the principal that opened it: the
// SDK refuses (403) a request on it whose token names another principal
// (auth.TokenInfo.UserID), and its tools run the wire operations
// in-process as that principal (invokeJSON), with every check a NATS
// request gets.

// mcpSessionTimeout closes an MCP session after this long without a
// request.
const mcpSessionTimeout = 30 * time.Minute

// mountMCP serves the MCP endpoint at /mcp.
func (r *Daemon) mountMCP(mux *http.ServeMux) (close func()) {
	// A request on an existing session is served by the session's own
	// server; the SDK asks getServer only for the protocol versions it
	// supports, which every server shares. A server that runs nothing
	// answers those.
	idle, err := mcpagent.New(mcpagent.Config{Name: "wacpd", Version: r.cfg.Version, Logger: r.cfg.Logger,
		Call: func(context.Context, string, []byte) ([]byte, error) {
			return nil, &mcpagent.Refusal{Code: wire.CodeUnauthorized, Message: "no principal", Body: []byte(`{"error":{"code":"unauthorized","message":"no principal","details":{}}}`)}
		}})
	if err != nil {
		r.cfg.Logger.Error("mcp: the endpoint is not served", "err", err)
		return func() {}
	}
	h := mcp.NewStreamableHTTPHandler(func(hr *http.Request) *mcp.Server {
		p, ok := mcpPrincipal(hr)
		if !ok || hr.Header.Get("Mcp-Session-Id") != "" {
			return idle
		}
		srv, err := mcpagent.New(mcpagent.Config{Name: "wacpd", Version: r.cfg.Version, Logger: r.cfg.Logger, Call: r.mcpCaller(p)})
		if err != nil {
			r.cfg.Logger.Error("mcp: build the server", "err", err)
			return nil
		}
		return srv
	}, &mcp.StreamableHTTPOptions{Logger: r.cfg.Logger, SessionTimeout: mcpSessionTimeout, MaxRequestBodyBytes: MaxPayload + 64<<10})
	verify := func(_ context.Context, _ string, hr *http.Request) (*auth.TokenInfo, error) {
		p, ok := hr.Context().Value(gatedKey{}).(principal.Principal) // mcpGate's lookup
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p.String(), Extra: map[string]any{mcpPrincipalKey: p}}, nil
	}
	bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	closing, cancel := context.WithCancel(context.Background())
	mux.Handle("/mcp", r.mcpGate(endWith(closing, bearer(h))))
	return cancel
}

// endWith returns next with each request's context also ended by
// closing: a host's standalone SSE stream (GET /mcp) stays open for the
// whole session, and would otherwise hold the server's graceful Shutdown
// until its deadline.
func endWith(closing context.Context, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		ctx, stop := context.WithCancel(hr.Context())
		defer stop()
		defer context.AfterFunc(closing, stop)()
		next.ServeHTTP(w, hr.WithContext(ctx))
	})
}

const mcpPrincipalKey = "principal"

// mcpPrincipal returns the principal RequireBearerToken put in hr's
// context.
func mcpPrincipal(hr *http.Request) (principal.Principal, bool) {
	ti := auth.TokenInfoFromContext(hr.Context())
	if ti == nil {
		return principal.Principal{}, false
	}
	p, ok := ti.Extra[mcpPrincipalKey].(principal.Principal)
	return p, ok
}

// mcpGate refuses a request without a live agent or coordinator token
// with a wire error body: 401 (with WWW-Authenticate: Bearer) for none or
// an unknown or ended one, 403 for another kind. It hands the principal
// it found on in the request's context (gatedKey) for the bearer check.
func (r *Daemon) mcpGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		p, ok := r.bearer(hr)
		var err error
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="wacpd"`)
			err = runtime.Refuse(wire.CodeUnauthorized, "an Authorization: Bearer header with a live workspace agent token is required")
		case p.Kind != principal.KindAgent && p.Kind != principal.KindCoordinator:
			err = runtime.Refuse(wire.CodePermissionDenied, "MCP serves a workspace agent's contract; this is a %s token", p.Kind)
		}
		if err != nil {
			f := r.refusal("mcp", nil, err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.Status)
			w.Write(append(f.Body, '\n'))
			return
		}
		next.ServeHTTP(w, hr.WithContext(context.WithValue(hr.Context(), gatedKey{}, p)))
	})
}

// gatedKey keys the principal mcpGate found in the request's context.
type gatedKey struct{}

// mcpCaller runs an MCP server's requests as p, in-process. A request
// runs to its end as one of NATS does, whether or not the host waits for
// the answer, except a long poll (inbox.next, carp.approval), whose wait
// ends with the host's call.
func (r *Daemon) mcpCaller(p principal.Principal) mcpagent.Caller {
	return func(ctx context.Context, op string, body []byte) ([]byte, error) {
		if op != "inbox.next" && op != "carp.approval" {
			ctx = context.WithoutCancel(ctx)
		}
		b, err := r.invokeJSON(ctx, p, op, body)
		var f *Refusal
		if errors.As(err, &f) {
			return nil, &mcpagent.Refusal{Code: f.Code, Message: f.Message, Body: json.RawMessage(f.Body)}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		return b, nil
	}
}

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// The HTTP transport of CARP (seed 004 §8.1): POST /carp/v1/resolve,
// /carp/v1/execute, /carp/v1/validate and /carp/v1/respond (wacpd's
// extension, issue 17) on Config.HTTPAddr, each the same operation as its
// NATS endpoint. The token is the Authorization
// header's Bearer token of a workspace's agent (or the coordinator's,
// whose session is the root workspace); the answer carries X-Request-ID,
// X-Resolution-ID (resolve and execute) and X-Trace-ID, and a refusal is
// the seed's error envelope with the HTTP status of its code (Retry-After
// on RATE_LIMITED).

// startHTTP serves CARP on Config.HTTPAddr and returns its stop.
func (r *Daemon) startHTTP() (stop func(), err error) {
	ln, err := net.Listen("tcp", r.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("http listener: %w", err)
	}
	eps := map[string]endpoint{}
	for _, ep := range r.endpoints() {
		eps[ep.op] = ep
	}
	mux := http.NewServeMux()
	for _, op := range []string{carp.OpResolve, carp.OpExecute, carp.OpValidate, carp.OpRespond} {
		mux.Handle("POST /carp/v1/"+op, r.carpHTTP(eps["carp."+op]))
	}
	// Any other request under /carp/v1/ is CARP's refusal, not the
	// console's page.
	mux.HandleFunc("/carp/v1/", func(w http.ResponseWriter, hr *http.Request) {
		op := strings.TrimPrefix(hr.URL.Path, "/carp/v1/")
		f := asCarp(carp.Errorf(carp.CodeInvalidRequest, "no CARP operation at %s: POST /carp/v1/{resolve,execute,validate,respond}", hr.URL.Path), nil)
		f.status = http.StatusNotFound
		if ep, ok := eps["carp."+op]; ok && ep.aud == agents && op != "approval" {
			f = asCarp(carp.Errorf(carp.CodeInvalidRequest, "%s /carp/v1/%s: the operation takes POST only", hr.Method, op), nil)
			f.status = http.StatusMethodNotAllowed
			w.Header().Set("Allow", http.MethodPost)
		}
		writeCarp(w, "", nil, f)
	})
	closeMCP := r.mountMCP(mux)         // /mcp (mcp.go)
	closeConsole := r.mountConsole(mux) // / (console.go)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// Shutdown waits for no live stream (an MCP host's, the console's).
	srv.RegisterOnShutdown(closeMCP)
	srv.RegisterOnShutdown(closeConsole)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			r.cfg.Logger.Error("http server", "err", err)
		}
	}()
	r.httpURL = "http://" + ln.Addr().String()
	r.cfg.Logger.Info("serving CARP over HTTP", "url", r.httpURL)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-done
	}, nil
}

// HTTPURL returns the base URL of the HTTP listener, or "" without one;
// valid after Ready.
func (r *Daemon) HTTPURL() string { return r.httpURL }

func (r *Daemon) carpHTTP(ep endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, hr.Body, MaxPayload))
		if err != nil {
			writeCarp(w, ep.op, nil, asCarp(runtime.Refuse(wire.CodeTooLarge, "the body is larger than %d bytes", MaxPayload), nil))
			return
		}
		v, err := r.serveHTTP(hr, ep, body)
		if err != nil {
			f := asCarp(err, body)
			r.metrics.request(ep.name, f.resp.Error.Code)
			writeCarp(w, ep.op, body, f)
			return
		}
		r.metrics.request(ep.name, "ok")
		writeCarp(w, ep.op, body, v)
	})
}

// serveHTTP authenticates and runs one request as serveRequest does one
// of NATS.
func (r *Daemon) serveHTTP(hr *http.Request, ep endpoint, body []byte) (any, error) {
	p, ok := r.bearer(hr)
	if !ok {
		return nil, runtime.Refuse(wire.CodeUnauthorized, "an Authorization: Bearer header with a live agent token is required")
	}
	if p.Kind != principal.KindAgent && p.Kind != principal.KindCoordinator {
		return nil, runtime.Refuse(wire.CodePermissionDenied, "CARP is a workspace agent's; this is a %s token", p.Kind)
	}
	// A request runs to its end as one of NATS does, whether or not the
	// client waits for the answer.
	return r.invoke(context.WithoutCancel(hr.Context()), p, ep.op, body)
}

// bearer returns the live principal of hr's Authorization: Bearer token.
func (r *Daemon) bearer(hr *http.Request) (principal.Principal, bool) {
	scheme, tok, ok := strings.Cut(hr.Header.Get("Authorization"), " ")
	ok = ok && strings.EqualFold(scheme, "Bearer") // RFC 9110 §11.1: the scheme is case-insensitive
	p, known := r.tok.lookup(strings.TrimSpace(tok))
	return p, ok && known && r.live(p)
}

// writeCarp writes a CARP answer (v) or refusal (a *carpFailure) with the
// seed's headers.
func writeCarp(w http.ResponseWriter, op string, body []byte, v any) {
	req := claimedIDs(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if req.RequestID != "" {
		h.Set("X-Request-ID", req.RequestID)
	}
	status := http.StatusOK
	switch x := v.(type) {
	case *carpFailure:
		status = x.status
		v = x.resp
		if x.resp.Error.TraceID != "" {
			h.Set("X-Trace-ID", x.resp.Error.TraceID)
		}
		if x.resp.Retry != nil && x.resp.Retry.RetryAfterSeconds > 0 {
			h.Set("Retry-After", strconv.Itoa(x.resp.Retry.RetryAfterSeconds))
		}
	case carp.Resolution:
		h.Set("X-Resolution-ID", x.ResolutionID)
		h.Set("X-Trace-ID", x.TelemetryLink.TraceID)
	case *carp.ExecutionResult:
		h.Set("X-Trace-ID", x.TelemetryLink.TraceID)
	case carp.ValidationResult:
		h.Set("X-Trace-ID", x.TelemetryLink.TraceID)
	case carp.CheckpointResult:
		h.Set("X-Trace-ID", x.TelemetryLink.TraceID)
	}
	if op == "carp."+carp.OpExecute && req.Action.ResolutionID != "" {
		h.Set("X-Resolution-ID", req.Action.ResolutionID)
	}
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"carp_version":"1.0","error":{"code":"INTERNAL_ERROR","message":"encode the answer"}}`)
	}
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

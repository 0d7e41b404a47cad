package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// In-process requests: the HTTP listener's surfaces (CARP over HTTP, the
// MCP endpoint, the console) run the wire contract's operations for an
// authenticated principal without a NATS round trip, through the same
// checks a NATS request passes: the endpoint's audience, the principal's
// liveness, admission, the shutdown's tracking, the endpoint's deadline
// and handle's checks of the body.

// Refusal is the daemon's answer to a refused in-process request, as a
// NATS client would receive it: the wire code, its HTTP-like status, the
// message, and the reply body (wire.ErrorBody, or the CARP error
// envelope for the carp.* operations).
type Refusal struct {
	Code    string
	Status  int
	Message string
	Body    []byte
	Err     error // the refusal's cause, for the log
}

func (f *Refusal) Error() string { return f.Code + ": " + f.Message }

// Unwrap returns the cause.
func (f *Refusal) Unwrap() error { return f.Err }

// endpointByOp returns the endpoint of op.
func (r *Daemon) endpointByOp(op string) (endpoint, bool) {
	r.byOpOnce.Do(func() {
		r.byOp = map[string]endpoint{}
		for _, ep := range r.endpoints() {
			r.byOp[ep.op] = ep
		}
	})
	ep, ok := r.byOp[op]
	return ep, ok
}

// authorize checks that c may call an endpoint of audience aud; c.ws is
// the workspace an agent endpoint acts on.
func authorize(aud audience, c caller) error {
	switch aud {
	case agents:
		if (c.p.Kind != principal.KindAgent && c.p.Kind != principal.KindCoordinator) || c.p.Workspace != c.ws {
			return runtime.Refuse(wire.CodePermissionDenied, "this token may not act for workspace %s", c.ws)
		}
	case auditors:
		if c.p.Kind == principal.KindAgent || c.p.Kind == principal.KindTool {
			return runtime.Refuse(wire.CodePermissionDenied, "audit endpoints need a coordinator, user or auditor token")
		}
	case users:
		if c.p.Kind != principal.KindUser {
			return runtime.Refuse(wire.CodePermissionDenied, "the human highway's endpoints need a user token")
		}
	}
	return nil
}

// invoke runs op for p as a request of the wire contract would run: an
// agent endpoint acts on p's own workspace. The answer is the handler's
// value; a refusal is the handler's error, unencoded.
func (r *Daemon) invoke(ctx context.Context, p principal.Principal, op string, body []byte) (any, error) {
	ep, ok := r.endpointByOp(op)
	if !ok {
		return nil, runtime.Refuse(wire.CodeNotFound, "no operation %q (wire-v1 §3 lists them)", op)
	}
	if !r.live(p) {
		return nil, runtime.Refuse(wire.CodeUnauthorized, "the token's workspace has ended")
	}
	c := caller{p: p}
	if ep.aud == agents {
		c.ws = p.Workspace
	}
	if err := authorize(ep.aud, c); err != nil {
		return nil, err
	}
	t, err := r.adm.admit(p)
	if err != nil {
		return nil, err
	}
	defer t.release()
	c.t = t
	r.handlersMu.Lock()
	if r.closing {
		r.handlersMu.Unlock()
		return nil, runtime.Refuse(wire.CodeUnavailable, "the daemon is shutting down")
	}
	r.handlers.Add(1)
	r.handlersMu.Unlock()
	defer r.handlers.Done()
	// The request ends with the caller's context or the daemon's shutdown,
	// whichever comes first, and within the endpoint's deadline.
	ctx, cancel := context.WithTimeout(ctx, ep.deadline())
	defer cancel()
	stop := context.AfterFunc(r.reqCtx, cancel)
	defer stop()
	return r.handle(ctx, ep, c, body)
}

// invokeJSON runs op as invoke does and returns the reply's JSON exactly
// as a NATS client receives it, or a *Refusal carrying the error reply.
// It counts the request in the metrics under the endpoint's name.
func (r *Daemon) invokeJSON(ctx context.Context, p principal.Principal, op string, body []byte) ([]byte, error) {
	name := op
	if ep, ok := r.endpointByOp(op); ok {
		name = ep.name
	}
	v, err := r.invoke(ctx, p, op, body)
	if err == nil {
		var data []byte
		if data, err = encodeReply(v); err == nil {
			r.metrics.request(name, "ok")
			return data, nil
		}
	}
	f := r.refusal(name, body, err)
	r.metrics.request(name, f.Code)
	return nil, f
}

// encodeReply encodes a handler's answer as the wire contract sends it:
// a checkpoint in its canonical form, anything else as JSON.
func encodeReply(v any) ([]byte, error) {
	if cp, ok := v.(checkpointchain.Checkpoint); ok {
		return checkpointchain.Wire(cp)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the reply: %w", err)
	}
	return data, nil
}

// refusal returns err, the error of endpoint name's request body, as the
// daemon answers it: the CARP envelope for CARP endpoints, wire.ErrorBody
// for the others.
func (r *Daemon) refusal(name string, body []byte, err error) *Refusal {
	if isCarp(name) {
		f := asCarp(err, body)
		data, _ := json.Marshal(f.resp)
		return &Refusal{Code: f.resp.Error.Code, Status: f.status, Message: f.resp.Error.Message, Body: data, Err: err}
	}
	b := r.errorBody(err)
	if b.Error.Code == wire.CodeInternal {
		r.cfg.Logger.Error("request failed", "op", name, "err", err)
	}
	data, _ := json.Marshal(b)
	return &Refusal{Code: b.Error.Code, Status: wire.LookupCode(b.Error.Code).Status, Message: b.Error.Message, Body: data, Err: err}
}

// errorBody returns the wire error of err; an internal error is
// answered without its details (its caller logs them).
func (r *Daemon) errorBody(err error) wire.ErrorBody {
	code := runtime.Code(err)
	var b wire.ErrorBody
	b.Error.Code, b.Error.Details = code, map[string]any{}
	if d := runtime.Details(err); d != nil {
		b.Error.Details = d
	}
	switch code {
	case wire.CodeInternal:
		b.Error.Message = "internal error; the daemon log has the details"
	case wire.CodeUnavailable:
		if errors.Is(err, runtime.ErrStorage) {
			b.Error.Message = "the daemon could not store the request durably; nothing was changed; retry: " + err.Error()
		} else {
			b.Error.Message = runtime.Message(err)
		}
	default:
		b.Error.Message = runtime.Message(err)
	}
	return b
}

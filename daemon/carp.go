package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// CARP/1.0 served (issue 15): resolve, execute, validate and respond
// (the answers to a steward checkpoint, issue 17) on the agent's subjects
// (wacp.v1.agent.<ws>.carp.*) and on the HTTP listener (http.go), the
// atlases a coordinator loads, the TRACE log read back, and the
// executions forwarded to tool services (toolCalls). The decisions are
// package carp's and steward's, the records the engine's.

// carpFailure is a CARP refusal as its wire form: the seed's error
// envelope (§5.1) and the HTTP status of its code.
type carpFailure struct {
	resp   carp.ErrorResponse
	status int
}

func (f *carpFailure) Error() string { return f.resp.Error.Code + ": " + f.resp.Error.Message }

// asCarp returns err as a CARP refusal answering body: a refusal of
// package carp or of the engine's CARP checks as it is, any other error
// of the daemon or the engine with the CARP code closest to its wire
// code.
func asCarp(err error, body []byte) *carpFailure {
	var f *carpFailure
	if errors.As(err, &f) {
		return f
	}
	req := claimedIDs(body)
	var ce *carp.Error
	traceID := ""
	var re *runtime.CarpError
	switch {
	case errors.As(err, &re):
		ce, traceID = re.Err, re.TraceID
	case errors.As(err, &ce):
	default:
		code := carp.CodeInternalError
		msg := runtime.Message(err)
		switch runtime.Code(err) {
		case wire.CodeUnauthorized:
			code = carp.CodeUnauthorized
		case wire.CodePermissionDenied:
			code = carp.CodeForbidden
		case wire.CodeInvalidStructure, wire.CodeTooLarge, wire.CodeInvalidType:
			code = carp.CodeInvalidRequest
		case wire.CodeNotFound:
			code = carp.CodeInvalidRequest
		case wire.CodeUnavailable:
			code = carp.CodeServiceUnavailable
		default:
			msg = "internal error; the daemon log has the details"
		}
		ce = &carp.Error{Code: code, Message: msg}
	}
	status, ok := carp.Codes()[ce.Code]
	if !ok {
		status = 500
	}
	return &carpFailure{resp: ce.Response(req.RequestID, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), traceID), status: status}
}

// claimed is what a CARP body says of itself, read leniently: the ids an
// answer echoes, even when the body is refused.
type claimed struct {
	RequestID string `json:"request_id"`
	Action    struct {
		ResolutionID string `json:"resolution_id"`
	} `json:"action"`
}

func claimedIDs(body []byte) claimed {
	var c claimed
	_ = json.Unmarshal(body, &c)
	return c
}

// isCarp reports whether endpoint (its micro name) answers CARP's error
// envelope.
func isCarp(endpoint string) bool { return strings.HasPrefix(endpoint, "agent_carp_") }

// carpDecode decodes a CARP request of op from c; a refusal is recorded
// in TRACE (c's session) before it is answered.
func (r *Daemon) carpDecode(ctx context.Context, c caller, body []byte, op string) (carp.Request, error) {
	req, ce := carp.DecodeRequest(body, op)
	if ce == nil {
		return req, nil
	}
	claimed := claimedIDs(body)
	if len(claimed.RequestID) > 64 {
		claimed.RequestID = claimed.RequestID[:64]
	}
	if err := r.eng.CarpRefused(ctx, c.ws, op, claimed.RequestID, ce); err != nil {
		return carp.Request{}, err
	}
	return carp.Request{}, &runtime.CarpError{Err: ce}
}

func (r *Daemon) carpResolve(ctx context.Context, c caller, body []byte) (any, error) {
	req, err := r.carpDecode(ctx, c, body, carp.OpResolve)
	if err != nil {
		return nil, err
	}
	return r.eng.CarpResolve(ctx, c.ws, req)
}

func (r *Daemon) carpValidate(ctx context.Context, c caller, body []byte) (any, error) {
	req, err := r.carpDecode(ctx, c, body, carp.OpValidate)
	if err != nil {
		return nil, err
	}
	return r.eng.CarpValidate(ctx, c.ws, req)
}

// carpRespond answers a steward checkpoint's questions (issue 17): the
// engine checks the answers and records the outcome.
func (r *Daemon) carpRespond(ctx context.Context, c caller, body []byte) (any, error) {
	req, err := r.carpDecode(ctx, c, body, carp.OpRespond)
	if err != nil {
		return nil, err
	}
	return r.eng.CarpRespond(ctx, c.ws, req)
}

// carpExecute checks and records the execution (the engine), forwards it
// to its tool service unless the engine answered it already, and records
// and answers the outcome.
func (r *Daemon) carpExecute(ctx context.Context, c caller, body []byte) (any, error) {
	req, err := r.carpDecode(ctx, c, body, carp.OpExecute)
	if err != nil {
		return nil, err
	}
	done, in, err := r.eng.CarpExecute(ctx, c.ws, req)
	if err != nil {
		return nil, err
	}
	if done != nil {
		return done, nil
	}
	if r.tools == nil { // a daemon that is not serving (tests of the handlers)
		return r.eng.CarpFinish(ctx, in.Execution.ID, runtime.Outcome{Failure: "no NATS connection"})
	}
	return r.tools.call(ctx, in)
}

// coordinatorOnly refuses c unless it is the coordinator's (the root
// workspace's agent).
func (r *Daemon) coordinatorOnly(c caller, what string) error {
	if c.p.Kind != principal.KindCoordinator || c.ws != r.eng.Root() {
		return runtime.Refuse(wire.CodePermissionDenied, "only the coordinator %s", what)
	}
	return nil
}

func (r *Daemon) atlasLoad(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.AtlasLoadRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if len(req.Manifest) == 0 || !strings.HasPrefix(strings.TrimSpace(string(req.Manifest)), "{") {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "manifest must be an Atlas manifest (a JSON object)")
	}
	if err := r.coordinatorOnly(c, "loads atlases"); err != nil {
		return nil, err
	}
	m, err := atlas.Parse("atlas.load", req.Manifest)
	if err != nil {
		var ve *atlas.ValidationError
		if errors.As(err, &ve) {
			return nil, &runtime.Error{Code: wire.CodeInvalidStructure, Message: err.Error(),
				Details: map[string]any{"entry": ve.Entry, "rule": ve.Rule}, Err: err}
		}
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "%v", err)
	}
	ch, err := r.eng.LoadAtlas(ctx, m, c.p.String())
	return wire.AtlasChange(ch), err
}

func (r *Daemon) atlasUnload(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.AtlasUnloadRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if err := r.coordinatorOnly(c, "unloads atlases"); err != nil {
		return nil, err
	}
	if req.AtlasID == "" {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "atlas_id is required")
	}
	ch, err := r.eng.UnloadAtlas(ctx, req.AtlasID, c.p.String())
	return wire.AtlasChange(ch), err
}

// atlasList answers every agent: which atlases govern it is no secret
// from it (its resolutions name them).
func (r *Daemon) atlasList(ctx context.Context, c caller, body []byte) (any, error) {
	if err := runtime.Decode(body, &struct{}{}); err != nil {
		return nil, err
	}
	list, sums := r.eng.Atlases()
	out := wire.AtlasList{Atlases: []wire.AtlasInfo{}}
	for _, m := range list {
		info := wire.AtlasInfo{AtlasID: m.AtlasID, Version: m.Version, Name: m.Name, Checksum: sums[m.AtlasID],
			Domains: nonNil(m.Domains), Actions: []string{}}
		for _, a := range m.Actions {
			info.Actions = append(info.Actions, a.ActionID)
		}
		out.Atlases = append(out.Atlases, info)
	}
	return out, nil
}

// agentTrace reads the caller's own CARP session.
func (r *Daemon) agentTrace(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TraceRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.Session != "" && req.Session != c.ws {
		return nil, runtime.Refuse(wire.CodePermissionDenied, "an agent reads its own session (%s); audit.trace.read reads others", c.ws)
	}
	return r.tracePage(ctx, c.ws, req, false)
}

// auditTrace reads one session, or the whole log with its signed head. A
// user reads it as the whole trail (view_trail_any; a denial is recorded
// as capability_denied).
func (r *Daemon) auditTrace(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TraceRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	keep, err := r.userScope(ctx, c, "", true)
	if err != nil {
		return nil, err
	}
	if keep != nil {
		return nil, runtime.Refuse(wire.CodePermissionDenied, "the TRACE log is read whole: it needs view_trail_any")
	}
	return r.tracePage(ctx, req.Session, req, true)
}

func (r *Daemon) tracePage(ctx context.Context, session string, req wire.TraceRequest, head bool) (wire.TracePage, error) {
	if req.Limit < 0 || req.Limit > 1000 {
		return wire.TracePage{}, runtime.Refuse(wire.CodeInvalidStructure, "limit must be 0-1000")
	}
	limit := req.Limit
	if limit == 0 {
		limit = 1000
	}
	var out wire.TracePage
	if head {
		th, err := r.eng.TraceTreeHead(ctx)
		if err == nil {
			out.TreeHead = &th
		} else if runtime.Code(err) != wire.CodeNotFound {
			return out, err
		}
	}
	evs, next, err := r.eng.TraceEvents(ctx, session, req.From, limit)
	if err != nil {
		return out, err
	}
	out.Events = nonNil(evs)
	if next != 0 {
		out.Next = &next
	}
	return out, nil
}

// toolCalls forwards executions to tool services over the daemon's NATS
// connection and records their outcomes. An answer that comes after the
// execution timed out is recorded as late (runtime.Engine.CarpLate) by the
// goroutine that waits for it, which stop ends.
type toolCalls struct {
	nc  *nats.Conn
	eng *runtime.Engine
	lg  *slog.Logger

	ctx    context.Context // cancelled by stop: late waits end
	cancel context.CancelFunc
	late   sync.WaitGroup
}

// lateWindow is how long a timed-out execution's answer is still waited
// for (and recorded) after its timeout.
const lateWindow = 10 * time.Minute

func newToolCalls(nc *nats.Conn, eng *runtime.Engine, lg *slog.Logger) *toolCalls {
	ctx, cancel := context.WithCancel(context.Background())
	return &toolCalls{nc: nc, eng: eng, lg: lg, ctx: ctx, cancel: cancel}
}

func (tc *toolCalls) stop() {
	tc.cancel()
	tc.late.Wait()
}

// call forwards in to its tool service and records the outcome: the
// answer, a timeout (in.Timeout) or no tool service at all. The outcome's
// commit uses its own context: the intent is recorded, so its end must be
// too, even when the request's deadline has passed.
func (tc *toolCalls) call(ctx context.Context, in *runtime.Intent) (any, error) {
	data, err := json.Marshal(in.Tool)
	if err != nil {
		return nil, err
	}
	inbox := tc.nc.NewRespInbox()
	ch := make(chan *nats.Msg, 1)
	sub, err := tc.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return tc.finish(in, runtime.Outcome{Failure: "subscribe: " + err.Error()})
	}
	start := time.Now()
	msg := &nats.Msg{Subject: carp.ToolSubject(in.Tool.ActionID), Reply: inbox, Data: data}
	if err := tc.nc.PublishMsg(msg); err != nil {
		sub.Unsubscribe()
		return tc.finish(in, runtime.Outcome{Failure: "publish: " + err.Error(), Duration: time.Since(start)})
	}
	timer := time.NewTimer(in.Timeout)
	defer timer.Stop()
	select {
	case m := <-ch:
		sub.Unsubscribe()
		rep, failure := toolReply(m)
		return tc.finish(in, runtime.Outcome{Reply: rep, Failure: failure, Duration: time.Since(start)})
	case <-timer.C:
	case <-ctx.Done():
	}
	res, err := tc.finish(in, runtime.Outcome{Failure: "timeout", Duration: time.Since(start)})
	tc.late.Add(1)
	go tc.awaitLate(in.Execution.ID, sub, ch)
	return res, err
}

// awaitLate records a timed-out execution's late answer, if one comes
// within lateWindow.
func (tc *toolCalls) awaitLate(id string, sub *nats.Subscription, ch chan *nats.Msg) {
	defer tc.late.Done()
	defer sub.Unsubscribe()
	t := time.NewTimer(lateWindow)
	defer t.Stop()
	select {
	case m := <-ch:
		rep, failure := toolReply(m)
		if rep == nil {
			rep = &carp.ToolReply{Status: carp.StatusFailed, Error: &carp.ExecutionError{Code: carp.CodeExecutionFailed, Message: failure}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), wire.RequestTimeout)
		defer cancel()
		if err := tc.eng.CarpLate(ctx, id, *rep); err != nil {
			tc.lg.Warn("record a tool's late answer", "execution", id, "err", err)
		}
	case <-t.C:
	case <-tc.ctx.Done():
	}
}

func (tc *toolCalls) finish(in *runtime.Intent, o runtime.Outcome) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wire.RequestTimeout)
	defer cancel()
	return tc.eng.CarpFinish(ctx, in.Execution.ID, o)
}

// toolReply reads a tool service's answer: a ToolReply, or why it is none
// (no responders; a body that is not a ToolReply is a failed execution).
func toolReply(m *nats.Msg) (*carp.ToolReply, string) {
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return nil, "no_responders"
	}
	var rep carp.ToolReply
	if err := json.Unmarshal(m.Data, &rep); err != nil || rep.Status == "" {
		return &carp.ToolReply{Status: carp.StatusFailed, Error: &carp.ExecutionError{Code: carp.CodeExecutionFailed,
			Message: "the tool's answer is not a ToolReply"}}, ""
	}
	switch rep.Status {
	case carp.StatusSuccess, carp.StatusPartialSuccess, carp.StatusFailed:
	default:
		return &carp.ToolReply{Status: carp.StatusFailed, Error: &carp.ExecutionError{Code: carp.CodeExecutionFailed,
			Message: "the tool answered status " + rep.Status + ", not success, partial_success or failed"}}, ""
	}
	return &rep, ""
}

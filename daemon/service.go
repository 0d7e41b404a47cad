package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/wire"
)

// TokenHeader carries the caller's token on each request when the daemon
// runs on an external NATS server (-nats-url), where it cannot see which
// token a connection used.
const TokenHeader = wire.TokenHeader

// MaxWait bounds inbox.next's wait.
const MaxWait = wire.MaxWait

// caller is who made a request.
type caller struct {
	ws   string              // the workspace whose agent calls (agent endpoints)
	part int                 // the partition in the agent request's subject; -1: a subject without one
	p    principal.Principal // who called (the account's principal, or the token header's)
	t    *ticket             // the request's admission; nil outside serve

	// On a deployment of several daemons (deployment.go): the caller's
	// token, on an external server, and whether another daemon relayed
	// the request (forward.go).
	token   string
	relayed bool
}

type handlerFunc func(ctx context.Context, c caller, body []byte) (any, error)

// endpoint is one service endpoint: its micro name (also its label in the
// metrics), subject, handler and who may call it.
type endpoint struct {
	name, subject string
	op            string // the subject's last tokens: "envelope", "audit.trail.read", …
	h             handlerFunc
	aud           audience
	checksOwnBody bool          // the handler, not handle, bounds the body's size and nesting
	timeout       time.Duration // the request's deadline; 0 means RequestTimeout
}

// RequestTimeout and VerifyTimeout are the wire contract's deadlines
// (wire.RequestTimeout, wire.VerifyTimeout).
const (
	RequestTimeout = wire.RequestTimeout
	VerifyTimeout  = wire.VerifyTimeout
)

func (ep endpoint) deadline() time.Duration {
	if ep.timeout > 0 {
		return ep.timeout
	}
	return RequestTimeout
}

// startService registers the wacp micro service and its endpoints, and
// starts taking the routed agent requests (routes.go), which each
// endpoint's $SRV.STATS data counts.
func (r *Daemon) startService() (micro.Service, error) {
	cfg := micro.Config{
		Name: "wacp", Version: semver(r.cfg.Version),
		Description: "WACP runtime (wire contract v1)",
	}
	if r.routes != nil {
		cfg.StatsHandler = func(e *micro.Endpoint) any { return r.routes.statsOf(e.Name) }
	}
	svc, err := micro.AddService(r.nc, cfg)
	if err != nil {
		return nil, fmt.Errorf("start service: %w", err)
	}
	for _, ep := range r.endpoints() {
		for _, at := range r.servedAt(ep) {
			if err := svc.AddEndpoint(at.name, r.serve(ep), micro.WithEndpointSubject(at.subject)); err != nil {
				svc.Stop()
				return nil, fmt.Errorf("add endpoint %s: %w", at.subject, err)
			}
		}
	}
	if r.routes != nil {
		if err := r.startRoutes(); err != nil {
			svc.Stop()
			return nil, fmt.Errorf("start routes: %w", err)
		}
	}
	return svc, nil
}

// startRoutes takes the routed agent requests (routes.go): each goes to
// its endpoint as micro's would, the caller the principal that acts for
// the subject's workspace. A message whose reply subject is no inbox is
// dropped unread; a subject that names no endpoint is not_found.
func (r *Daemon) startRoutes() error {
	byOp := map[string]endpoint{}
	for _, ep := range r.endpoints() {
		if ep.aud == agents {
			byOp[ep.op] = ep
		}
	}
	return r.routes.start(r.nc, func(p principal.Principal, ws, op string, m *nats.Msg) {
		if !isInbox(m.Reply) {
			r.cfg.Logger.Debug("dropped a message without an inbox to answer to", "subject", m.Subject)
			return
		}
		req := &routedRequest{m: m, nc: r.nc, ws: ws, start: time.Now()}
		ep, ok := byOp[op]
		if !ok {
			r.replyErr("none", req, runtime.Refuse(wire.CodeNotFound, "no endpoint has the subject %s (wire-v1 §3 lists them)", m.Subject))
			return
		}
		req.stats = r.routes.stats[ep.name]
		r.serveRequest(ep, &p, req)
	})
}

// handlerTable returns the handler of every op of the wire contract
// (wire.Endpoints), by op.
func (r *Daemon) handlerTable() map[string]handlerFunc {
	return map[string]handlerFunc{
		"system.info":                r.systemInfo,
		"audit.trail.read":           r.auditRead,
		"audit.trail.aggregate":      r.auditAggregate,
		"audit.trail.verify":         r.auditVerify,
		"audit.sth":                  r.auditSTH,
		"audit.proof.inclusion":      r.auditInclusion,
		"audit.proof.consistency":    r.auditConsistency,
		"audit.checkpoint.get":       r.auditCheckpoint,
		"checkpoint":                 r.checkpoint,
		"signal":                     r.signal,
		"envelope":                   r.envelope,
		"inbox.next":                 r.inboxNext,
		"inbox.ack":                  r.inboxAck,
		"checkpoint.get":             r.checkpointGet,
		"checkpoint.list":            r.checkpointList,
		"checkpoint.head":            r.checkpointHead,
		"workspace.create":           r.workspaceCreate,
		"workspace.get":              r.workspaceGet,
		"workspace.list":             r.workspaceList,
		"workspace.abort":            r.workspaceOp("abort"),
		"workspace.suspend":          r.workspaceOp("suspend"),
		"workspace.resume":           r.workspaceOp("resume"),
		"workspace.migrate":          r.migrate,
		"workspace.migrate.complete": r.migrateComplete,
		"conflict.resolve":           r.conflictResolve,
		"integrate":                  r.integrate,
		"trail":                      r.agentTrail,
		"token.create":               r.tokenCreate,
		"token.revoke":               r.tokenRevoke,
		"user.state":                 r.userState,
		"user.capabilities":          r.userCapabilities,
		"workspace.transfer":         r.workspaceTransfer,
		"workspace.budget":           r.workspaceBudget,
		"workspace.visibility.grant": r.visibilityGrant,
		"workspace.priority":         r.workspacePriority,
		"group.abort":                r.groupAbort,
		"group.priority":             r.groupPriority,
		"rights.list":                r.rightsList,
		"rights.revoke":              r.rightsRevoke,
		"signals.consumer":           r.signalsConsumer,
		"task.create":                r.taskCreate,
		"task.get":                   r.taskGet,
		"task.list":                  r.taskList,
		"task.bind":                  r.taskBind,
		"task.cancel":                r.taskOp("cancel"),
		"task.retry":                 r.taskOp("retry"),
		"graph.get":                  r.graphGet,
		"highway.queue":              r.highwayQueue,
		"highway.get":                r.highwayGet,
		"highway.resolve":            r.highwayResolve,
		"highway.inject":             r.highwayInject,
		"highway.escalations":        r.highwayEscalations,
		"highway.escalation.respond": r.highwayRespond,
		"highway.workspace.create":   r.highwayCreate,
		"highway.workspace.abort":    r.highwayWorkspaceOp("abort"),
		"highway.workspace.suspend":  r.highwayWorkspaceOp("suspend"),
		"highway.workspace.resume":   r.highwayWorkspaceOp("resume"),
		"highway.workspace.transfer": r.highwayTransfer,
		"highway.workspace.budget":   r.highwayBudget,
		"highway.user.state":         r.highwayUserState,
		"audit.trace.read":           r.auditTrace,
		"carp.resolve":               r.carpResolve,
		"carp.execute":               r.carpExecute,
		"carp.validate":              r.carpValidate,
		"carp.respond":               r.carpRespond,
		"atlas.load":                 r.atlasLoad,
		"atlas.unload":               r.atlasUnload,
		"atlas.list":                 r.atlasList,
		"trace":                      r.agentTrace,
		"carp.approval":              r.carpApproval,
		"highway.approvals":          r.highwayApprovals,
		"highway.approval.mode":      r.highwayApprovalMode,
		"highway.permit.revoke":      r.highwayPermitRevoke,
		"highway.trust.restore":      r.highwayTrustRestore,
	}
}

// endpoints returns every endpoint of the service: one per endpoint of the
// wire contract, with its handler. An op without a handler is a bug that
// TestEveryWireEndpointIsServed catches; here it panics at start.
func (r *Daemon) endpoints() []endpoint {
	hs := r.handlerTable()
	var eps []endpoint
	for _, w := range wire.Endpoints() {
		h, ok := hs[w.Op]
		if !ok {
			panic("daemon: no handler for wire endpoint " + w.Op)
		}
		eps = append(eps, endpoint{
			name: w.Name(), subject: w.Subject(), op: w.Op, h: h, aud: w.Audience, timeout: w.Deadline(),
			// The engine bounds a checkpoint's size and nesting itself, and
			// records the refusal as checkpoint_rejected.
			checksOwnBody: w.Op == "checkpoint",
		})
	}
	return eps
}

// semver returns v if micro accepts it as a version, else a placeholder.
func semver(v string) string {
	if strings.Count(v, ".") >= 2 {
		return v
	}
	return "0.0.0"
}

type audience = wire.Audience

const (
	anyone   = wire.Anyone
	agents   = wire.Agents
	auditors = wire.Auditors
	users    = wire.Users
)

// serve wraps an endpoint's handler: it establishes the caller, admits the
// request (admission.go), runs the handler in a goroutine of its own (tracked
// for shutdown; workers.go keeps finished ones for the next request),
// writes the reply or the error in the wire contract's form,
// and counts it.
func (r *Daemon) serve(ep endpoint) micro.HandlerFunc {
	return func(req micro.Request) { r.serveRequest(ep, nil, req) }
}

// errRouted is identify's answer for a routed request that one of micro's
// subscriptions received too: the route answers it.
var errRouted = errors.New("daemon: a routed request")

// serveRequest is serve's handler for one request; p is the caller of a
// routed request (routes.go), nil for micro's.
func (r *Daemon) serveRequest(ep endpoint, p *principal.Principal, req micro.Request) {
	c, err := r.identify(req, ep.aud, p)
	if errors.Is(err, errRouted) {
		return
	}
	if err != nil {
		r.replyErr(ep.name, req, err)
		return
	}
	mint, relay := -1, -1
	if pt := r.parts; pt != nil && ep.aud == agents {
		if err := pt.serving(c.part); err != nil {
			r.replyErr(ep.name, req, err)
			return
		}
		var here int
		mint, relay, here = pt.place(c, ep.op, c.part, req.Data())
		// A child of the root minted into another of the daemon's
		// partitions, or a coordinator's request about a workspace of
		// one: only while it holds that partition's lease too.
		if err := pt.serving(here); err != nil {
			r.replyErr(ep.name, req, err)
			return
		}
	}
	if c.t, err = r.adm.admit(c.p); err != nil {
		r.replyErr(ep.name, req, err)
		return
	}
	r.handlersMu.Lock()
	if r.closing {
		r.handlersMu.Unlock()
		c.t.release()
		r.replyErr(ep.name, req, runtime.Refuse(wire.CodeUnavailable, "the daemon is shutting down"))
		return
	}
	r.handlers.Add(1)
	r.handlersMu.Unlock()
	r.workers.run(func() {
		defer r.handlers.Done()
		defer c.t.release()
		ctx, cancel := context.WithTimeout(r.reqCtx, ep.deadline())
		defer cancel()
		if relay >= 0 {
			r.relay(ctx, ep, req, c.ws, relay)
			return
		}
		if mint >= 0 {
			ctx = runtime.WithPartition(ctx, mint)
		}
		v, err := r.handle(ctx, ep, c, req.Data())
		// The slot is free before the answer leaves: a caller that sends
		// its next requests on it must not find this one still counted.
		c.t.release()
		if err != nil {
			r.replyErr(ep.name, req, err)
			return
		}
		data, err := encodeReply(v)
		if err != nil {
			r.replyErr(ep.name, req, err)
			return
		}
		// Headers and framing take a little of the max payload.
		if max := r.maxPayload() - 4096; len(data) > max {
			r.replyErr(ep.name, req, tooLarge(len(data), max))
			return
		}
		r.metrics.request(ep.name, "ok")
		if err := req.Respond(data); err != nil {
			r.cfg.Logger.Warn("reply", "subject", req.Subject(), "err", err)
		}
	})
}

// handle checks body as every request body is checked, then runs ep's
// handler on it. A body over the size limit (Config.MaxObjectBytes) is
// too_large before anything reads it; an empty body reads as {}; a body
// that is not UTF-8, or nests objects and arrays deeper than
// taxonomy.MaxNesting, is invalid_structure. A body refused here changes
// nothing. The checkpoint endpoint checks size, UTF-8 and nesting itself:
// the engine records every refusal of a checkpoint as checkpoint_rejected
// (Checkpoint spec §8).
func (r *Daemon) handle(ctx context.Context, ep endpoint, c caller, body []byte) (any, error) {
	if limit := r.eng.Config().MaxObjectBytes; len(body) > limit && !ep.checksOwnBody {
		return nil, runtime.Refuse(wire.CodeTooLarge, "request of %d bytes exceeds the limit of %d bytes; store large artifacts elsewhere and pass references", len(body), limit)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if !ep.checksOwnBody {
		if !utf8.Valid(body) {
			return nil, runtime.Refuse(wire.CodeInvalidStructure, "request body is not valid UTF-8")
		}
		if taxonomy.Nesting(body) > taxonomy.MaxNesting {
			return nil, runtime.Refuse(wire.CodeInvalidStructure, "request body nests objects and arrays deeper than %d levels", taxonomy.MaxNesting)
		}
		if err := checkStrings(ep.op, body); err != nil {
			return nil, err
		}
	}
	return ep.h(ctx, c, body)
}

// identify returns the caller of req. On the embedded server an agent
// request is routed (routes.go): p, the principal that acts for the
// subject's workspace, is the caller. Any other request reaches the
// daemon only through an import of the caller's account, and the server
// names that account in the request's info header, which no client can
// forge: the account is the principal. The subject's workspace is the
// caller's own; it is checked again here. On an external server the
// Wacp-Token header must be present and name a live principal.
func (r *Daemon) identify(req micro.Request, aud audience, p *principal.Principal) (caller, error) {
	var c caller
	if aud == agents {
		ws, _, part, ok := agentSubject(req.Subject())
		if !ok {
			return c, runtime.Refuse(wire.CodeInvalidStructure, "subject %q is not wacp.v1.agent.<ws>.<op>", req.Subject())
		}
		c.ws, c.part = ws, part
	}
	switch {
	case p != nil:
		c.p = *p
	case r.external:
		tp, ok := r.tok.lookup(req.Headers().Get(TokenHeader))
		if !ok && aud == anyone && r.parts != nil {
			// On a deployment a token is known only to the daemon that
			// made it, and system.info is the home daemon's: it answers
			// every client the cluster admits, as its content (version,
			// root, taxonomy) is the deployment's public description.
			return c, nil
		}
		if !ok || !r.live(tp) {
			return c, runtime.Refuse(wire.CodeUnauthorized, "missing, unknown or ended %s header", TokenHeader)
		}
		if tp.Kind == principal.KindUser {
			r.authFailures.succeeded(tp.Name) // each request authenticates on an external server
		}
		c.p = tp
		if r.parts != nil {
			c.token, c.relayed = req.Headers().Get(TokenHeader), req.Headers().Get(forwardedHeader) != ""
		}
	case aud == agents:
		// Every agent request on the embedded server is routed; micro's
		// subscriptions see one only when they were made after its
		// workspace's route (a connection before the service started),
		// with whatever headers its sender put on it.
		return c, errRouted
	default:
		ap, ok := r.accts.principal(requestAccount(req.Headers().Get(requestInfoHeader)))
		if !ok {
			return c, runtime.Refuse(wire.CodeUnauthorized, "the request did not come from a principal's account")
		}
		c.p = ap
	}
	if err := authorize(aud, c); err != nil {
		return c, err
	}
	return c, nil
}

// replyErr answers req of endpoint with err's wire error and counts it.
func (r *Daemon) replyErr(endpoint string, req micro.Request, err error) {
	if isCarp(endpoint) {
		r.replyCarpErr(endpoint, req, asCarp(err, req.Data()))
		return
	}
	b := r.errorBody(err)
	code := b.Error.Code
	r.metrics.request(endpoint, code)
	if code == wire.CodeInternal {
		r.cfg.Logger.Error("request failed", "subject", req.Subject(), "err", err)
	}
	data, _ := json.Marshal(b)
	status := strconv.Itoa(wire.LookupCode(code).Status)
	// The headers micro's Error sets, sent with Respond: Error records its
	// result in the request, which micro reads once the handler returns,
	// and this reply comes from the request's own goroutine.
	if err := req.Respond(data, micro.WithHeaders(micro.Headers{
		"Nats-Service-Error": {code}, "Nats-Service-Error-Code": {status},
	})); err != nil {
		r.cfg.Logger.Warn("reply error", "subject", req.Subject(), "err", err)
	}
}

// replyCarpErr answers a CARP endpoint's refusal with the seed's error
// envelope, its code and HTTP status in the error headers.
func (r *Daemon) replyCarpErr(endpoint string, req micro.Request, f *carpFailure) {
	r.metrics.request(endpoint, f.resp.Error.Code)
	data, _ := json.Marshal(f.resp)
	if err := req.Respond(data, micro.WithHeaders(micro.Headers{
		"Nats-Service-Error": {f.resp.Error.Code}, "Nats-Service-Error-Code": {strconv.Itoa(f.status)},
	})); err != nil {
		r.cfg.Logger.Warn("reply error", "subject", req.Subject(), "err", err)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

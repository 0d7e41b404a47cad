// Package wire is the source of the wire contract's names (wire-v1): the
// subjects, the headers, the endpoint table and the limits a client must
// know. The daemon serves exactly the endpoints of Endpoints, the client
// calls them by these names, and the documentation tests (docs/api.md,
// docs/security.md, docs/schema) are derived from the same table, so an
// endpoint added here without a handler, a row or a schema fails a test.
//
// Its request and reply bodies (types.go) are shared by the daemon, the
// engine and the client; a body that is a record is the record package's
// type. It imports the record formats, never storage, NATS, the daemon or
// the client.
package wire

import (
	"strings"
	"time"
)

// Subject prefixes and patterns (wire-v1 §3).
const (
	Prefix        = "wacp.v1."
	AgentPrefix   = Prefix + "agent."  // wacp.v1.agent.<ws>.<op>
	SignalPrefix  = Prefix + "sig."    // wacp.v1.sig.<root>.<ws>.<type>
	TrailPrefix   = Prefix + "trail."  // the live feed: wacp.v1.trail.<ws or _system>.<event type>
	SystemTrail   = "_system"          // the feed's token for system-level entries
	SignalsStream = "WACP_SIGNALS"     // the JetStream stream of the signals
	AgentWildcard = AgentPrefix + "*." // an agent endpoint's subject, registered for every workspace
	DocWorkspace  = "<ws>"             // how the documentation writes an agent subject's workspace
)

// Headers.
const (
	// TokenHeader carries the caller's token on every request; the daemon
	// reads it when it runs on an external NATS server (-nats-url), where
	// it cannot see which token a connection used.
	TokenHeader = "Wacp-Token"
	// ErrorHeader and ErrorCodeHeader carry an error reply's code and its
	// HTTP-like status (the micro framework's names).
	ErrorHeader     = "Nats-Service-Error"
	ErrorCodeHeader = "Nats-Service-Error-Code"
)

// Limits and deadlines.
const (
	// MaxWait bounds the wait of a long poll (inbox.next, carp.approval).
	MaxWait = 5 * time.Minute
	// RequestTimeout is a request's deadline in the daemon unless its
	// endpoint has its own (Endpoint.Timeout).
	RequestTimeout = 30 * time.Second
	// VerifyTimeout is audit.trail.verify's deadline: it reads every
	// table, value and checkpoint of the store.
	VerifyTimeout = 10 * time.Minute
)

// Audience is who may call an endpoint.
type Audience int

const (
	Anyone   Audience = iota // every principal
	Agents                   // the agent of the subject's workspace (and the coordinator where the op allows)
	Auditors                 // auditors and the coordinator
	Users                    // user tokens: the human highway (wire-v1 §6)
)

// Endpoint is one request/reply endpoint of the contract.
type Endpoint struct {
	// Op names it: "checkpoint", "inbox.next", "audit.trail.read",
	// "system.info". Agent endpoints are served on AgentPrefix+<ws>+"."+Op,
	// the others on Prefix+Op.
	Op       string
	Audience Audience
	// Request and Reply name the schema of the body and of a successful
	// reply in docs/schema: "file.json" for a whole file, "file.json#name"
	// for a definition in it; "" for none (an empty body).
	Request, Reply string
	// Timeout is the daemon's deadline for it; 0 means RequestTimeout.
	Timeout time.Duration
}

// Subject returns the subject the daemon registers: agent endpoints with
// the wildcard workspace token.
func (e Endpoint) Subject() string {
	if e.Audience == Agents {
		return AgentWildcard + e.Op
	}
	return Prefix + e.Op
}

// DocSubject returns the subject as the documentation writes it (an agent
// endpoint with the literal <ws>).
func (e Endpoint) DocSubject() string {
	if e.Audience == Agents {
		return AgentSubject(DocWorkspace, e.Op)
	}
	return Prefix + e.Op
}

// Name is the endpoint's name in the micro service (and its metrics
// label): "agent_inbox_next", "audit_trail_read", "system_info".
func (e Endpoint) Name() string {
	n := strings.ReplaceAll(e.Op, ".", "_")
	if e.Audience == Agents {
		return "agent_" + n
	}
	return n
}

// Deadline returns Timeout, or RequestTimeout when it is zero.
func (e Endpoint) Deadline() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return RequestTimeout
}

// Subject is the subject of op, an endpoint not on an agent's workspace
// (system.info, audit.*).
func Subject(op string) string { return Prefix + op }

// AgentSubject is the subject of op on workspace ws.
func AgentSubject(ws, op string) string { return AgentPrefix + ws + "." + op }

// Endpoints returns the contract's endpoints, in a fixed order.
func Endpoints() []Endpoint {
	return []Endpoint{
		{Op: "system.info", Audience: Anyone, Reply: "system.info.json"},
		{Op: "audit.trail.read", Audience: Auditors, Request: "requests.json#audit.trail.read", Reply: "replies.json#trail.page"},
		{Op: "audit.trail.aggregate", Audience: Auditors, Request: "requests.json#audit.trail.aggregate", Reply: "replies.json#trail.aggregate"},
		{Op: "audit.trail.verify", Audience: Auditors, Request: "requests.json#audit.trail.verify", Reply: "trail.verify.result.json", Timeout: VerifyTimeout},
		{Op: "audit.sth", Audience: Auditors, Request: "requests.json#audit.sth", Reply: "replies.json#audit.sth"},
		{Op: "audit.proof.inclusion", Audience: Auditors, Request: "requests.json#audit.proof.inclusion", Reply: "replies.json#audit.proof.inclusion"},
		{Op: "audit.proof.consistency", Audience: Auditors, Request: "requests.json#audit.proof.consistency", Reply: "replies.json#audit.proof.consistency"},
		{Op: "audit.checkpoint.get", Audience: Auditors, Request: "requests.json#audit.checkpoint.get", Reply: "checkpoint.json"},

		{Op: "highway.queue", Audience: Users, Request: "requests.json#highway.queue", Reply: "replies.json#highway.queue"},
		{Op: "highway.get", Audience: Users, Request: "requests.json#highway.get", Reply: "gate.json"},
		{Op: "highway.resolve", Audience: Users, Request: "requests.json#highway.resolve", Reply: "gate.json"},
		{Op: "highway.inject", Audience: Users, Request: "envelope.request.json", Reply: "envelope.json"},
		{Op: "highway.escalations", Audience: Users, Request: "requests.json#highway.escalations", Reply: "replies.json#highway.escalations"},
		{Op: "highway.escalation.respond", Audience: Users, Request: "requests.json#highway.escalation.respond", Reply: "escalation.json"},
		{Op: "highway.workspace.create", Audience: Users, Request: "workspace.create.request.json", Reply: "replies.json#workspace.create"},
		{Op: "highway.workspace.abort", Audience: Users, Request: "requests.json#workspace.op", Reply: "workspace.json"},
		{Op: "highway.workspace.suspend", Audience: Users, Request: "requests.json#workspace.op", Reply: "workspace.json"},
		{Op: "highway.workspace.resume", Audience: Users, Request: "requests.json#workspace.op", Reply: "workspace.json"},
		{Op: "highway.workspace.transfer", Audience: Users, Request: "requests.json#workspace.transfer", Reply: "workspace.json"},
		{Op: "highway.workspace.budget", Audience: Users, Request: "requests.json#workspace.budget", Reply: "workspace.json"},
		{Op: "highway.user.state", Audience: Users, Request: "requests.json#user.state", Reply: "user.json"},
		{Op: "highway.approvals", Audience: Users, Request: "approval.json#approvals_request", Reply: "approval.json#approvals"},
		{Op: "highway.approval.mode", Audience: Users, Request: "approval.json#mode_request", Reply: "approval.json#envelope"},
		{Op: "highway.permit.revoke", Audience: Users, Request: "approval.json#permit_revoke_request", Reply: "approval.json#permit"},
		{Op: "highway.trust.restore", Audience: Users, Request: "approval.json#trust_restore_request", Reply: "approval.json#boundary_trust"},

		{Op: "audit.trace.read", Audience: Auditors, Request: "requests.json#trace", Reply: "replies.json#trace.page"},

		{Op: "carp.resolve", Audience: Agents, Request: "carp.json#request", Reply: "carp.json#resolution"},
		{Op: "carp.execute", Audience: Agents, Request: "carp.json#request", Reply: "carp.json#execution_result", Timeout: MaxToolTimeout + RequestTimeout},
		{Op: "carp.validate", Audience: Agents, Request: "carp.json#request", Reply: "carp.json#validation_result"},
		{Op: "carp.respond", Audience: Agents, Request: "carp.json#request", Reply: "carp.json#checkpoint_result"},
		{Op: "carp.approval", Audience: Agents, Request: "approval.json#status_request", Reply: "approval.json#ref", Timeout: MaxWait + RequestTimeout},
		{Op: "atlas.load", Audience: Agents, Request: "requests.json#atlas.load", Reply: "replies.json#atlas.change"},
		{Op: "atlas.unload", Audience: Agents, Request: "requests.json#atlas.unload", Reply: "replies.json#atlas.change"},
		{Op: "atlas.list", Audience: Agents, Reply: "replies.json#atlas.list"},
		{Op: "trace", Audience: Agents, Request: "requests.json#trace", Reply: "replies.json#trace.page"},

		{Op: "checkpoint", Audience: Agents, Request: "checkpoint.request.json", Reply: "checkpoint.json"},
		{Op: "checkpoint.get", Audience: Agents, Request: "requests.json#checkpoint.get", Reply: "checkpoint.json"},
		{Op: "checkpoint.head", Audience: Agents, Request: "requests.json#checkpoint.head", Reply: "checkpoint.json"},
		{Op: "checkpoint.list", Audience: Agents, Request: "requests.json#checkpoint.list", Reply: "replies.json#checkpoint.list"},
		{Op: "conflict.resolve", Audience: Agents, Request: "requests.json#conflict.resolve", Reply: "workspace.json"},
		{Op: "envelope", Audience: Agents, Request: "envelope.request.json", Reply: "envelope.json"},
		{Op: "inbox.ack", Audience: Agents, Request: "requests.json#inbox.ack", Reply: "replies.json#inbox.ack"},
		{Op: "inbox.next", Audience: Agents, Request: "requests.json#inbox.next", Reply: "replies.json#inbox.next", Timeout: MaxWait + RequestTimeout},
		{Op: "integrate", Audience: Agents, Request: "integrate.request.json", Reply: "integrate.result.json"},
		{Op: "signal", Audience: Agents, Request: "signal.request.json", Reply: "signal.json"},
		{Op: "signals.consumer", Audience: Agents, Request: "requests.json#signals.consumer", Reply: "replies.json#signals.consumer"},
		{Op: "graph.get", Audience: Agents, Request: "requests.json#graph.get", Reply: "replies.json#graph.info"},
		{Op: "task.bind", Audience: Agents, Request: "requests.json#task.bind", Reply: "task.json"},
		{Op: "task.cancel", Audience: Agents, Request: "requests.json#task.op", Reply: "task.json"},
		{Op: "task.create", Audience: Agents, Request: "task.create.request.json", Reply: "replies.json#task.created"},
		{Op: "task.get", Audience: Agents, Request: "requests.json#task.get", Reply: "replies.json#task.info"},
		{Op: "task.list", Audience: Agents, Request: "requests.json#task.list", Reply: "replies.json#task.page"},
		{Op: "task.retry", Audience: Agents, Request: "requests.json#task.op", Reply: "task.json"},
		{Op: "token.create", Audience: Agents, Request: "requests.json#token.create", Reply: "replies.json#token.create"},
		{Op: "token.revoke", Audience: Agents, Request: "requests.json#token.revoke", Reply: "replies.json#token.revoke"},
		{Op: "user.state", Audience: Agents, Request: "requests.json#user.state", Reply: "user.json"},
		{Op: "user.capabilities", Audience: Agents, Request: "requests.json#user.capabilities", Reply: "user.json"},
		{Op: "workspace.transfer", Audience: Agents, Request: "requests.json#workspace.transfer", Reply: "workspace.json"},
		{Op: "trail", Audience: Agents, Request: "requests.json#trail", Reply: "replies.json#trail.page"},
		{Op: "workspace.abort", Audience: Agents, Request: "requests.json#workspace.op", Reply: "workspace.json"},
		{Op: "workspace.budget", Audience: Agents, Request: "requests.json#workspace.budget", Reply: "workspace.json"},
		{Op: "workspace.visibility.grant", Audience: Agents, Request: "requests.json#workspace.visibility.grant", Reply: "workspace.json"},
		{Op: "workspace.priority", Audience: Agents, Request: "requests.json#workspace.priority", Reply: "workspace.json"},
		{Op: "group.abort", Audience: Agents, Request: "requests.json#group.abort", Reply: "replies.json#group.batch"},
		{Op: "group.priority", Audience: Agents, Request: "requests.json#group.priority", Reply: "replies.json#group.batch"},
		{Op: "rights.list", Audience: Agents, Request: "requests.json#rights.list", Reply: "replies.json#rights.list"},
		{Op: "rights.revoke", Audience: Agents, Request: "requests.json#rights.revoke", Reply: "replies.json#rights.right"},
		{Op: "workspace.create", Audience: Agents, Request: "workspace.create.request.json", Reply: "replies.json#workspace.create"},
		{Op: "workspace.get", Audience: Agents, Request: "requests.json#workspace.get", Reply: "workspace.json"},
		{Op: "workspace.list", Audience: Agents, Request: "requests.json#workspace.list", Reply: "replies.json#workspace.list"},
		{Op: "workspace.migrate", Audience: Agents, Request: "requests.json#workspace.migrate", Reply: "workspace.json"},
		{Op: "workspace.migrate.complete", Audience: Agents, Request: "requests.json#workspace.migrate.complete", Reply: "replies.json#workspace.migrate.complete"},
		{Op: "workspace.resume", Audience: Agents, Request: "requests.json#workspace.op", Reply: "workspace.json"},
		{Op: "workspace.suspend", Audience: Agents, Request: "requests.json#workspace.op", Reply: "workspace.json"},
	}
}

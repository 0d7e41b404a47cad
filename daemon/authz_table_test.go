package daemon_test

// The authorization table of docs/security.md, in Go. TestAuthz runs every
// cell against the daemon; TestAuthzDocMatchesTable checks that the
// document's two tables (requests and answers) are exactly these.

// Principals: the columns of the table, in order. W is the workspace the
// requests are about (see docs/security.md, "The fixture").
var authzColumns = []string{
	"coordinator",       // the admin token, on the root's subjects
	"delegate",          // D's token (W's parent, a delegate), on D's subjects
	"worker",            // W's token, on W's subjects
	"observer",          // O's token (visibility [W]), on O's subjects
	"other worker",      // X's token (unrelated worker), on X's subjects
	"other worker as W", // X's token, on W's subjects
	"user",              // a user token, on W's subjects
	"auditor",           // an auditor token, on W's subjects
	"no token",          // a connection without a token
	"bad token",         // a connection with a token the daemon never issued
}

// Answers that are not error codes.
const (
	ok        = "ok"                 // a success reply (or, for a subscription, none refused)
	empty     = "empty"              // a success reply with no entries (trail out of scope)
	pub       = "publish denied"     // the NATS server refuses the publish; no reply
	subDenied = "subscribe denied"   // the NATS server refuses the subscription
	refused   = "connection refused" // the NATS server refuses the connection
	denied    = "permission_denied"  // the error code, the most common one here
	nf        = "not_found"          // the error code
)

// Kinds of subject a request is sent on.
const (
	subjSystem = "system"  // wacp.v1.system.<op>
	subjAgent  = "agent"   // wacp.v1.agent.<ws>.<op>, ws the column's own
	subjAudit  = "audit"   // wacp.v1.audit.<op>
	subjHwy    = "highway" // wacp.v1.highway.<op>
)

// W's state before the request, set up by the fixture.
const (
	stActive      = "active"
	stSuspended   = "suspended"
	stMigrating   = "migrating"
	stIntegrating = "integrating"
	stConflicted  = "conflicted"
)

// authzRow is one request and the answer each principal gets.
type authzRow struct {
	name  string   // the row's name in docs/security.md
	kind  string   // subjSystem, subjAgent, subjAudit or subjHwy
	op    string   // the last tokens of the subject
	body  string   // the request; <W>, <D> and <CP> stand for ids, <HEAD> for the caller's chain head (JSON)
	state string   // W's state before the request
	want  []string // one answer per column of authzColumns
}

// subject returns the subject of r for a caller acting on workspace ws.
func (r authzRow) subject(ws string) string {
	switch r.kind {
	case subjAgent:
		return "wacp.v1.agent." + ws + "." + r.op
	case subjAudit:
		return "wacp.v1.audit." + r.op
	case subjHwy:
		return "wacp.v1.highway." + r.op
	}
	return "wacp.v1.system." + r.op
}

// docSubject returns the subject as docs/security.md writes it.
func (r authzRow) docSubject() string { return r.subject("<ws>") }

var authzRows = []authzRow{
	{"system.info", subjSystem, "info", `{}`, stActive,
		[]string{ok, ok, ok, ok, ok, ok, ok, ok, refused, refused}},
	{"checkpoint artifact", subjAgent, "checkpoint",
		`{"type":"artifact","payload":{"files_changed":[],"content":"authz","artifacts":[]},"intent":"authz","parent":<HEAD>,"status":"provisional","confidence":"low"}`, stActive,
		[]string{denied, ok, ok, denied, ok, pub, pub, pub, refused, refused}},
	{"checkpoint observation", subjAgent, "checkpoint",
		`{"type":"observation","payload":{"files_changed":[],"content":"authz","artifacts":[]},"intent":"authz","parent":<HEAD>,"status":"provisional","confidence":"low"}`, stActive,
		[]string{denied, denied, denied, ok, denied, pub, pub, pub, refused, refused}},
	{"signal blocked", subjAgent, "signal", `{"type":"blocked","reason":"authz"}`, stActive,
		[]string{denied, ok, ok, denied, ok, pub, pub, pub, refused, refused}},
	{"envelope directive to W", subjAgent, "envelope",
		`{"to":"<W>","type":"directive","payload":{"format":"markdown","content":"authz","attachments":[]}}`, stActive,
		[]string{"no_send_right", ok, denied, denied, "no_send_right", pub, pub, pub, refused, refused}},
	{"envelope query to D", subjAgent, "envelope",
		`{"to":"<D>","type":"query","payload":{"format":"markdown","content":"authz","attachments":[]}}`, stActive,
		[]string{denied, denied, ok, "no_send_right", "no_send_right", pub, pub, pub, refused, refused}},
	{"inbox.next", subjAgent, "inbox.next", `{"wait":"0s"}`, stActive,
		[]string{ok, ok, ok, ok, ok, pub, pub, pub, refused, refused}},
	{"inbox.ack", subjAgent, "inbox.ack", `{"id":"<CP>"}`, stActive,
		[]string{nf, nf, nf, nf, nf, pub, pub, pub, refused, refused}},
	{"checkpoint.get", subjAgent, "checkpoint.get", `{"id":"<CP>"}`, stActive,
		[]string{ok, ok, ok, ok, nf, pub, pub, pub, refused, refused}},
	{"checkpoint.list", subjAgent, "checkpoint.list", `{"workspace":"<W>"}`, stActive,
		[]string{ok, ok, ok, ok, nf, pub, pub, pub, refused, refused}},
	{"checkpoint.head", subjAgent, "checkpoint.head", `{"workspace":"<W>"}`, stActive,
		[]string{ok, ok, ok, ok, nf, pub, pub, pub, refused, refused}},
	{"workspace.create", subjAgent, "workspace.create", `{"role":"worker","parent":"<W>"}`, stActive,
		[]string{ok, ok, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"workspace.get", subjAgent, "workspace.get", `{"id":"<W>"}`, stActive,
		[]string{ok, ok, ok, ok, nf, pub, pub, pub, refused, refused}},
	{"workspace.list", subjAgent, "workspace.list", `{}`, stActive,
		[]string{ok, ok, ok, ok, ok, pub, pub, pub, refused, refused}},
	{"workspace.abort", subjAgent, "workspace.abort", `{"id":"<W>","reason":"authz"}`, stActive,
		[]string{ok, ok, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"workspace.suspend", subjAgent, "workspace.suspend", `{"id":"<W>","reason":"authz"}`, stActive,
		[]string{ok, ok, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"workspace.resume", subjAgent, "workspace.resume", `{"id":"<W>"}`, stSuspended,
		[]string{ok, ok, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"workspace.migrate", subjAgent, "workspace.migrate", `{"id":"<W>","new_agent":"agent-2"}`, stActive,
		[]string{ok, ok, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"workspace.migrate.complete", subjAgent, "workspace.migrate.complete", `{"id":"<W>","new_agent":"agent-2"}`, stMigrating,
		[]string{ok, ok, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"integrate", subjAgent, "integrate", `{"workspace":"<W>","decision":"accept"}`, stIntegrating,
		[]string{ok, ok, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"conflict.resolve", subjAgent, "conflict.resolve", `{"workspace":"<W>","resolution_strategy":"coordinator_resolve"}`, stConflicted,
		[]string{ok, ok, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"trail", subjAgent, "trail", `{"workspace":"<W>"}`, stActive,
		[]string{ok, ok, ok, ok, empty, pub, pub, pub, refused, refused}},
	{"token.create", subjAgent, "token.create", `{"kind":"auditor","name":"authz"}`, stActive,
		[]string{ok, denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"token.revoke", subjAgent, "token.revoke", `{"kind":"auditor","name":"authz-revoked"}`, stActive,
		[]string{ok, denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"user.state", subjAgent, "user.state", `{"user":"nobody-here","state":"suspended"}`, stActive,
		[]string{nf, denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"user.capabilities", subjAgent, "user.capabilities", `{"user":"nobody-here","grant":["abort_own"]}`, stActive,
		[]string{nf, denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"workspace.transfer", subjAgent, "workspace.transfer", `{"id":"<W>","owner":"nobody-here"}`, stActive,
		[]string{nf, denied, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"workspace.budget", subjAgent, "workspace.budget", `{"id":"<W>","budget":{"cost_limit":1}}`, stActive,
		[]string{"invalid_structure", "invalid_structure", denied, denied, nf, pub, pub, pub, refused, refused}},
	{"workspace.visibility.grant", subjAgent, "workspace.visibility.grant", `{"id":"<W>","target":"<W>","reason":"authz"}`, stActive,
		[]string{"invalid_structure", "invalid_structure", denied, denied, nf, pub, pub, pub, refused, refused}},
	{"workspace.priority", subjAgent, "workspace.priority", `{"id":"<W>","priority":"normal"}`, stActive,
		[]string{ok, ok, denied, denied, nf, pub, pub, pub, refused, refused}},
	{"group.abort", subjAgent, "group.abort", `{"group":"authz-none"}`, stActive,
		[]string{nf, denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"group.priority", subjAgent, "group.priority", `{"group":"authz-none","priority":"normal"}`, stActive,
		[]string{nf, denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"rights.list", subjAgent, "rights.list", `{"workspace":"<W>"}`, stActive,
		[]string{ok, ok, ok, ok, nf, pub, pub, pub, refused, refused}},
	{"rights.revoke", subjAgent, "rights.revoke", `{"right_id":"none"}`, stActive,
		[]string{nf, denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"signals.consumer", subjAgent, "signals.consumer", `{"workspace":"<W>"}`, stActive,
		[]string{ok, denied, ok, denied, denied, pub, pub, pub, refused, refused}},
	{"task.create", subjAgent, "task.create", `{"tasks":[{"name":"authz"}]}`, stActive,
		[]string{ok, ok, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"task.list", subjAgent, "task.list", `{}`, stActive,
		[]string{ok, ok, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"task.get", subjAgent, "task.get", `{"id":"none"}`, stActive,
		[]string{nf, nf, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"task.bind", subjAgent, "task.bind", `{"id":"none","workspace":"<W>"}`, stActive,
		[]string{nf, nf, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"task.cancel", subjAgent, "task.cancel", `{"id":"none"}`, stActive,
		[]string{nf, nf, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"task.retry", subjAgent, "task.retry", `{"id":"none"}`, stActive,
		[]string{nf, nf, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"graph.get", subjAgent, "graph.get", `{"id":"none"}`, stActive,
		[]string{nf, nf, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"highway.queue", subjHwy, "queue", `{}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, ok, pub, refused, refused}},
	{"highway.get", subjHwy, "get", `{"id":"none"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, nf, pub, refused, refused}},
	{"highway.resolve", subjHwy, "resolve", `{"gate_id":"none","action":"approve"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, nf, pub, refused, refused}},
	{"highway.escalations", subjHwy, "escalations", `{}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, ok, pub, refused, refused}},
	{"highway.escalation.respond", subjHwy, "escalation.respond", `{"escalation_id":"none","response":"delegation"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, nf, pub, refused, refused}},
	{"highway.inject", subjHwy, "inject", `{"to":"<W>","type":"feedback","payload":{"format":"markdown","content":"authz","attachments":[]}}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.workspace.create", subjHwy, "workspace.create", `{"role":"worker"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.workspace.abort", subjHwy, "workspace.abort", `{"id":"<W>"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.workspace.suspend", subjHwy, "workspace.suspend", `{"id":"<W>"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.workspace.resume", subjHwy, "workspace.resume", `{"id":"<W>"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.workspace.transfer", subjHwy, "workspace.transfer", `{"id":"<W>","owner":"nobody-here"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.workspace.budget", subjHwy, "workspace.budget", `{"id":"<W>","budget":{"cost_limit":1}}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.user.state", subjHwy, "user.state", `{"user":"nobody-here","state":"deactivated"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.approvals", subjHwy, "approvals", `{}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, ok, pub, refused, refused}},
	{"highway.approval.mode", subjHwy, "approval.mode", `{"workspace":"<W>","mode":"always"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"highway.permit.revoke", subjHwy, "permit.revoke", `{"permit_id":"none"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, nf, pub, refused, refused}},
	{"highway.trust.restore", subjHwy, "trust.restore", `{"workspace":"<W>","boundary":"tool:ticket.get"}`, stActive,
		[]string{pub, pub, pub, pub, pub, pub, "capability_denied", pub, refused, refused}},
	{"audit.trail.read", subjAudit, "trail.read", `{"workspace":"<W>"}`, stActive,
		[]string{ok, pub, pub, pub, pub, pub, "capability_denied", ok, refused, refused}},
	{"audit.trail.aggregate", subjAudit, "trail.aggregate", `{"workspace":"<W>","group_by":"event_type"}`, stActive,
		[]string{ok, pub, pub, pub, pub, pub, "capability_denied", ok, refused, refused}},
	{"audit.trail.verify", subjAudit, "trail.verify", `{}`, stActive,
		[]string{ok, pub, pub, pub, pub, pub, "capability_denied", ok, refused, refused}},
	{"audit.sth", subjAudit, "sth", `{}`, stActive,
		[]string{ok, pub, pub, pub, pub, pub, ok, ok, refused, refused}},
	{"audit.proof.inclusion", subjAudit, "proof.inclusion", `{"index":0}`, stActive,
		[]string{ok, pub, pub, pub, pub, pub, ok, ok, refused, refused}},
	{"audit.proof.consistency", subjAudit, "proof.consistency", `{"from":1}`, stActive,
		[]string{ok, pub, pub, pub, pub, pub, ok, ok, refused, refused}},
	{"audit.checkpoint.get", subjAudit, "checkpoint.get", `{"id":"<CP>"}`, stActive,
		[]string{ok, pub, pub, pub, pub, pub, "capability_denied", ok, refused, refused}},
	{"audit.trace.read", subjAudit, "trace.read", `{}`, stActive,
		[]string{ok, pub, pub, pub, pub, pub, "capability_denied", ok, refused, refused}},
	{"carp.resolve", subjAgent, "carp.resolve", carpBody("resolve", `"task":{"goal":"authz"}`), stActive,
		[]string{"ATLAS_NOT_FOUND", "ATLAS_NOT_FOUND", "ATLAS_NOT_FOUND", "ATLAS_NOT_FOUND", "ATLAS_NOT_FOUND", pub, pub, pub, refused, refused}},
	{"carp.execute", subjAgent, "carp.execute", carpBody("execute", carpAction), stActive,
		[]string{"RESOLUTION_NOT_FOUND", "RESOLUTION_NOT_FOUND", "RESOLUTION_NOT_FOUND", "RESOLUTION_NOT_FOUND", "RESOLUTION_NOT_FOUND", pub, pub, pub, refused, refused}},
	{"carp.validate", subjAgent, "carp.validate", carpBody("validate", carpAction), stActive,
		[]string{ok, ok, ok, ok, ok, pub, pub, pub, refused, refused}},
	{"carp.respond", subjAgent, "carp.respond", carpBody("respond", carpResponse), stActive,
		[]string{"INVALID_REQUEST", "INVALID_REQUEST", "INVALID_REQUEST", "INVALID_REQUEST", "INVALID_REQUEST", pub, pub, pub, refused, refused}},
	{"carp.approval", subjAgent, "carp.approval", `{"approval_id":"none"}`, stActive,
		[]string{"INVALID_REQUEST", "INVALID_REQUEST", "INVALID_REQUEST", "INVALID_REQUEST", "INVALID_REQUEST", pub, pub, pub, refused, refused}},
	{"atlas.load", subjAgent, "atlas.load", `{"manifest":{}}`, stActive,
		[]string{"invalid_structure", denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"atlas.unload", subjAgent, "atlas.unload", `{"atlas_id":"none"}`, stActive,
		[]string{nf, denied, denied, denied, denied, pub, pub, pub, refused, refused}},
	{"atlas.list", subjAgent, "atlas.list", `{}`, stActive,
		[]string{ok, ok, ok, ok, ok, pub, pub, pub, refused, refused}},
	{"trace", subjAgent, "trace", `{}`, stActive,
		[]string{ok, ok, ok, ok, ok, pub, pub, pub, refused, refused}},
}

// carpBody is a CARP request of op from the agent of the workspace the
// column acts as (<WS>), with more fields.
func carpBody(op, more string) string {
	return `{"carp_version":"1.0","request_id":"0193a5b2-7c4e-7d3a-9f1e-2b6c8d0e4f5a","timestamp":"2026-11-27T12:00:00Z","operation":"` +
		op + `","requester":{"agent_id":"<WS>/agent/1","session_id":"<WS>"},` + more + `}`
}

const carpResponse = `"checkpoint_response":{"checkpoint_id":"terms","answers":{"agree":true}}`

const carpAction = `"action":{"action_id":"ticket.get","action_type":"ticket.get","parameters":{},"resolution_id":"0193a5b2-7c4e-7d3a-9f1e-2b6c8d0e4f5b"}`

// Actions on NATS subjects beyond the endpoints.
const (
	actSubscribe = "subscribe"
	actPublish   = "publish"
	actRequest   = "request"
)

// subjectRow is one action on a NATS subject outside the endpoints and the
// answer each principal gets. In subject and body, <ws> is the workspace
// the column acts on (as for the endpoints), <W> and <D> are the fixture's
// W and D, and <W inbox> is W's token's reply prefix.
type subjectRow struct {
	name    string
	action  string // actSubscribe, actPublish or actRequest
	subject string
	body    string
	want    []string
}

var subjectRows = []subjectRow{
	{"signals to ws", actSubscribe, "wacp.v1.sig.<ws>.>", "",
		[]string{ok, ok, ok, ok, ok, subDenied, subDenied, subDenied, refused, refused}},
	{"all signals", actSubscribe, "wacp.v1.sig.>", "",
		[]string{ok, subDenied, subDenied, subDenied, subDenied, subDenied, subDenied, subDenied, refused, refused}},
	{"trail of ws", actSubscribe, "wacp.v1.trail.<ws>.>", "",
		[]string{ok, ok, ok, ok, ok, subDenied, subDenied, ok, refused, refused}},
	{"whole trail", actSubscribe, "wacp.v1.trail.>", "",
		[]string{ok, subDenied, subDenied, subDenied, subDenied, subDenied, subDenied, ok, refused, refused}},
	{"gate events", actSubscribe, "wacp.v1.trail.*.gate_triggered", "",
		[]string{ok, subDenied, subDenied, subDenied, subDenied, subDenied, ok, ok, refused, refused}},
	{"shared inbox", actSubscribe, "_INBOX.>", "",
		[]string{ok, ok, ok, ok, ok, ok, ok, ok, refused, refused}},
	{"W's reply inbox", actSubscribe, "<W inbox>.>", "",
		[]string{subDenied, subDenied, ok, subDenied, subDenied, subDenied, subDenied, subDenied, refused, refused}},
	{"forged signal", actPublish, "wacp.v1.sig.<D>.<W>.complete", `{}`,
		[]string{pub, pub, pub, pub, pub, pub, pub, pub, refused, refused}},
	{"signal stream info", actRequest, "$JS.API.STREAM.INFO.WACP_SIGNALS", `{"subjects_filter":">"}`,
		[]string{ok, pub, pub, pub, pub, pub, pub, pub, refused, refused}},
	{"durable consumer of ws", actRequest, "$JS.API.CONSUMER.CREATE.WACP_SIGNALS.<ws>.wacp.v1.sig.<ws>.>",
		`{"stream_name":"WACP_SIGNALS","config":{"durable_name":"<ws>","filter_subject":"wacp.v1.sig.<ws>.>","ack_policy":"explicit"}}`,
		[]string{pub, pub, pub, pub, pub, pub, pub, pub, refused, refused}},
	{"service stats", actRequest, "$SRV.STATS.wacp", `{}`,
		[]string{ok, pub, pub, pub, pub, pub, pub, pub, refused, refused}},
	{"service ping", actRequest, "$SRV.PING", `{}`,
		[]string{ok, pub, pub, pub, pub, pub, pub, pub, refused, refused}},
	{"jetstream account info", actRequest, "$JS.API.INFO", `{}`,
		[]string{ok, pub, pub, pub, pub, pub, pub, pub, refused, refused}},
}

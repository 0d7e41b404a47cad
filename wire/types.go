package wire

import (
	"encoding/json"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/integration"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/workspace"
)

// The request and reply bodies of the endpoints (docs/schema holds their
// JSON Schemas; TestRepliesMatchTheirSchemas checks real replies against
// them). The daemon decodes requests strictly (an unknown field is
// invalid_structure), so a field here is a field of the contract. Bodies
// that are records (a checkpoint, an envelope, a signal, a workspace, a
// trail entry) are the record packages' types; the record requests are
// checkpointchain.Request, envelope.Request, signal.Request and
// workspace.CreateRequest.

// IDRequest names a workspace (workspace.get, .abort, .suspend, .resume;
// empty for the caller's own in workspace.get) and, for abort and
// suspend, why.
type IDRequest struct {
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ListRequest is the body of workspace.list; zero fields do not filter.
type ListRequest struct {
	Parent string          `json:"parent,omitempty"`
	State  workspace.State `json:"state,omitempty"`
	After  string          `json:"after,omitempty"`
	Limit  int             `json:"limit,omitempty"`
}

// WorkspacePage is the reply of workspace.list; Next, when set, is the
// After of the next page.
type WorkspacePage struct {
	Workspaces []*workspace.Workspace `json:"workspaces"`
	Next       *string                `json:"next"`
}

// MigrateRequest is the body of workspace.migrate.
type MigrateRequest struct {
	ID       string `json:"id"`
	NewAgent string `json:"new_agent,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// MigrateCompleteRequest is the body of workspace.migrate.complete: Error
// set fails the migration.
type MigrateCompleteRequest struct {
	ID       string `json:"id"`
	NewAgent string `json:"new_agent,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Created is the reply of workspace.create: the new workspace and the
// bearer token of its agent.
type Created struct {
	Workspace *workspace.Workspace `json:"workspace"`
	Token     string               `json:"token"`
}

// Migrated is the reply of workspace.migrate.complete.
type Migrated struct {
	Workspace *workspace.Workspace `json:"workspace"`
	// Token is the workspace's new agent token, for the new agent; the old
	// one no longer authenticates. Empty (null) after a failed migration.
	Token *string `json:"token"`
}

// IntegrateRequest is the body of integrate.
type IntegrateRequest struct {
	Workspace string          `json:"workspace"`
	Decision  string          `json:"decision"`           // accept, revise or reject
	Strategy  string          `json:"strategy,omitempty"` // direct (default), layered or evaluated
	Mode      string          `json:"mode,omitempty"`     // normal (default) or salvage
	Result    json.RawMessage `json:"result,omitempty"`
	// Conflicts are the conflicts the coordinator's merge detected (layered:
	// content_overlap only; evaluated: any of the four types). With
	// conflicts an accepted workspace goes to conflicted instead of closed.
	Conflicts []workspace.Conflict `json:"conflicts,omitempty"`
}

// IntegrateResult is the reply of integrate.
type IntegrateResult struct {
	Workspace  *workspace.Workspace `json:"workspace"`
	Checkpoint string               `json:"checkpoint"` // the checkpoint integrated
	Outcome    string               `json:"outcome"`    // closed, failed, salvaged or conflicted
	// Record is the integration record merged into the target (closed,
	// salvaged); absent otherwise.
	Record *integration.Record `json:"record,omitempty"`
}

// ResolveRequest is the body of conflict.resolve.
type ResolveRequest struct {
	Workspace          string `json:"workspace"`
	ResolutionStrategy string `json:"resolution_strategy"` // coordinator_resolve or agent_rework
	Resolution         string `json:"resolution,omitempty"`
}

// InboxNextRequest is the body of inbox.next: Wait is a Go duration (up to
// the daemon's maximum); AckPrevious (default true) acknowledges the
// envelopes leased to the caller first.
type InboxNextRequest struct {
	Wait        string `json:"wait,omitempty"`
	AckPrevious *bool  `json:"ack_previous,omitempty"`
}

// GetRequest names one record by id (inbox.ack, checkpoint.get,
// audit.checkpoint.get).
type GetRequest struct {
	ID string `json:"id"`
}

// AckResult is the reply of inbox.ack.
type AckResult struct {
	ID string `json:"id"`
	// Removed reports whether this acknowledgement took the envelope out
	// of the inbox; false when it had already left (acknowledged before,
	// or undeliverable) or has not arrived yet (queued).
	Removed bool `json:"removed"`
}

// ConsumerRequest is the body of signals.consumer.
type ConsumerRequest struct {
	Workspace  string `json:"workspace,omitempty"`
	Durable    string `json:"durable,omitempty"`
	DeliverAll bool   `json:"deliver_all,omitempty"`
}

// ConsumerInfo is the reply of signals.consumer: the consumer of stream
// WACP_SIGNALS through which a workspace's signals are read with the
// JetStream pull API.
type ConsumerInfo struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Filter   string `json:"filter"`
	Durable  bool   `json:"durable"`
}

// Info is the reply of system.info.
type Info struct {
	Version         string       `json:"version"`
	RootWorkspace   string       `json:"root_workspace"`
	Taxonomy        TaxonomyInfo `json:"taxonomy"`
	HashAlgorithm   string       `json:"hash_algorithm"`
	ProtocolVersion string       `json:"protocol_version"`
	// PublicKey verifies the daemon's signed tree heads (note verifier key);
	// Origin is their first line.
	PublicKey string `json:"public_key"`
	Origin    string `json:"origin"`
}

// TaxonomyInfo identifies the daemon's taxonomy.
type TaxonomyInfo struct {
	ID       string `json:"id"`
	Version  string `json:"version"`
	Checksum string `json:"checksum"`
}

// TrailQuery is the body of audit.trail.read: it selects entries of the
// global trail. Zero fields do not filter.
type TrailQuery struct {
	After     string          `json:"after,omitempty"`
	Limit     int             `json:"limit,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
	EventType trail.EventType `json:"event_type,omitempty"`
	Actor     string          `json:"actor,omitempty"`
	Since     string          `json:"since,omitempty"` // RFC 3339, inclusive
	Until     string          `json:"until,omitempty"` // RFC 3339, exclusive
	// Body selects entries whose top-level body fields have these values.
	Body map[string]string `json:"body,omitempty"`
}

// TrailPage is one page of trail entries (audit.trail.read,
// trail.read); Next, when set, is the After of the next page.
type TrailPage struct {
	Entries []trail.Entry `json:"entries"`
	Next    *string       `json:"next"`
}

// TreeHead is the reply of audit.sth: the daemon's latest signed tree head
// and the key it says signs it. Check the note with trail.OpenTreeHead and
// a key you trust, not only PublicKey.
type TreeHead struct {
	trail.TreeHead
	PublicKey string `json:"public_key"` // note verifier key
}

// InclusionRequest asks audit.proof.inclusion for the audit path of one
// entry: by id (Entry) or by leaf index (Index, entry #Index+1), in the
// tree of Size entries (0: the latest signed size).
type InclusionRequest struct {
	Entry string  `json:"entry,omitempty"`
	Index *uint64 `json:"index,omitempty"`
	Size  uint64  `json:"size,omitempty"`
}

// InclusionProof is the reply of audit.proof.inclusion. Check it with
// auditor.VerifyInclusion against the entry's own entry_hash and a signed
// root, not against LeafHash and Root alone.
type InclusionProof struct {
	Entry    string   `json:"entry"`
	Index    uint64   `json:"index"`
	Size     uint64   `json:"size"`
	LeafHash string   `json:"leaf_hash"`
	Proof    []string `json:"proof"`
	Root     string   `json:"root"`
}

// ConsistencyRequest asks audit.proof.consistency for the proof that the
// tree of size From is a prefix of the tree of size To (0: the latest
// signed size).
type ConsistencyRequest struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to,omitempty"`
}

// ConsistencyProof is the reply of audit.proof.consistency.
type ConsistencyProof struct {
	From     uint64   `json:"from"`
	To       uint64   `json:"to"`
	Proof    []string `json:"proof"`
	FromRoot string   `json:"from_root"`
	ToRoot   string   `json:"to_root"`
}

// ErrorBody is the JSON body of an error reply (wire-v1 §3).
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error reply's code, message and details.
type ErrorDetail struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// DaemonFile is the content of wacpd.json, written by a running daemon in
// its data dir once it accepts requests.
type DaemonFile struct {
	URL           string `json:"url"`
	PID           int    `json:"pid"`
	RootWorkspace string `json:"root_workspace"`
	Version       string `json:"version"`
	HTTPURL       string `json:"http_url,omitempty"` // the -http listener's base URL, when there is one
	// On a deployment of several daemons (docs/scale-out.md §2): the
	// daemon's id and the partitions it serves.
	DaemonID   string `json:"daemon_id,omitempty"`
	Partitions []int  `json:"partitions,omitempty"`
}

// CheckpointListRequest is the body of checkpoint.list: workspace (the
// caller's when empty), after a checkpoint, at most Limit (1000).
type CheckpointListRequest struct {
	Workspace string `json:"workspace,omitempty"`
	After     string `json:"after,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// CheckpointPage is the reply of checkpoint.list; Next, when set, is the
// After of the next page.
type CheckpointPage struct {
	Checkpoints []checkpointchain.Checkpoint `json:"checkpoints"`
	Next        *string                      `json:"next"`
}

// HeadRequest is the body of checkpoint.head: the chain head of Workspace
// (the caller's when empty), or with Final its latest final checkpoint.
type HeadRequest struct {
	Workspace string `json:"workspace,omitempty"`
	Final     bool   `json:"final,omitempty"`
}

// AgentTrailRequest is the body of trail (an agent's view of the trail).
type AgentTrailRequest struct {
	After     string          `json:"after,omitempty"`
	Limit     int             `json:"limit,omitempty"`
	EventType trail.EventType `json:"event_type,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
}

// VerifyRequest is the body of audit.trail.verify: one workspace's chain,
// or everything when Workspace is empty.
type VerifyRequest struct {
	Workspace string `json:"workspace,omitempty"`
}

// TokenCreateRequest is the body of token.create: a user or an auditor.
type TokenCreateRequest struct {
	Kind principal.Kind `json:"kind"`
	Name string         `json:"name"`
	// Capabilities are granted to a user (User spec §6.2); not for an
	// auditor.
	Capabilities []user.Capability `json:"capabilities,omitempty"`
}

// TokenRevokeRequest is the body of token.revoke.
type TokenRevokeRequest struct {
	Kind   principal.Kind `json:"kind"`
	Name   string         `json:"name"`
	Reason string         `json:"reason,omitempty"`
}

// TokenCreated is the reply of token.create.
type TokenCreated struct {
	Token     string              `json:"token"`
	Principal principal.Principal `json:"principal"`
}

// TokenRevoked is the reply of token.revoke: how many tokens went.
type TokenRevoked struct {
	Principal principal.Principal `json:"principal"`
	Revoked   int                 `json:"revoked"`
}

// TaskGetRequest is the body of task.get; transitive asks for the task's
// transitive dependencies in both directions.
type TaskGetRequest struct {
	ID         string `json:"id"`
	Transitive bool   `json:"transitive,omitempty"`
}

// TaskOpRequest names the task of task.cancel and task.retry; cancel
// records reason with the bound workspace's abort.
type TaskOpRequest struct {
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// TaskBindRequest is the body of task.bind: bind task ID to the idle
// workspace Workspace.
type TaskBindRequest struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
}

// TaskListRequest is the body of task.list; zero fields do not filter.
type TaskListRequest struct {
	Graph  string      `json:"graph,omitempty"`
	Status task.Status `json:"status,omitempty"`
	Ready  *bool       `json:"ready,omitempty"`
}

// TaskPage is task.list's reply: the tasks, in graph order within a
// graph and graphs in creation order.
type TaskPage struct {
	Tasks []task.Task `json:"tasks"`
}

// TaskInfo is task.get's reply: the task and, when asked, every task it
// depends on (Requires) and every task depending on it (RequiredBy),
// directly or through others, in graph order.
type TaskInfo struct {
	Task       task.Task `json:"task"`
	Requires   []string  `json:"requires,omitempty"`
	RequiredBy []string  `json:"required_by,omitempty"`
}

// TasksCreated is task.create's reply: the graph as it is after the
// request and the new tasks, in request order.
type TasksCreated struct {
	Graph task.Graph  `json:"graph"`
	Tasks []task.Task `json:"tasks"`
}

// GraphRequest is the body of graph.get.
type GraphRequest struct {
	ID string `json:"id"`
}

// GraphInfo is graph.get's reply: the graph and its tasks in graph order.
type GraphInfo struct {
	Graph task.Graph  `json:"graph"`
	Tasks []task.Task `json:"tasks"`
}

// HighwayQueueRequest is the body of highway.queue: the pending gates in
// the order a person is shown them, or with all every gate, resolved ones
// included, by trigger time.
type HighwayQueueRequest struct {
	All bool `json:"all,omitempty"`
}

// HighwayQueue is highway.queue's reply.
type HighwayQueue struct {
	Gates []highway.Gate `json:"gates"`
}

// UserStateRequest is the body of user.state: one of the ten user
// transitions (User spec §3.4), for the coordinator.
type UserStateRequest struct {
	User      string     `json:"user"`
	State     user.State `json:"state"`
	Reason    string     `json:"reason,omitempty"`
	Condition string     `json:"condition,omitempty"` // blocked: the blocking condition; unblock: the one resolved
}

// UserCapabilitiesRequest is the body of user.capabilities.
type UserCapabilitiesRequest struct {
	User   string            `json:"user"`
	Grant  []user.Capability `json:"grant,omitempty"`
	Revoke []user.Capability `json:"revoke,omitempty"`
	Reason string            `json:"reason,omitempty"` // recorded with the revocations
}

// BudgetRequest is the body of workspace.budget and
// highway.workspace.budget: the limits of workspace ID's budget to raise
// (WACP Workspace §6, budget modification). Limits it leaves out stay.
type BudgetRequest struct {
	ID     string            `json:"id"`
	Budget *workspace.Budget `json:"budget"`
}

// TransferRequest is the body of workspace.transfer.
type TransferRequest struct {
	ID     string `json:"id"`
	Owner  string `json:"owner"`
	Reason string `json:"reason,omitempty"`
}

// EscalationsRequest is the body of highway.escalations: the pending
// escalations (queued ones included), or with all every one.
type EscalationsRequest struct {
	All bool `json:"all,omitempty"`
}

// Escalations is highway.escalations' reply, by time.
type Escalations struct {
	Escalations []highway.EscalationRecord `json:"escalations"`
}

// EscalationRespondRequest is the body of highway.escalation.respond.
type EscalationRespondRequest struct {
	EscalationID string            `json:"escalation_id"`
	Response     highway.Response  `json:"response"` // envelope, abort or delegation
	Envelope     *EscalationAnswer `json:"envelope,omitempty"`
}

// EscalationAnswer is the envelope of an envelope response: its type
// (default feedback) and payload.
type EscalationAnswer struct {
	Type    string           `json:"type,omitempty"`
	Payload envelope.Payload `json:"payload"`
}

// HighwayGetRequest is the body of highway.get.
type HighwayGetRequest struct {
	ID string `json:"id"`
}

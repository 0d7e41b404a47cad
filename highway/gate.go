package highway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/clock"

	"github.com/wacpd/wacpd/trail"
)

// GateType is one of the six gate types (Human Highway §2.2). The set is
// closed. Persisted as its string value.
type GateType string

// The six gate types.
const (
	TaskApproval       GateType = "task_approval"
	WorkspaceCreate    GateType = "workspace_create"
	EnvelopeDelivery   GateType = "envelope_delivery"
	Integration        GateType = "integration"
	ConflictResolution GateType = "conflict_resolution"
	WorkspaceAbort     GateType = "workspace_abort"
)

// GateTypes returns the six gate types in spec order.
func GateTypes() []GateType {
	return []GateType{TaskApproval, WorkspaceCreate, EnvelopeDelivery, Integration, ConflictResolution, WorkspaceAbort}
}

// Valid reports whether t is one of the six gate types.
func (t GateType) Valid() bool { return slices.Contains(GateTypes(), t) }

// Mutable returns the fields of a gate's subject a person may change with
// modify (Human Highway §3, §4): task_approval name, description,
// priority, resource_estimate; workspace_create budget, priority,
// visibility; envelope_delivery payload; conflict_resolution the strategy
// proposed; workspace_abort the reason. An integration is approved or
// rejected as it stands (none).
func (t GateType) Mutable() []string {
	switch t {
	case TaskApproval:
		return []string{"name", "description", "priority", "resource_estimate"}
	case WorkspaceCreate:
		return []string{"budget", "priority", "visibility"}
	case EnvelopeDelivery:
		return []string{"payload"}
	case ConflictResolution:
		return []string{"strategy"}
	case WorkspaceAbort:
		return []string{"reason"}
	}
	return nil
}

// Fallback is what a gate's timeout does (Human Highway §3). Persisted as
// its string value.
type Fallback string

// The three fallbacks.
const (
	FallbackApprove     Fallback = "approve"
	FallbackReject      Fallback = "reject"
	FallbackCoordinator Fallback = "escalate_to_coordinator"
)

// Valid reports whether f is one of the three fallbacks.
func (f Fallback) Valid() bool {
	return f == FallbackApprove || f == FallbackReject || f == FallbackCoordinator
}

// Action is a resolution's action. Persisted as its string value.
type Action string

// The resolution actions: the three a person takes, and the one a
// fallback to the coordinator records (package doc, Caveats).
const (
	Approve               Action = "approve"
	Reject                Action = "reject"
	Modify                Action = "modify"
	EscalateToCoordinator Action = "escalate_to_coordinator"
	// Deny is a request's action, never a resolution's: a client with no
	// operator present (a script, wacp highway --no-tui) denies the gate,
	// which is resolved as reject by the protocol (ReasonNoOperator),
	// with the user who asked as requested_by.
	Deny Action = "deny"
)

// The actors of a resolution that are not a user (Human Highway §3).
const (
	ActorFallback = "fallback"
	ActorProtocol = trail.ActorProtocol
)

// The reasons of a protocol resolution: the subject became invalid
// (§6.5), or no operator was present to decide (Deny).
const (
	ReasonSubjectInvalidated = "subject_invalidated"
	ReasonNoOperator         = "no_operator_present"
)

// Subject is what a gate holds up: the object a person decides on, its id,
// and its context.
type Subject struct {
	ID        string          // the subject's id: a task, a workspace, an envelope, ...
	Body      json.RawMessage // the whole object, as the person sees it (a JSON object)
	Workspace string          // the workspace involved; "" for a task not yet bound
	TaskRef   string
	GraphRef  string
	// Irreversible marks a subject whose approval cannot be undone (an
	// abort, a merge): an operator's interface asks twice.
	Irreversible bool
}

// Gate is a gate record: the spec's gate event (§3), with the subject's
// id and digest, its deadline, and, once resolved, its resolution.
type Gate struct {
	ID            string          `json:"id"`
	Type          GateType        `json:"type"`
	Subject       json.RawMessage `json:"subject"`
	SubjectID     string          `json:"subject_id"`
	SubjectDigest string          `json:"subject_digest"` // sha256 of the subject's canonical JSON (RFC 8785)
	Workspace     *string         `json:"workspace"`
	TaskRef       *string         `json:"task_ref"`
	GraphRef      *string         `json:"graph_ref"`
	Timestamp     string          `json:"timestamp"`
	Timeout       *string         `json:"timeout"`  // a Go duration; null waits indefinitely
	Fallback      *Fallback       `json:"fallback"` // null when there is no timeout
	Deadline      *string         `json:"deadline"` // Timestamp + Timeout; null without a timeout
	QueuePosition int             `json:"queue_position"`
	Irreversible  bool            `json:"irreversible"`
	Resolution    *Resolution     `json:"resolution"` // null while pending
}

// Pending reports whether g has no resolution yet.
func (g Gate) Pending() bool { return g.Resolution == nil }

// Resolution is how a gate ended (§3, gate_resolution).
type Resolution struct {
	Action        Action          `json:"action"`
	Modifications json.RawMessage `json:"modifications,omitempty"`
	Actor         string          `json:"actor"` // a user id, "fallback" or "protocol"
	Timestamp     string          `json:"timestamp"`
	Reason        string          `json:"reason,omitempty"`
	RequestedBy   string          `json:"requested_by,omitempty"` // the user who denied a gate with no operator present (Deny)
	Outcome       string          `json:"outcome,omitempty"`      // a checkpoint's outcome, as the person chose it (ResolveRequest.Outcome)
}

// Event is a trail entry a step writes.
type Event struct {
	Type trail.EventType
	Body map[string]any
}

// Open returns a new pending gate of type typ for subject s, with the
// timeout and fallback cfg gives the type, and its gate_triggered event.
// at is the trigger time (its formatted form ts); ahead is the number of
// gates pending before it (its queue_position). The caller checks that
// cfg gates typ at all (Config.Gated) and the re-entry guard.
func Open(cfg Config, typ GateType, s Subject, id string, at time.Time, ts string, ahead int) (Gate, Event, error) {
	if !typ.Valid() {
		return Gate{}, Event{}, fmt.Errorf("highway: gate type %q is not one of the six", typ)
	}
	if s.ID == "" {
		return Gate{}, Event{}, fmt.Errorf("highway: a gate's subject needs an id")
	}
	subject, digest, err := canonicalSubject(s.Body)
	if err != nil {
		return Gate{}, Event{}, err
	}
	p := cfg.Policy(typ)
	g := Gate{
		ID: id, Type: typ, Subject: subject, SubjectID: s.ID, SubjectDigest: digest,
		Workspace: opt(s.Workspace), TaskRef: opt(s.TaskRef), GraphRef: opt(s.GraphRef),
		Timestamp: ts, QueuePosition: ahead, Irreversible: s.Irreversible,
	}
	if p.Timeout != nil {
		d, f := p.Timeout.String(), p.Fallback
		deadline := clock.Format(at.Add(*p.Timeout))
		g.Timeout, g.Fallback, g.Deadline = &d, &f, &deadline
	}
	return g, Event{trail.EventGateTriggered, map[string]any{
		"gate_id": g.ID, "gate_type": string(typ), "subject": g.SubjectID, "subject_digest": g.SubjectDigest,
		"workspace": deref(g.Workspace), "task_ref": deref(g.TaskRef), "graph_ref": deref(g.GraphRef),
		"timeout": deref(g.Timeout), "fallback": derefF(g.Fallback), "queue_position": ahead,
	}}, nil
}

// canonicalSubject returns body in its canonical form (RFC 8785) and the
// digest of that form; body must be a JSON object.
func canonicalSubject(body json.RawMessage) (json.RawMessage, string, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil || v == nil {
		return nil, "", fmt.Errorf("highway: a gate's subject must be a JSON object")
	}
	c, err := jcs.Transform(body)
	if err != nil {
		return nil, "", fmt.Errorf("highway: subject: %w", err)
	}
	sum := sha256.Sum256(c)
	return c, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// DeadlineTime returns g's deadline, and false when it waits indefinitely
// (or its deadline does not parse).
func (g Gate) DeadlineTime() (time.Time, bool) {
	if g.Deadline == nil {
		return time.Time{}, false
	}
	t, err := clock.Parse(*g.Deadline)
	return t, err == nil
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func derefF(f *Fallback) any {
	if f == nil {
		return nil
	}
	return string(*f)
}

// Queue returns the pending gates of gates in the order a person is shown
// them: FIFO by trigger time (the clock's fixed-width UTC timestamps sort
// as strings), then by id.
func Queue(gates []Gate) []Gate {
	var out []Gate
	for _, g := range gates {
		if g.Pending() {
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b Gate) int {
		if c := strings.Compare(a.Timestamp, b.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// NextDeadline returns the earliest deadline of the pending gates, and
// false when none of them has one.
func NextDeadline(gates []Gate) (time.Time, bool) {
	var next time.Time
	found := false
	for _, g := range gates {
		if d, ok := g.DeadlineTime(); ok && g.Pending() && (!found || d.Before(next)) {
			next, found = d, true
		}
	}
	return next, found
}

package trail

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wacpd/wacpd/internal/canon"
)

// The closed WACP v0.1 trail event registry (Trail spec §9).
//
// The registry is kept as one table of data, eventRegistry, from which every
// lookup is derived and against which docs/events.md is tested. Each row lists
// the body fields the defining spec names for the event, in the spec's order,
// and the subset of those fields whose value may be JSON null. The choices
// behind that subset, and the events whose fields the spec does not tabulate,
// are recorded under "Judgement calls" in docs/events.md.

var (
	// ErrUnknownEvent is returned for an event type outside the closed registry.
	ErrUnknownEvent = errors.New("trail: unknown event type")
	// ErrBodyInvalid is returned when an entry body lacks a field its event type requires.
	ErrBodyInvalid = errors.New("trail: invalid event body")
)

// EventType is a trail event type from the closed WACP v0.1 registry.
type EventType string

// Workspace events (Workspace spec §13).
const (
	EventWorkspaceCreated              EventType = "workspace_created"
	EventWorkspaceStateChanged         EventType = "workspace_state_changed"
	EventWorkspaceRejected             EventType = "workspace_rejected"
	EventBudgetWarning                 EventType = "budget_warning"
	EventBudgetExceeded                EventType = "budget_exceeded"
	EventBudgetModified                EventType = "budget_modified"
	EventLivenessWarning               EventType = "liveness_warning"
	EventPriorityChanged               EventType = "priority_changed"
	EventVisibilityGranted             EventType = "visibility_granted"
	EventBatchAbort                    EventType = "batch_abort"
	EventBatchPriorityChanged          EventType = "batch_priority_changed"
	EventMigrationStarted              EventType = "migration_started"
	EventMigrationCompleted            EventType = "migration_completed"
	EventMigrationFailed               EventType = "migration_failed"
	EventSuspensionStarted             EventType = "suspension_started"
	EventSuspensionResumed             EventType = "suspension_resumed"
	EventGracefulTerminationInitiated  EventType = "graceful_termination_initiated"
	EventGracefulTerminationExpired    EventType = "graceful_termination_expired"
	EventConflictDetected              EventType = "conflict_detected"
	EventConflictResolved              EventType = "conflict_resolved"
	EventWorkspaceOwnershipTransferred EventType = "workspace_ownership_transferred"
	EventWorkspaceReparented           EventType = "workspace_reparented"
)

// User events (User spec §8; authentication_failed per Security spec §9).
const (
	EventUserCreated             EventType = "user_created"
	EventAuthenticationSucceeded EventType = "authentication_succeeded"
	EventAuthenticationFailed    EventType = "authentication_failed"
	EventUserSuspended           EventType = "user_suspended"
	EventUserResumed             EventType = "user_resumed"
	EventUserBlocked             EventType = "user_blocked"
	EventUserUnblocked           EventType = "user_unblocked"
	EventUserDeactivated         EventType = "user_deactivated"
	EventUserReactivated         EventType = "user_reactivated"
	EventCapabilityGranted       EventType = "capability_granted"
	EventCapabilityRevoked       EventType = "capability_revoked"
	EventCapabilityDenied        EventType = "capability_denied"
)

// Signal events (Signal spec §8).
const (
	EventSignalEmitted   EventType = "signal_emitted"
	EventSignalDelivered EventType = "signal_delivered"
)

// Envelope and port right events (Envelope spec §10).
const (
	EventEnvelopeCreated       EventType = "envelope_created"
	EventEnvelopeDelivered     EventType = "envelope_delivered"
	EventEnvelopeRejected      EventType = "envelope_rejected"
	EventEnvelopeUndeliverable EventType = "envelope_undeliverable"
	EventEnvelopeRedelivered   EventType = "envelope_redelivered"
	EventPortRightCreated      EventType = "port_right_created"
	EventPortRightTransferred  EventType = "port_right_transferred"
	EventPortRightRevoked      EventType = "port_right_revoked"
	EventPortRightConsumed     EventType = "port_right_consumed"
)

// Checkpoint events (Checkpoint spec §7).
const (
	EventCheckpointCreated   EventType = "checkpoint_created"
	EventCheckpointRejected  EventType = "checkpoint_rejected"
	EventResourceDiscrepancy EventType = "resource_discrepancy"
)

// Task events (Task spec §8).
const (
	EventTaskCreated       EventType = "task_created"
	EventTaskApproved      EventType = "task_approved"
	EventTaskAssigned      EventType = "task_assigned"
	EventTaskStatusChanged EventType = "task_status_changed"
	EventTaskCompleted     EventType = "task_completed"
	EventTaskFailed        EventType = "task_failed"
	EventGraphCreated      EventType = "graph_created"
)

// Integration events (Integration spec §8).
const (
	EventIntegrationStarted   EventType = "integration_started"
	EventIntegrationCompleted EventType = "integration_completed"
	EventIntegrationAborted   EventType = "integration_aborted"
)

// Human Highway events (Human Highway spec §8).
const (
	EventGateTriggered      EventType = "gate_triggered"
	EventGateResolved       EventType = "gate_resolved"
	EventGateTimeout        EventType = "gate_timeout"
	EventGateReentryBlocked EventType = "gate_reentry_blocked"
	EventHumanInjection     EventType = "human_injection"
	EventEscalationReceived EventType = "escalation_received"
	EventEscalationResolved EventType = "escalation_resolved"
	EventEscalationTimeout  EventType = "escalation_timeout"
)

// Recovery events (Recovery spec §4).
const (
	EventSystemDegraded    EventType = "system_degraded"
	EventRecoveryCompleted EventType = "recovery_completed"
)

// Security events (Security spec §9).
const (
	EventIntegrityViolation EventType = "integrity_violation"
)

// Trail-own events (Trail spec §3, §8).
const (
	EventTrailCompacted       EventType = "trail_compacted"
	EventTrailAccessDenied    EventType = "trail_access_denied"
	EventTrailSnapshotCreated EventType = "trail_snapshot_created"
)

// Registry categories, as returned by EventType.Category.
const (
	categoryWorkspace   = "workspace"
	categoryUser        = "user"
	categorySignal      = "signal"
	categoryEnvelope    = "envelope"
	categoryCheckpoint  = "checkpoint"
	categoryTask        = "task"
	categoryIntegration = "integration"
	categoryHighway     = "highway"
	categoryRecovery    = "recovery"
	categorySecurity    = "security"
	categoryTrail       = "trail"
)

// eventSpec is one row of the registry.
type eventSpec struct {
	Type     EventType
	Category string
	// Fields are the body fields the defining spec names, in spec order.
	Fields []string
	// Nullable is the subset of Fields whose value may be JSON null.
	Nullable []string
	// Source is the spec section that defines the body.
	Source string
}

// eventRegistry is the registry in Trail spec §9 order. It is the single
// source of truth: lookups and docs/events.md derive from it.
var eventRegistry = []eventSpec{
	// Workspace spec §13 (22).
	{EventWorkspaceCreated, categoryWorkspace,
		[]string{"workspace_id", "role", "parent", "delegate", "originator", "owner", "visibility_set", "authority_set", "timeout", "budget", "priority", "group"},
		[]string{"parent", "timeout", "budget", "group"}, "Workspace §13"},
	{EventWorkspaceStateChanged, categoryWorkspace,
		[]string{"workspace_id", "from_state", "to_state", "trigger", "initiator"},
		nil, "Workspace §13"},
	{EventWorkspaceRejected, categoryWorkspace,
		[]string{"reason", "capacity_details"},
		[]string{"capacity_details"}, "Workspace §13"},
	{EventBudgetWarning, categoryWorkspace,
		[]string{"workspace_id", "budget_dimension", "consumed", "limit", "threshold_percent"},
		nil, "Workspace §13"},
	{EventBudgetExceeded, categoryWorkspace,
		[]string{"workspace_id", "budget_dimension", "consumed", "limit"},
		nil, "Workspace §13"},
	{EventBudgetModified, categoryWorkspace,
		[]string{"workspace_id", "budget_dimension", "old_limit", "new_limit"},
		nil, "Workspace §13"},
	{EventLivenessWarning, categoryWorkspace,
		[]string{"workspace_id", "interval", "last_activity_timestamp"},
		nil, "Workspace §13"},
	{EventPriorityChanged, categoryWorkspace,
		[]string{"workspace_id", "old_priority", "new_priority"},
		nil, "Workspace §13"},
	{EventVisibilityGranted, categoryWorkspace,
		[]string{"workspace_id", "target", "reason"},
		nil, "Workspace §13"},
	{EventBatchAbort, categoryWorkspace,
		[]string{"group_id", "affected_workspaces", "skipped_workspaces"},
		nil, "Workspace §13"},
	{EventBatchPriorityChanged, categoryWorkspace,
		[]string{"group_id", "old_priority", "new_priority", "affected_workspaces", "skipped_workspaces"},
		nil, "Workspace §13"},
	{EventMigrationStarted, categoryWorkspace,
		[]string{"workspace_id", "old_agent", "new_agent", "reason"},
		nil, "Workspace §13"},
	{EventMigrationCompleted, categoryWorkspace,
		[]string{"workspace_id", "old_agent", "new_agent", "duration"},
		nil, "Workspace §13"},
	{EventMigrationFailed, categoryWorkspace,
		[]string{"workspace_id", "old_agent", "new_agent", "reason", "error"},
		nil, "Workspace §13"},
	{EventSuspensionStarted, categoryWorkspace,
		[]string{"workspace_id", "pre_suspension_state", "reason"},
		nil, "Workspace §13"},
	{EventSuspensionResumed, categoryWorkspace,
		[]string{"workspace_id", "resumed_to_state", "duration"},
		nil, "Workspace §13"},
	{EventGracefulTerminationInitiated, categoryWorkspace,
		[]string{"workspace_id", "grace_period", "reason"},
		nil, "Workspace §13"},
	{EventGracefulTerminationExpired, categoryWorkspace,
		[]string{"workspace_id", "grace_period", "partial_checkpoint"},
		[]string{"partial_checkpoint"}, "Workspace §13"},
	{EventConflictDetected, categoryWorkspace,
		[]string{"workspace_id", "conflict_type", "resources", "description"},
		nil, "Workspace §13"},
	{EventConflictResolved, categoryWorkspace,
		[]string{"workspace_id", "conflict_type", "resolution_strategy", "resolution", "outcome"},
		nil, "Workspace §13"},
	{EventWorkspaceOwnershipTransferred, categoryWorkspace,
		[]string{"workspace_id", "from_user", "to_user", "reason", "transferred_by"},
		[]string{"reason"}, "Workspace §13"},
	{EventWorkspaceReparented, categoryWorkspace,
		[]string{"workspace_id", "old_parent", "new_parent", "reason"},
		nil, "Workspace §13"},

	// User spec §8 (12).
	{EventUserCreated, categoryUser,
		[]string{"user_id", "created_by", "timestamp"},
		nil, "User §8"},
	{EventAuthenticationSucceeded, categoryUser,
		[]string{"user_id", "method", "timestamp"},
		nil, "User §8"},
	{EventAuthenticationFailed, categoryUser,
		[]string{"entity", "context", "reason", "source"},
		[]string{"entity"}, "Security §9 (listed in User §8)"},
	{EventUserSuspended, categoryUser,
		[]string{"user_id", "reason", "suspended_by", "timestamp"},
		nil, "User §8"},
	{EventUserResumed, categoryUser,
		[]string{"user_id", "reason", "resumed_by", "timestamp"},
		nil, "User §8"},
	{EventUserBlocked, categoryUser,
		[]string{"user_id", "blocking_condition", "blocked_by", "timestamp"},
		nil, "User §8"},
	{EventUserUnblocked, categoryUser,
		[]string{"user_id", "resolved_condition", "timestamp"},
		nil, "User §8"},
	{EventUserDeactivated, categoryUser,
		[]string{"user_id", "reason", "deactivated_by", "prior_state", "timestamp"},
		nil, "User §8"},
	{EventUserReactivated, categoryUser,
		[]string{"user_id", "reason", "reactivated_by", "timestamp"},
		nil, "User §8"},
	{EventCapabilityGranted, categoryUser,
		[]string{"user_id", "capability", "granted_by", "timestamp"},
		nil, "User §8"},
	{EventCapabilityRevoked, categoryUser,
		[]string{"user_id", "capability", "revoked_by", "reason", "timestamp"},
		[]string{"reason"}, "User §8"},
	{EventCapabilityDenied, categoryUser,
		[]string{"user_id", "capability", "action", "target", "reason", "timestamp"},
		[]string{"target"}, "User §8"},

	// Signal spec §8 (2).
	{EventSignalEmitted, categorySignal,
		[]string{"signal_id", "from", "type", "reason", "ref", "timestamp"},
		[]string{"reason", "ref"}, "Signal §8"},
	{EventSignalDelivered, categorySignal,
		[]string{"signal_id", "from", "delivered_to", "delivered_at"},
		nil, "Signal §8"},

	// Envelope spec §10 (9).
	{EventEnvelopeCreated, categoryEnvelope,
		[]string{"envelope_id", "from", "to", "type", "priority", "in_reply_to", "originator", "timestamp"},
		[]string{"in_reply_to"}, "Envelope §10"},
	{EventEnvelopeDelivered, categoryEnvelope,
		[]string{"envelope_id", "from", "to", "delivered_at"},
		nil, "Envelope §10"},
	{EventEnvelopeRejected, categoryEnvelope,
		[]string{"envelope_id", "from", "to", "type", "reason", "timestamp"},
		[]string{"to", "type"}, "Envelope §10"},
	{EventEnvelopeUndeliverable, categoryEnvelope,
		[]string{"envelope_id", "from", "to", "reason", "timestamp"},
		nil, "Envelope §10"},
	{EventEnvelopeRedelivered, categoryEnvelope,
		[]string{"envelope_id", "from", "to", "timestamp"},
		nil, "Envelope §10"},
	{EventPortRightCreated, categoryEnvelope,
		[]string{"right_id", "right_type", "holder", "target", "created_by"},
		nil, "Envelope §10"},
	{EventPortRightTransferred, categoryEnvelope,
		[]string{"right_id", "right_type", "from_holder", "to_holder", "target", "via_envelope"},
		nil, "Envelope §10"},
	{EventPortRightRevoked, categoryEnvelope,
		[]string{"right_id", "right_type", "holder", "target", "revoked_by", "reason"},
		nil, "Envelope §10"},
	{EventPortRightConsumed, categoryEnvelope,
		[]string{"right_id", "holder", "target", "via_envelope"},
		nil, "Envelope §10"},

	// Checkpoint spec §7 (3).
	{EventCheckpointCreated, categoryCheckpoint,
		[]string{"checkpoint_id", "workspace", "type", "status", "confidence", "parent", "timestamp"},
		[]string{"parent"}, "Checkpoint §7"},
	{EventCheckpointRejected, categoryCheckpoint,
		[]string{"workspace", "type", "reason", "timestamp"},
		[]string{"type"}, "Checkpoint §7"},
	{EventResourceDiscrepancy, categoryCheckpoint,
		[]string{"checkpoint_id", "workspace", "field", "agent_value", "runtime_value", "timestamp"},
		nil, "Checkpoint §7"},

	// Task spec §8 (7).
	{EventTaskCreated, categoryTask,
		[]string{"task_id", "graph_id", "parent_task", "name", "depends_on", "priority"},
		[]string{"parent_task"}, "Task §8"},
	{EventTaskApproved, categoryTask,
		[]string{"task_id", "approval_source"},
		nil, "Task §8"},
	{EventTaskAssigned, categoryTask,
		[]string{"task_id", "workspace_id", "attempt_number"},
		nil, "Task §8"},
	{EventTaskStatusChanged, categoryTask,
		[]string{"task_id", "from_status", "to_status", "workspace_id"},
		[]string{"workspace_id"}, "Task §8"},
	{EventTaskCompleted, categoryTask,
		[]string{"task_id", "workspace_id", "checkpoint_id"},
		nil, "Task §8"},
	{EventTaskFailed, categoryTask,
		[]string{"task_id", "workspace_id", "attempt_number", "failure_reason"},
		nil, "Task §8"},
	{EventGraphCreated, categoryTask,
		[]string{"graph_id", "root_task_id", "task_count"},
		nil, "Task §8"},

	// Integration spec §8 (3).
	{EventIntegrationStarted, categoryIntegration,
		[]string{"source", "target", "owner", "mode", "strategy", "checkpoint_ref", "timestamp"},
		nil, "Integration §8"},
	{EventIntegrationCompleted, categoryIntegration,
		[]string{"source", "target", "mode", "strategy", "result", "timestamp"},
		nil, "Integration §8"},
	{EventIntegrationAborted, categoryIntegration,
		[]string{"source", "target", "mode", "reason", "timestamp"},
		nil, "Integration §8"},

	// Human Highway spec §8 (8).
	{EventGateTriggered, categoryHighway,
		[]string{"gate_id", "gate_type", "subject", "workspace", "task_ref", "graph_ref", "timeout", "fallback", "queue_position"},
		[]string{"workspace", "task_ref", "graph_ref", "timeout", "fallback"}, "Human Highway §8"},
	{EventGateResolved, categoryHighway,
		[]string{"gate_id", "gate_type", "action", "modifications", "actor"},
		[]string{"modifications"}, "Human Highway §8"},
	{EventGateTimeout, categoryHighway,
		[]string{"gate_id", "gate_type", "fallback_action", "elapsed"},
		nil, "Human Highway §8"},
	{EventGateReentryBlocked, categoryHighway,
		[]string{"gate_id", "gate_type", "subject_id", "converted_to"},
		nil, "Human Highway §8"},
	{EventHumanInjection, categoryHighway,
		[]string{"envelope_id", "actor", "to", "type", "status"},
		nil, "Human Highway §8"},
	{EventEscalationReceived, categoryHighway,
		[]string{"signal_id", "workspace", "reason"},
		nil, "Human Highway §8"},
	{EventEscalationResolved, categoryHighway,
		[]string{"signal_id", "workspace", "actor", "response_type", "response_ref"},
		[]string{"response_ref"}, "Human Highway §8"},
	{EventEscalationTimeout, categoryHighway,
		[]string{"signal_id", "workspace", "fallback_action", "elapsed"},
		nil, "Human Highway §8"},

	// Recovery spec §4 (2).
	{EventSystemDegraded, categoryRecovery,
		[]string{"reason", "scope", "affected_workspaces", "coordinator_action"},
		nil, "Recovery §4"},
	{EventRecoveryCompleted, categoryRecovery,
		[]string{"downtime", "workspaces_recovered", "workspaces_failed", "envelopes_redelivered", "signals_requeued", "timers_reconstructed", "trail_entries_examined", "quarantined_entries"},
		nil, "Recovery §4"},

	// Security spec §9 (1).
	{EventIntegrityViolation, categorySecurity,
		[]string{"subject_type", "subject_id", "violation", "expected", "actual", "action_taken"},
		nil, "Security §9"},

	// Trail-own (3).
	{EventTrailCompacted, categoryTrail,
		[]string{"workspace", "entries_archived", "entries_preserved", "archive_range", "archive_hash"},
		nil, "Trail §8"},
	{EventTrailAccessDenied, categoryTrail,
		[]string{"requester", "role", "target", "reason"},
		nil, "Trail §3 (no field table)"},
	{EventTrailSnapshotCreated, categoryTrail,
		[]string{"snapshot_id", "boundary_timestamp", "entry_count", "boundary_hash"},
		nil, "Trail §8 (no field table)"},
}

// eventInfo is the derived per-type lookup record.
type eventInfo struct {
	spec     *eventSpec
	nullable map[string]bool
}

// eventIndex maps each registered type to its row; built from eventRegistry.
var eventIndex = buildEventIndex(eventRegistry)

// eventTypeList is the registry order, built from eventRegistry.
var eventTypeList = buildEventTypeList(eventRegistry)

func buildEventIndex(specs []eventSpec) map[EventType]eventInfo {
	idx := make(map[EventType]eventInfo, len(specs))
	for i := range specs {
		s := &specs[i]
		if _, dup := idx[s.Type]; dup {
			panic("trail: duplicate event type in registry: " + string(s.Type))
		}
		fields := make(map[string]bool, len(s.Fields))
		for _, f := range s.Fields {
			fields[f] = true
		}
		nullable := make(map[string]bool, len(s.Nullable))
		for _, f := range s.Nullable {
			if !fields[f] {
				panic("trail: nullable field " + f + " is not a field of " + string(s.Type))
			}
			nullable[f] = true
		}
		idx[s.Type] = eventInfo{spec: s, nullable: nullable}
	}
	return idx
}

func buildEventTypeList(specs []eventSpec) []EventType {
	out := make([]EventType, len(specs))
	for i, s := range specs {
		out[i] = s.Type
	}
	return out
}

// EventTypes returns the 72 registered event types in registry order (Trail spec §9 order).
// The caller owns the returned slice.
func EventTypes() []EventType {
	return append([]EventType(nil), eventTypeList...)
}

// Valid reports whether e is in the registry. Matching is exact and case-sensitive.
func (e EventType) Valid() bool {
	_, ok := eventIndex[e]
	return ok
}

// Category returns the registry group: "workspace", "user", "signal", "envelope",
// "checkpoint", "task", "integration", "highway", "recovery", "security" or "trail".
// It returns "" for an unknown type.
func (e EventType) Category() string {
	info, ok := eventIndex[e]
	if !ok {
		return ""
	}
	return info.spec.Category
}

// RequiredFields returns the body fields the spec names for e, in spec order.
// It returns nil for an unknown type. The caller owns the returned slice.
func (e EventType) RequiredFields() []string {
	info, ok := eventIndex[e]
	if !ok {
		return nil
	}
	return append([]string(nil), info.spec.Fields...)
}

// NullableFields returns the required fields of e whose value may be JSON null,
// in spec order. It returns nil for an unknown type or when no field is nullable.
// The caller owns the returned slice.
func (e EventType) NullableFields() []string {
	info, ok := eventIndex[e]
	if !ok || len(info.spec.Nullable) == 0 {
		return nil
	}
	return append([]string(nil), info.spec.Nullable...)
}

// ValidateBody checks that body has every required field of e. A field is
// present when body has the key. A nil value (JSON null) counts as present only
// for the fields NullableFields reports; any other null field is invalid.
// Extra fields are allowed: implementations may record more than the spec names.
//
// The first problem found, in spec field order, is reported. The error wraps
// ErrUnknownEvent when e is not registered and ErrBodyInvalid, naming the event
// and the field, when a field is missing or null.
func ValidateBody(e EventType, body map[string]any) error {
	return validateFields(e, func(f string) (bool, bool) {
		v, present := body[f]
		return present, v == nil
	})
}

// validateFields is ValidateBody over a lookup that tells whether field f
// is present and whether it is null.
func validateFields(e EventType, lookup func(f string) (present, null bool)) error {
	info, ok := eventIndex[e]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownEvent, string(e))
	}
	for _, f := range info.spec.Fields {
		present, null := lookup(f)
		if !present {
			return fmt.Errorf("%w: %s: missing field %q", ErrBodyInvalid, e, f)
		}
		if null && !info.nullable[f] {
			return fmt.Errorf("%w: %s: field %q must not be null", ErrBodyInvalid, e, f)
		}
	}
	return nil
}

// EncodeBody returns the canonical form of v, the body of an event of type
// t, after checking it against the registry. A Fields writes itself; a
// map[string]any of plain values is written directly (canon.AppendValue);
// anything else goes through Canonical and is decoded again to check it.
func EncodeBody(t EventType, v any) ([]byte, error) {
	if f, ok := v.(Fields); ok {
		if err := validateFields(t, f.Field); err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
		return f.AppendCanonical(make([]byte, 0, 320)), nil
	}
	if m, ok := v.(map[string]any); ok && m != nil {
		if body, ok := canon.AppendValue(make([]byte, 0, 256), m); ok {
			if err := validateFields(t, func(f string) (bool, bool) {
				fv, present := m[f]
				return present, present && canon.IsNull(fv)
			}); err != nil {
				return nil, fmt.Errorf("append: %w", err)
			}
			return body, nil
		}
	}
	body, err := Canonical(v)
	if err != nil {
		return nil, fmt.Errorf("append %s: encode body: %w", t, err)
	}
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("append %s: %w: body is not a JSON object", t, ErrBodyInvalid)
	}
	if err := ValidateBody(t, fields); err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	return body, nil
}

package carp

import (
	"encoding/json"

	"github.com/wacpd/wacpd/atlas"
)

// ToolPrefix is the subject prefix tool services serve actions on: the
// daemon forwards an execution of action a to ToolPrefix+a (wire-v1 §6,
// wacp.v1.tool.<action_id>) after its checks.
const ToolPrefix = atlas.ToolSubjectPrefix

// ToolSubject returns the subject of action id.
func ToolSubject(actionID string) string { return ToolPrefix + actionID }

// ToolRequest is what the daemon sends a tool service: an execution it has
// checked and recorded (the intent), with the action's parameters exactly
// as the agent sent them. ExecutionID is unique; a tool that must not run
// an action twice keys on it.
type ToolRequest struct {
	CARPVersion  string         `json:"carp_version"`
	ExecutionID  string         `json:"execution_id"`
	RequestID    string         `json:"request_id"`
	ResolutionID string         `json:"resolution_id"`
	ActionID     string         `json:"action_id"`
	ActionType   string         `json:"action_type"`
	Parameters   map[string]any `json:"parameters"`
	AgentID      string         `json:"agent_id"`
	SessionID    string         `json:"session_id"`
	TraceID      string         `json:"trace_id"`
	TimeoutMS    int            `json:"timeout_ms"`
	Sandbox      bool           `json:"sandbox,omitempty"`
}

// ToolReply is a tool service's answer. Status is success,
// partial_success or failed; Output is any JSON value (its SHA-256 is
// recorded, never the output itself); Error says why it failed.
type ToolReply struct {
	Status      string          `json:"status"`
	Output      json.RawMessage `json:"output,omitempty"`
	OutputType  string          `json:"output_type,omitempty"`
	Error       *ExecutionError `json:"error,omitempty"`
	SideEffects []SideEffect    `json:"side_effects,omitempty"`
	TokensUsed  *int            `json:"tokens_used,omitempty"`
	APICalls    *int            `json:"api_calls,omitempty"`
}

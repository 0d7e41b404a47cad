package wire

import (
	"crypto/sha256"
	"encoding/hex"
)

// The error codes of the wire contract (wire-v1 §3): the string sent in
// the Nats-Service-Error header and the error body.
const (
	CodePermissionDenied   = "permission_denied"
	CodeInvalidType        = "invalid_type"
	CodeInvalidStructure   = "invalid_structure"
	CodeInvalidParent      = "invalid_parent"
	CodeWorkspaceNotActive = "workspace_not_active"
	CodeNoSendRight        = "no_send_right"
	CodeTargetNotFound     = "target_not_found"
	CodeTargetTerminal     = "target_terminal"
	CodeInvalidTransition  = "invalid_transition"
	CodeNoFinalCheckpoint  = "no_final_checkpoint"
	CodeNotFound           = "not_found"
	CodeUnauthorized       = "unauthorized"
	CodeTooLarge           = "too_large"
	CodeUnavailable        = "unavailable"
	CodeInternal           = "internal"
	// CodeCapabilityDenied refuses a user's action the user's state or
	// capabilities do not allow (User spec §6.4); the trail records
	// capability_denied with the reason.
	CodeCapabilityDenied = "capability_denied"
	// CodeGatePending answers an operation the run's highway gates: it
	// waits at the gate its details name (gate_id, gate_type) for a
	// person, its fallback or the protocol, and happens, or not, when the
	// gate is resolved (Human Highway §2.2).
	CodeGatePending = "gate_pending"
	// CodeCapacityExhausted refuses a workspace creation the runtime has
	// no capacity for (WACP Workspace §10, admission control): nothing was
	// created, workspace_rejected records it; details has reason and
	// capacity_details. Retry later.
	CodeCapacityExhausted = "capacity_exhausted"
)

// Code is an error code with its HTTP-like status (Nats-Service-Error-Code)
// and whether it is a refusal by the protocol (the CLIs' exit code 2)
// rather than a failure.
//
// The table is append-only: never renumber, rename or reuse a code.
type Code struct {
	Name    string
	Status  int
	Refusal bool
}

// Codes is the table of every wire error code, in the contract's order.
var Codes = []Code{
	{CodePermissionDenied, 403, true},
	{CodeInvalidType, 400, true},
	{CodeInvalidStructure, 400, true},
	{CodeInvalidParent, 409, true},
	{CodeWorkspaceNotActive, 409, true},
	{CodeNoSendRight, 403, true},
	{CodeTargetNotFound, 404, true},
	{CodeTargetTerminal, 409, true},
	{CodeInvalidTransition, 409, true},
	{CodeNoFinalCheckpoint, 409, true},
	{CodeNotFound, 404, true},
	{CodeUnauthorized, 401, true},
	{CodeTooLarge, 413, true},
	{CodeUnavailable, 503, false},
	{CodeInternal, 500, false},
	{CodeCapabilityDenied, 403, true},
	{CodeGatePending, 202, true},
	{CodeCapacityExhausted, 503, true},
}

// LookupCode returns the table row of name; unknown names are internal.
func LookupCode(name string) Code {
	for _, c := range Codes {
		if c.Name == name {
			return c
		}
	}
	return Code{Name: CodeInternal, Status: 500}
}

// InboxPrefix returns the NATS inbox prefix a client authenticated with token
// must use ("_INBOX_" + 24 hex digits of SHA-256(token)). The daemon lets each
// token subscribe only under its own prefix, so no principal can read the
// replies (tokens among them) sent to another.
func InboxPrefix(token string) string {
	sum := sha256.Sum256([]byte(token))
	return TokenInboxPrefix + hex.EncodeToString(sum[:12])
}

// TokenInboxPrefix starts every token's inbox prefix (InboxPrefix).
const TokenInboxPrefix = "_INBOX_"

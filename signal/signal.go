package signal

import (
	"fmt"
	"unicode/utf8"

	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/taxonomy"
)

// Signal is a signal record in the uniform WACP schema (Signal spec §3).
// DeliveredTo is nil for signals of the root, which have no recipient.
type Signal struct {
	ID          string              `json:"id"`
	From        string              `json:"from"`
	Type        taxonomy.SignalType `json:"type"`
	Reason      *string             `json:"reason"`
	Ref         *string             `json:"ref"`
	Timestamp   string              `json:"timestamp"`
	DeliveredTo *string             `json:"delivered_to"`
	DeliveredAt string              `json:"delivered_at"`
}

// Request is the body of an agent's signal call (wire contract §3.2).
type Request struct {
	Type   string `json:"type"`
	Reason string `json:"reason,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// MaxReason bounds the length of a reason, in bytes.
const MaxReason = 4096

// DecodeRequest decodes a signal request; a malformed body is a *Rejection
// with reason invalid_structure.
func DecodeRequest(data []byte) (Request, error) {
	if !utf8.Valid(data) {
		return Request{}, reject(ReasonInvalidStructure, "request is not valid UTF-8")
	}
	var r Request
	if err := strictjson.Decode(data, &r); err != nil {
		return Request{}, reject(ReasonInvalidStructure, "malformed request: %v", err)
	}
	if r.Type == "" {
		return Request{}, reject(ReasonInvalidStructure, "type is required")
	}
	if len(r.Reason) > MaxReason {
		return Request{}, reject(ReasonInvalidStructure, "reason is longer than %d bytes", MaxReason)
	}
	return r, nil
}

// RequiresReason reports whether signals of type t must carry a reason
// (blocked, failed, escalation).
func RequiresReason(t taxonomy.SignalType) bool {
	return t == taxonomy.SignalBlocked || t == taxonomy.SignalFailed || t == taxonomy.SignalEscalation
}

// RuntimeOnly reports whether only the runtime emits signals of type t: the
// checkpoint signal (on checkpoint creation), acknowledged (on envelope
// delivery) and integrate (once per integration). An agent asking to emit
// one is refused, so each is emitted exactly when its event happens.
func RuntimeOnly(t taxonomy.SignalType) bool {
	return t == taxonomy.SignalCheckpoint || t == taxonomy.SignalAcknowledged || t == taxonomy.SignalIntegrate
}

// CoordinatorOnly reports whether t is emitted through a coordinator
// operation (suspend, migrate) rather than by the signal call.
func CoordinatorOnly(t taxonomy.SignalType) bool {
	return t == taxonomy.SignalSuspend || t == taxonomy.SignalMigrate
}

// Check applies the emit rules to a request from a workspace of role:
// the type is one of the closed 11 (invalid_type), the role may emit it and
// an agent may emit it at all (permission_denied), and reason is present
// when the type requires one (invalid_structure).
func Check(tax *taxonomy.Taxonomy, role string, r Request) error {
	t := taxonomy.SignalType(r.Type)
	if !t.Valid() {
		return reject(ReasonInvalidType, "signal type %q is not one of the 11 WACP signal types", r.Type)
	}
	if RuntimeOnly(t) || CoordinatorOnly(t) {
		return reject(ReasonPermissionDenied, "%s signals are emitted by the runtime, not by a signal call", t)
	}
	if !tax.CanEmit(role, t) {
		return reject(ReasonPermissionDenied, "role %s may not emit %s", role, t)
	}
	if RequiresReason(t) && r.Reason == "" {
		return reject(ReasonInvalidStructure, "a %s signal requires a reason", t)
	}
	return nil
}

// Subject is the NATS subject a signal is published on: the receiving
// workspace first, so a parent subscribes to wacp.v1.sig.<self>.> (wire
// contract §5). Root signals (no recipient) are not published.
func Subject(s Signal) string {
	if s.DeliveredTo == nil {
		return ""
	}
	return fmt.Sprintf("wacp.v1.sig.%s.%s.%s", *s.DeliveredTo, s.From, s.Type)
}

package envelope

import (
	"unicode/utf8"

	"github.com/wacpd/wacpd/internal/strictjson"
)

// Priorities, origins and statuses (WACP Envelope §3).
const (
	PriorityNormal   = "normal"
	PriorityUrgent   = "urgent"
	PriorityBlocking = "blocking"

	OriginAgent = "agent"
	OriginHuman = "human"

	StatusCreated      = "created"
	StatusValidated    = "validated"
	StatusDelivered    = "delivered"
	StatusAcknowledged = "acknowledged"
	StatusRejected     = "rejected"
)

// Envelope is an envelope record (WACP Envelope §3).
type Envelope struct {
	ID         string  `json:"id"`
	From       string  `json:"from"`
	To         string  `json:"to"`
	Originator string  `json:"originator"`
	Type       string  `json:"type"`
	Payload    Payload `json:"payload"`
	InReplyTo  *string `json:"in_reply_to"`
	// Rights are the port rights the envelope transfers to its receiver
	// (rights.go), each with the id of the right moved; [] when none.
	Rights    []RightSpec `json:"rights"`
	Priority  string      `json:"priority"`
	Timestamp string      `json:"timestamp"`
	Origin    string      `json:"origin"`
	// Integrity is the runtime's proof over the envelope's fields
	// (integrity.go, WACP Security §4.1); nil only in a record written
	// before proofs, which the engine proves at the first open with its
	// key (docs/design.md, Envelope integrity).
	Integrity   *Integrity `json:"integrity,omitempty"`
	Status      string     `json:"status"`
	DeliveredAt string     `json:"delivered_at,omitempty"`
	// Delivery is set only in an inbox.next reply: the lease under which
	// the envelope was handed to its receiver's agent. Stored records and
	// the envelope reply never carry it.
	Delivery *Delivery `json:"delivery,omitempty"`
}

// MaxDeliveries bounds how often an envelope is handed to its receiver's
// agent: the first delivery and 3 redeliveries (WACP Envelope §7,
// "Redelivery: 3 (4 total incl. first send)"). When the lease of the last
// one ends unacknowledged the envelope is undeliverable
// (delivery_exhausted).
const MaxDeliveries = 4

// Delivery describes one hand-over of an envelope to its receiver's agent
// by inbox.next (an extension of the wire contract). The envelope stays in
// the inbox until the agent acknowledges it (inbox.ack, or inbox.next with
// ack_previous); if LeaseExpiresAt passes first it is delivered again.
type Delivery struct {
	// Attempt counts the hand-overs, 1 for the first; at most MaxDeliveries.
	Attempt int `json:"attempt"`
	// MaxAttempts is MaxDeliveries.
	MaxAttempts int `json:"max_attempts"`
	// LeaseExpiresAt is when the envelope comes back to the inbox unless
	// acknowledged: Attempt × the daemon's base lease after the hand-over.
	LeaseExpiresAt string `json:"lease_expires_at"`
}

// Payload is an envelope's content.
type Payload struct {
	Format      string   `json:"format"`
	Content     string   `json:"content"`
	Attachments []string `json:"attachments"`
}

// Request is the body of an envelope call (wire contract §3.2).
type Request struct {
	To        string  `json:"to"`
	Type      string  `json:"type"`
	Payload   Payload `json:"payload"`
	InReplyTo *string `json:"in_reply_to,omitempty"`
	Priority  string  `json:"priority,omitempty"`
	// Rights are port rights the sender holds and transfers to the
	// receiver on delivery (Envelope §3): {type: send|send_once, target}.
	Rights []RightSpec `json:"rights,omitempty"`
}

// DecodeRequest decodes an envelope request and checks its shape: to and
// type present (payload.content may be empty), priority in its enum (default normal),
// payload.format defaulting to markdown. Failures are *Rejection with
// reason invalid_structure.
func DecodeRequest(data []byte) (Request, error) {
	if !utf8.Valid(data) {
		return Request{}, reject(ReasonInvalidStructure, "request is not valid UTF-8")
	}
	var r Request
	if err := strictjson.Decode(data, &r); err != nil {
		return Request{}, reject(ReasonInvalidStructure, "malformed request: %v", err)
	}
	return Normalize(r)
}

// Normalize checks the shape of a request made in code, as DecodeRequest
// does a decoded one, and fills in its defaults.
func Normalize(r Request) (Request, error) {
	switch {
	case r.To == "":
		return Request{}, reject(ReasonInvalidStructure, "to is required")
	case r.Type == "":
		return Request{}, reject(ReasonInvalidStructure, "type is required")
	case r.InReplyTo != nil && *r.InReplyTo == "":
		return Request{}, reject(ReasonInvalidStructure, "in_reply_to must be null or an envelope id")
	}
	switch r.Priority {
	case "":
		r.Priority = PriorityNormal
	case PriorityNormal, PriorityUrgent, PriorityBlocking:
	default:
		return Request{}, reject(ReasonInvalidStructure, "priority %q is not normal, urgent or blocking", r.Priority)
	}
	if err := checkRightSpecs(r.Rights); err != nil {
		return Request{}, err
	}
	if len(r.Rights) == 0 {
		r.Rights = nil // [] and absent are one request
	}
	if r.Payload.Format == "" {
		r.Payload.Format = "markdown"
	}
	if r.Payload.Attachments == nil {
		r.Payload.Attachments = []string{}
	}
	return r, nil
}

// Rank orders priorities in the inbox: blocking, then urgent, then normal.
func Rank(priority string) byte {
	switch priority {
	case PriorityBlocking:
		return 0
	case PriorityUrgent:
		return 1
	}
	return 2
}

package taxonomy

import (
	"crypto/sha256"
	"encoding/hex"
)

// Code is an error code of the wire contract (wire-v1 §3): the string sent in
// the Nats-Service-Error header and the error body, with its HTTP-like status
// (Nats-Service-Error-Code) and whether it is a refusal by the protocol (the
// CLIs' exit code 2) rather than a failure.
//
// The table is append-only: never renumber, rename or reuse a code.
type Code struct {
	Name    string
	Status  int
	Refusal bool
}

// Codes is the table of every wire error code, in the contract's order.
var Codes = []Code{
	{"permission_denied", 403, true},
	{"invalid_type", 400, true},
	{"invalid_structure", 400, true},
	{"invalid_parent", 409, true},
	{"workspace_not_active", 409, true},
	{"no_send_right", 403, true},
	{"target_not_found", 404, true},
	{"target_terminal", 409, true},
	{"invalid_transition", 409, true},
	{"no_final_checkpoint", 409, true},
	{"not_found", 404, true},
	{"unauthorized", 401, true},
	{"too_large", 413, true},
	{"unavailable", 503, false},
	{"internal", 500, false},
}

// LookupCode returns the table row of name; unknown names are internal.
func LookupCode(name string) Code {
	for _, c := range Codes {
		if c.Name == name {
			return c
		}
	}
	return Code{Name: "internal", Status: 500}
}

// InboxPrefix returns the NATS inbox prefix a client authenticated with token
// must use ("_INBOX_" + 24 hex digits of SHA-256(token)). The daemon lets each
// token subscribe only under its own prefix, so no principal can read the
// replies (tokens among them) sent to another.
func InboxPrefix(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "_INBOX_" + hex.EncodeToString(sum[:12])
}

package signal

import (
	"errors"

	"github.com/wacpd/wacpd/taxonomy"
)

// Reason is why a signal was refused; the values are wire error codes.
type Reason = taxonomy.Reason

// Refusal reasons.
const (
	ReasonInvalidType       Reason = "invalid_type"
	ReasonPermissionDenied  Reason = "permission_denied"
	ReasonInvalidStructure  Reason = "invalid_structure"
	ReasonInvalidTransition Reason = "invalid_transition"
)

// ErrRejected is wrapped by every *Rejection. Test with errors.Is.
var ErrRejected = errors.New("signal: rejected")

// Rejection is a refused signal with the spec's reason (taxonomy.Rejection). It
// unwraps to ErrRejected.
type Rejection = taxonomy.Rejection

func reject(reason Reason, format string, args ...any) *Rejection {
	return taxonomy.Reject(ErrRejected, reason, format, args...)
}

// Reject returns a *Rejection; the runtime uses it for state-dependent refusals.
func Reject(reason Reason, format string, args ...any) *Rejection {
	return reject(reason, format, args...)
}

package signal

import (
	"errors"
	"fmt"
)

// Reason is why a signal was refused; the values are wire error codes.
type Reason string

// Refusal reasons.
const (
	ReasonInvalidType       Reason = "invalid_type"
	ReasonPermissionDenied  Reason = "permission_denied"
	ReasonInvalidStructure  Reason = "invalid_structure"
	ReasonInvalidTransition Reason = "invalid_transition"
)

// ErrRejected is wrapped by every *Rejection. Test with errors.Is.
var ErrRejected = errors.New("signal: signal rejected")

// Rejection is a refused signal. It unwraps to ErrRejected.
type Rejection struct {
	Reason  Reason
	Message string
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("signal: rejected (%s): %s", r.Reason, r.Message)
}

// Unwrap returns ErrRejected.
func (r *Rejection) Unwrap() error { return ErrRejected }

func reject(reason Reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Reject returns a *Rejection; the runtime uses it for state-dependent refusals.
func Reject(reason Reason, format string, args ...any) *Rejection {
	return reject(reason, format, args...)
}

package envelope

import (
	"errors"
	"fmt"
)

// Reason is a WACP envelope rejection reason (Envelope spec §8).
type Reason string

// Rejection reasons, exactly as the spec names them.
const (
	ReasonPermissionDenied Reason = "permission_denied"
	ReasonNoSendRight      Reason = "no_send_right"
	ReasonInvalidType      Reason = "invalid_type"
	ReasonInvalidStructure Reason = "invalid_structure"
	ReasonTargetNotFound   Reason = "target_not_found"
	ReasonTargetTerminal   Reason = "target_terminal"
)

// ErrRejected is wrapped by every *Rejection. Test with errors.Is.
var ErrRejected = errors.New("envelope: envelope rejected")

// Rejection is a refused envelope with the spec's reason. It unwraps to ErrRejected.
type Rejection struct {
	Reason  Reason
	Message string
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("envelope: rejected (%s): %s", r.Reason, r.Message)
}

// Unwrap returns ErrRejected.
func (r *Rejection) Unwrap() error { return ErrRejected }

func reject(reason Reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

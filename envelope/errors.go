package envelope

import (
	"errors"

	"github.com/wacpd/wacpd/taxonomy"
)

// Reason is a WACP envelope rejection reason (Envelope spec §8).
type Reason = taxonomy.Reason

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
var ErrRejected = errors.New("envelope: rejected")

// Rejection is a refused envelope with the spec's reason (taxonomy.Rejection). It
// unwraps to ErrRejected.
type Rejection = taxonomy.Rejection

func reject(reason Reason, format string, args ...any) *Rejection {
	return taxonomy.Reject(ErrRejected, reason, format, args...)
}

// Reject returns a *Rejection; the runtime uses it for state-dependent refusals.
func Reject(reason Reason, format string, args ...any) *Rejection {
	return reject(reason, format, args...)
}

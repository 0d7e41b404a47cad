package checkpointchain

import (
	"errors"

	"github.com/wacpd/wacpd/taxonomy"
)

// Reason is a WACP checkpoint rejection reason (Checkpoint spec §7).
type Reason = taxonomy.Reason

// The five rejection reasons, exactly as the spec names them.
const (
	ReasonPermissionDenied   Reason = "permission_denied"
	ReasonInvalidType        Reason = "invalid_type"
	ReasonInvalidStructure   Reason = "invalid_structure"
	ReasonInvalidParent      Reason = "invalid_parent"
	ReasonWorkspaceNotActive Reason = "workspace_not_active"
)

// These errors can be returned by this package. Test with errors.Is.
var (
	// ErrRejected is wrapped by every *Rejection.
	ErrRejected = errors.New("checkpointchain: rejected")
	// ErrNotCanonical is returned by Decode for bytes that are not a
	// canonical checkpoint encoding.
	ErrNotCanonical = errors.New("checkpointchain: not a canonical checkpoint")
	// ErrNotFound is returned when no checkpoint has the given id.
	ErrNotFound = errors.New("checkpointchain: checkpoint not found")
)

// Rejection is a refused checkpoint with the spec's reason (taxonomy.Rejection). It
// unwraps to ErrRejected.
type Rejection = taxonomy.Rejection

func reject(reason Reason, format string, args ...any) *Rejection {
	return taxonomy.Reject(ErrRejected, reason, format, args...)
}

// Reject returns a *Rejection; the runtime uses it for state-dependent refusals.
func Reject(reason Reason, format string, args ...any) *Rejection {
	return reject(reason, format, args...)
}

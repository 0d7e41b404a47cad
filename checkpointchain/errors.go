package checkpointchain

import (
	"errors"
	"fmt"
)

// Reason is a WACP checkpoint rejection reason (Checkpoint spec §7).
type Reason string

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
	ErrRejected = errors.New("checkpointchain: checkpoint rejected")
	// ErrNotCanonical is returned by Decode for bytes that are not a
	// canonical checkpoint encoding.
	ErrNotCanonical = errors.New("checkpointchain: not a canonical checkpoint")
	// ErrNotFound is returned when no checkpoint has the given id.
	ErrNotFound = errors.New("checkpointchain: checkpoint not found")
)

// Rejection is a checkpoint the protocol refuses, with the spec's reason.
// Use errors.As to get it; it unwraps to ErrRejected.
type Rejection struct {
	Reason  Reason
	Message string
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("checkpointchain: rejected (%s): %s", r.Reason, r.Message)
}

// Unwrap returns ErrRejected.
func (r *Rejection) Unwrap() error { return ErrRejected }

func reject(reason Reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

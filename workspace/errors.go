package workspace

import "errors"

// These errors can be returned by the functions of this package. Test with errors.Is.
var (
	// ErrInvalidTransition is returned (inside *TransitionError) for a
	// transition the state machine does not have.
	ErrInvalidTransition = errors.New("workspace: invalid transition")
	// ErrInvalidRequest is returned for a malformed create request.
	ErrInvalidRequest = errors.New("workspace: invalid request")
	// ErrParentTerminal is returned when creating under a closed or failed parent.
	ErrParentTerminal = errors.New("workspace: parent is terminal")
	// ErrContainment is returned when a child would see or act beyond its parent.
	ErrContainment = errors.New("workspace: outside the parent's scope")
	// ErrNotFound is returned when no workspace has the given id.
	ErrNotFound = errors.New("workspace: not found")
)

package approval

import "errors"

// Errors of the package; each is matched with errors.Is.
var (
	ErrRequest     = errors.New("approval: invalid request")
	ErrMode        = errors.New("approval: invalid checkpoint mode")
	ErrModeRefused = errors.New("approval: mode refused by policy")
	ErrOutcome     = errors.New("approval: invalid outcome")
	ErrEnvelope    = errors.New("approval: invalid envelope")
	ErrMutated     = errors.New("approval: arguments mutated")
	ErrPermitVoid  = errors.New("approval: permit not usable")
	ErrBoundary    = errors.New("approval: invalid boundary")
)

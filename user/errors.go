package user

import "errors"

// These errors can be returned by the functions of this package. Test with
// errors.Is.
var (
	// ErrInvalidTransition is returned (inside *TransitionError) for a
	// state change the spec does not have.
	ErrInvalidTransition = errors.New("user: invalid transition")
	// ErrUnknownCapability is returned for a capability that is not one of
	// the seventeen.
	ErrUnknownCapability = errors.New("user: unknown capability")
	// ErrInvalidID is returned for a user id the runtime does not accept
	// ("system", the actor tokens, an empty or over-long id).
	ErrInvalidID = errors.New("user: invalid user id")
)

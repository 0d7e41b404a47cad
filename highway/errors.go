package highway

import "errors"

// These errors can be returned by the functions of this package. Test with
// errors.Is.
var (
	// ErrInvalidConfig is returned for a highway configuration that is not
	// the spec's schema or holds a bad value.
	ErrInvalidConfig = errors.New("highway: invalid configuration")
	// ErrInvalidResolution is returned for a resolution that is not
	// approve, reject or modify, or a modify of fields the gate's type
	// does not let a person change.
	ErrInvalidResolution = errors.New("highway: invalid resolution")
	// ErrResolved is returned for a gate that is already resolved.
	ErrResolved = errors.New("highway: gate already resolved")
	// ErrReentry is returned (inside *ReentryError) when a gate is
	// triggered again for a subject its fallback resolved.
	ErrReentry = errors.New("highway: gate re-entry")
)

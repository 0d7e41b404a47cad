package casstore

import "errors"

// These errors can be returned by Store methods and by the backends' helpers.
// Test for them with errors.Is.
var (
	// ErrNotFound is returned when no object has the given Ref.
	ErrNotFound = errors.New("casstore: object not found")
	// ErrCorrupt is returned when stored content does not hash to its Ref.
	// It always arrives wrapped in a *CorruptError.
	ErrCorrupt = errors.New("casstore: content does not match ref")
	// ErrInvalidRef is returned when a string is not a valid Ref.
	ErrInvalidRef = errors.New("casstore: invalid ref")
	// ErrTooLarge is returned when an object is larger than the backend can
	// store.
	ErrTooLarge = errors.New("casstore: object too large")
)

// CorruptError reports that the content stored under Ref hashes to Got
// instead. It unwraps to ErrCorrupt.
type CorruptError struct {
	Ref Ref // the Ref that was requested
	Got Ref // the Ref of the bytes actually found
}

func (e *CorruptError) Error() string {
	return "casstore: object " + e.Ref.String() + ": content does not match ref (hashes to " + e.Got.String() + ")"
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Verify reports whether data is the content of ref: it returns nil if
// RefOf(data) == ref and a *CorruptError otherwise. Every backend calls it on
// read.
func Verify(ref Ref, data []byte) error {
	if got := RefOf(data); got != ref {
		return &CorruptError{Ref: ref, Got: got}
	}
	return nil
}

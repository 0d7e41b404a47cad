package traillog

import (
	"errors"
	"fmt"
)

// These errors can be returned by Log and Batch methods, beside
// trail.ErrUnknownEvent and trail.ErrBodyInvalid. Test with errors.Is.
var (
	// ErrOrder is returned when an appended entry's id or timestamp does not
	// come after the previous entry's.
	ErrOrder = errors.New("trail: entry out of order")
	// ErrNotFound is returned when no entry has the given id.
	ErrNotFound = errors.New("trail: entry not found")
)

// DamageError is returned when Badger fails on damaged storage: a checksum
// mismatch it reports, or a panic inside it, recovered at the trail's
// boundary (readers of the Merkle nodes and entries, Check).
type DamageError struct {
	Op    string // what was being read
	Panic any    // the recovered panic value, nil for an error
	Err   error  // Badger's error, nil for a panic
}

func (e *DamageError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("trail: %s: storage damaged: badger panicked: %v", e.Op, e.Panic)
	}
	return fmt.Sprintf("trail: %s: storage damaged: %v", e.Op, e.Err)
}

func (e *DamageError) Unwrap() error { return e.Err }

// Is reports whether target is ErrDamaged.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

// ErrDamaged matches every *DamageError under errors.Is.
var ErrDamaged = errors.New("trail: storage damaged")

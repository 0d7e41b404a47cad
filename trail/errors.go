package trail

import (
	"errors"
	"fmt"
)

// These errors can be returned by Log and Batch methods, beside ErrUnknownEvent
// and ErrBodyInvalid (registry.go). Test with errors.Is.
var (
	// ErrOrder is returned when an appended entry's id or timestamp does not
	// come after the previous entry's.
	ErrOrder = errors.New("trail: entry out of order")
	// ErrNotFound is returned when no entry has the given id.
	ErrNotFound = errors.New("trail: entry not found")
)

// Violation names the first problem Verify found.
type Violation string

// Violations reported by Verify.
const (
	// ViolationHashMismatch: an entry does not hash to its recorded hash.
	ViolationHashMismatch Violation = "hash_mismatch"
	// ViolationChainBroken: an entry's prev_hash is not its predecessor's
	// hash, an entry is missing, or the entries are out of order.
	ViolationChainBroken Violation = "chain_broken"
)

// Violations reported only by Check, which also applies the checks of the
// recovery procedure (Recovery §3.1) and the signed tree head.
const (
	// ViolationNotMonotonic: an entry's timestamp is not after the previous
	// entry of its workspace.
	ViolationNotMonotonic Violation = "not_monotonic"
	// ViolationAfterTerminal: a workspace's local trail has an entry after
	// its transition to a terminal state.
	ViolationAfterTerminal Violation = "after_terminal"
	// ViolationRootMismatch: the entries do not hash to the root of the
	// latest signed tree head.
	ViolationRootMismatch Violation = "root_mismatch"
	// ViolationIndexMismatch: a record derived from the entries (a chain
	// head, the id or a local index, a Merkle node) disagrees with them.
	// Check reports these in CheckResult.Derived; Verify as a violation.
	ViolationIndexMismatch Violation = "index_mismatch"
	// ViolationUnreadable: the storage could not be read back: Badger
	// reported a checksum error or failed (panicked) reading it.
	ViolationUnreadable Violation = "unreadable"
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

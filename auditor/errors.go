package auditor

import (
	"errors"

	"github.com/wacpd/wacpd/trail"
)

// These errors can be returned by this package. Test with errors.Is.
var (
	// ErrProof is returned when an inclusion or consistency proof does not
	// verify against the given root.
	ErrProof = errors.New("auditor: proof does not verify")
	// ErrBundle is returned by BundleWriter when it is used out of order:
	// entries before the header, more entries than the tree head's size,
	// objects unsorted or unreferenced, Close before every entry and object
	// was written.
	ErrBundle = errors.New("auditor: malformed bundle")
	// ErrInconsistent is returned by Replay for a trail that contradicts
	// itself: a state change from a state the workspace is not in, an event
	// about a workspace that was never created, a checkpoint whose parent is
	// not its chain's head.
	ErrInconsistent = errors.New("auditor: trail contradicts itself")
)

// Violation names the kind of the first problem Verify found.
type Violation string

// Violations reported by Verify and datadir.Verify.
const (
	// ViolationHashMismatch: an entry or object does not hash to its
	// recorded hash, or a line is not the canonical form of its record.
	ViolationHashMismatch = Violation(trail.ViolationHashMismatch)
	// ViolationChainBroken: an entry's prev_hash is not its predecessor's
	// hash, entries are out of order, or entries are missing or extra.
	ViolationChainBroken = Violation(trail.ViolationChainBroken)
	// ViolationSignatureInvalid: the tree head's signature does not verify
	// with the public key, or the header disagrees with the signed note.
	ViolationSignatureInvalid Violation = "signature_invalid"
	// ViolationRootMismatch: the Merkle root of the entries is not the
	// signed root.
	ViolationRootMismatch = Violation(trail.ViolationRootMismatch)
	// ViolationMissingObject: a checkpoint_created entry references an
	// object the bundle (or data dir) does not hold.
	ViolationMissingObject = Violation(trail.ViolationMissingObject)
	// ViolationNotMonotonic: an entry's timestamp is not after the previous
	// entry of its workspace.
	ViolationNotMonotonic = Violation(trail.ViolationNotMonotonic)
	// ViolationAfterTerminal: a workspace's trail has an entry after its
	// transition to a terminal state.
	ViolationAfterTerminal = Violation(trail.ViolationAfterTerminal)
	// ViolationIndexMismatch (data dirs): a record derived from the
	// entries (a head, an index, a Merkle node, a checkpoint record)
	// disagrees with them.
	ViolationIndexMismatch = Violation(trail.ViolationIndexMismatch)
	// ViolationUnreadable (data dirs): Badger's files are damaged: a
	// checksum fails or Badger failed reading them.
	ViolationUnreadable = Violation(trail.ViolationUnreadable)
)

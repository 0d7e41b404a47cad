package trail

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
	// ViolationMissingObject: a checkpoint_created entry names an object
	// the store (a data dir's, or a bundle) does not hold.
	ViolationMissingObject Violation = "missing_object"
)

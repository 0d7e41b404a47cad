// Package integrity is wacpd's one verifier of a stored database: every
// structure the daemon relies on, checked with one rule set, for the
// recovery procedure at start (and -full-check), the daemon's running
// check (Marker.Pass: mark.go), its audit.trail.verify and the offline
// auditor (datadir.Verify).
//
// # Model
//
// Check runs, in order, and reports the first problem with where it is:
//
//  1. storage (full checks only, run beside the other steps; its finding
//     comes first): every block of every Badger table passes its checksum
//     (db.VerifyChecksum; values kept in tables are inside those blocks)
//     and every value kept in the value log reads back (with the database
//     opened WithVerifyValueChecksum, its checksum too); violation
//     unreadable, at the table file;
//  2. the trail (traillog.Check, the trail's rule set): entries, both chains,
//     per-workspace timestamps, nothing after a terminal state, the
//     Merkle root at the signed tree head, and the records derived from
//     the entries: heads, local indexes, every stored Merkle node
//     (index_mismatch, or chain_broken at the workspace for a local index);
//  3. the checkpoint store (full checks only; chainstore.CheckStore):
//     for each checkpoint_created entry the index k/c/<id>, the chain
//     order k/w/<ws>/<n>, the object under its digest (missing_object,
//     hash_mismatch), the registers k/h/<ws>, and nothing unaccounted for
//     (index_mismatch).
//
// Badger panics on some damaged blocks; every step recovers such a panic
// and reports it as unreadable with the step it happened in: damage is a
// verdict, never a crash.
//
// # Why a package of its own
//
// The checks span three packages' key prefixes (trail's "t/",
// checkpointchain's "k/", casstore's "cas/") and Badger's own files.
// trail must not import checkpointchain (style guide §1: both sit just
// above casstore), so each package checks its own records against what the
// trail says (traillog.Check, chainstore.CheckStore) and this package
// joins them; runtime and auditor import it, so all four callers run the
// same code.
//
// # Caveats
//
// Without Options.Full only the trail's entries after the mark of the
// previous check are read (the check at every start: traillog.MarkChecked
// says why that is sound); storage and checkpoint store are read only by a
// full check. Check does not verify the tree head's signature: the caller
// that knows the key does (datadir.Verify; the daemon signed it).
package integrity

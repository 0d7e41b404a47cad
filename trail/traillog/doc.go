// Package traillog stores the WACP trail (package trail is its format) in
// Badger: appends inside the engine's transactions, reads, Merkle proofs,
// the integrity check and the quarantine.
//
// # Model
//
// The runtime appends entries through a Batch inside the Badger
// transaction that also writes the event's effect (write-ahead: if the
// transaction does not commit, the entry does not exist), and calls
// Batch.Commit after the transaction committed to move the in-memory chain
// heads. An Append that fails leaves the batch unusable: drop the
// transaction.
//
// # Keys
//
// Key prefix "t/": t/g/<seq:8 BE> the stored entries of one batch from
// #seq on (global view plus local_prev_hash, in the segment files: a group
// of pointers, global.go), or one entry; t/w/<ws>/<n:8 BE> -> the seqs of
// the workspace's positions n, n+1, … of one batch (local.go); t/h/g the
// global head;
// t/h/w/<ws> a local head (trail.Head as JSON), written with the
// workspace's first entry (layout 4; the later ones are derived at Open
// from its local index: localHeads); t/m/<level:1><index:8
// BE> the Merkle nodes of level 4 and above (the lower ones are computed
// from at most 15 entries); t/v the key layout (layout.go: an entry is
// found by id with a binary search, ids increasing along the trail); t/c
// the mark of the last integrity check (Check, MarkChecked);
// t/q/<seq:8 BE><8 hash bytes> the entries Repair quarantined.
//
// # Integrity check and quarantine
//
// Check applies the trail's one rule set (trail.Rules, with the stored
// local_prev_hash) to the stored trail and also compares the records
// derived from the entries (heads, local indexes, every stored Merkle
// node); a full check runs an accelerated implementation of the same rules
// first (verify_fast.go) and the reference walk only to word a finding.
// Verify is Check's verdict. Package integrity joins Check with the other
// packages' records for every caller (recovery, -full-check, the daemon's
// verification, the offline auditor). Check finds the longest valid
// prefix. Repair moves the entries after that prefix to the quarantine and
// rebuilds heads, indexes and Merkle nodes from the valid entries. A hash
// chain can only be cut, so the bad part is always a tail: the first bad
// entry and everything after it.
//
// Badger panics on some damaged blocks instead of returning an error; the
// readers here (Check, the Merkle proofs and roots, entry reads) recover
// such a panic and return it as a *DamageError (ErrDamaged), and Check as
// trail.ViolationUnreadable.
//
// # Caveats
//
// Verify(ctx, ws) checks one workspace's chain only; a consistent rewrite of
// that workspace's entries is caught by the global Verify, whose global hashes
// cover the local ones.
package traillog

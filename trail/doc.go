// Package trail is the WACP trail (Trail spec, digest §3.9–3.10): entries in
// the WACP schema, the closed registry of 72 event types with their body
// fields, and the two hash chains every entry belongs to.
//
// # Model
//
// One event is one entry. The runtime appends entries through a Batch inside
// the Badger transaction that also writes the event's effect (write-ahead:
// if the transaction does not commit, the entry does not exist), and calls
// Batch.Commit after the transaction committed to move the in-memory chain
// heads. An Append that fails leaves the batch unusable: drop the
// transaction. Each entry is in the global chain and, unless system-level
// (workspace null), in its workspace's chain; the global entry's
// integrity.local_hash anchors the local one. The local trail of W is exactly
// the global trail filtered by workspace W, in the same order (projection
// invariant), which Verify checks along with every hash.
//
// # Format
//
// entry_hash = "blake3:" + hex(BLAKE3-256(RFC 8785 JSON of the entry without
// integrity.entry_hash, signature and signer)); docs/formats.md gives both
// views. Key prefix "t/": t/g/<seq:8 BE> the stored entry (global view plus
// local_prev_hash); t/w/<ws>/<n:8 BE> -> seq; t/i/<id> -> seq; t/h/g the
// global head; t/h/w/<ws> the local heads; t/m/<level:1><index:8 BE> the
// Merkle nodes; t/c the mark of the last integrity check (Check,
// MarkChecked); t/q/<seq:8 BE><8 hash bytes> the entries Repair quarantined.
// testdata/entry.golden freezes the encoding.
//
// # Integrity check and quarantine
//
// The trail has one rule set (rules.go): the entry's algorithm and hash,
// both chain kinds (with the stored local_prev_hash), per-workspace
// timestamps, nothing after a terminal state, and the Merkle root at the
// signed size. Check applies it to the stored trail and also compares the
// records derived from the entries (heads, id and local indexes, every
// Merkle node); a full check runs an accelerated implementation of the same
// rules first (verify_fast.go) and the reference walk only to word a
// finding. Walker applies the rules to entries from elsewhere (a bundle);
// Verify is Check's verdict. Package integrity joins Check with the other
// packages' records for every caller (recovery, -full-check, the daemon's
// verification, the offline auditor). Check finds the longest valid
// prefix. Repair moves the entries after that
// prefix to the quarantine and rebuilds heads, indexes and Merkle nodes
// from the valid entries. A hash chain can only be cut, so the bad part is
// always a tail: the first bad entry and everything after it.
//
// Badger panics on some damaged blocks instead of returning an error; the
// readers here (Check, the Merkle proofs and roots, entry reads) recover
// such a panic and return it as a *DamageError (ErrDamaged), and Check as
// ViolationUnreadable.
//
// # Caveats
//
// Verify(ctx, ws) checks one workspace's chain only; a consistent rewrite of
// that workspace's entries is caught by the global Verify, whose global hashes
// cover the local ones.
package trail

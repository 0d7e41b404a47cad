// Package trail is the format of the WACP trail (Trail spec, digest
// §3.9–3.10): entries in the WACP schema, the closed registry of 72 event
// types with their body fields, the two hash chains every entry belongs
// to, the one rule set over them, the Merkle tree and the signed tree head.
// It holds no storage and links no database: a client or an auditor reads
// entries with it; package trail/traillog stores them.
//
// # Model
//
// One event is one entry. Each entry is in the global chain and, unless
// system-level (workspace null), in its workspace's chain; the global
// entry's integrity.local_hash anchors the local one (LocalView rebuilds
// the local view). The local trail of W is exactly the global trail
// filtered by workspace W, in the same order (projection invariant).
//
// # Format
//
// entry_hash = "blake3:" + hex(BLAKE3-256(RFC 8785 JSON of the entry without
// integrity.entry_hash, signature and signer)); docs/formats.md gives both
// views. testdata/entry.golden freezes the encoding (checked by
// trail/traillog's TestEntryGolden, which appends the entries it holds).
//
// # Rules
//
// The trail has one rule set (Rules, rules.go): the entry's algorithm and
// hash, both chain kinds, per-workspace timestamps, nothing after a
// terminal state, and the Merkle root at the signed size. traillog.Check
// applies it to the stored trail, Walker to entries from elsewhere (a
// bundle); no other copy of a rule exists.
package trail

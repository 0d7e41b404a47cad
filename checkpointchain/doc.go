// Package checkpointchain holds WACP checkpoints (Checkpoint spec §3–§7):
// the record, its canonical encoding and digest, the five rules and the
// three chain invariants, and the per-workspace register.
//
// # Model
//
// DecodeRequest checks a request's shape; Build (pure) applies the rules in
// a fixed order and returns the sealed checkpoint or a *Rejection carrying
// one of the five reasons of the spec. The runtime persists the result with
// chainstore.Put (package checkpointchain/chainstore, the Badger side)
// inside the transaction that also writes the trail; this package links no
// storage, so a client can decode and check checkpoints.
//
// A chain is linear: a checkpoint is accepted only when its parent is the
// current head (null for the first), so two writers racing on one head
// cannot both succeed, and nothing is ever inserted, removed or reordered.
//
// # Format
//
// The canonical encoding (Encode) is RFC 8785 JSON of the record without
// digest; digest = "blake3:" + hex(BLAKE3-256(encoding)). It is frozen by
// testdata/*.golden. Objects live in casstore under their digest; the
// registers and indexes are chainstore's (key prefix "k/").
//
// # Caveats
//
// Payload fields beyond files_changed, content and artifacts are kept as JSON
// values in Payload.Extra; a taxonomy type's required_fields name payload
// fields (base or extra) that must be present and non-empty. Token counts
// above 2^53-1 are refused because canonical JSON numbers are doubles.
package checkpointchain

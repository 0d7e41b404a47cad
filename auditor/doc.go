// Package auditor checks a wacpd trail without trusting the daemon: it
// verifies an exported bundle or a stopped daemon's data dir offline,
// checks Merkle inclusion and consistency proofs against a signed tree
// head, and replays the trail into workspace states and checkpoint chains.
// It is meant to be imported by auditors' own programs: it does not depend
// on the daemon (runtime), on NATS or on the client.
//
// # Model
//
// The two hash chains of package trail (global, and one per workspace) make
// any edit inside a copy of the trail visible, but a chain cannot tell two
// parties whether they hold the same trail, nor prove to one of them that
// an entry is in it. The global trail is therefore also a Merkle tree (RFC
// 6962 §2.1 with BLAKE3, trail.Hasher) whose leaf i is entry #i+1, and the
// daemon signs tree heads (size, root, timestamp) with an Ed25519 key. A
// signed head pins the first size entries: an inclusion proof shows that an
// entry is among them, a consistency proof that a later head extends an
// earlier one, and a bundle holding the entries proves itself complete by
// recomputing the signed root.
//
// # Format
//
// A bundle (format "wacp-trail-bundle/1") is JSON Lines: every line is the
// RFC 8785 canonical JSON of one object (trail.Canonical) followed by "\n".
//
//	{"format":"wacp-trail-bundle/1","origin":…,"public_key":…,"sth":{trail.TreeHead}}
//	{"entry":{global view of entry #1}}
//	… exactly sth.size entry lines, in global order …
//	{"object":{"data":"<base64 of the canonical bytes>","digest":"blake3:…"}}
//	… one object line per checkpoint digest referenced by a checkpoint_created
//	entry, sorted by digest, each once.
//
// BundleWriter writes one; BundleReader reads one.
//
// # Checks
//
// Verify runs these checks in order and reports the first violation:
//
//  1. header: the tree head's note is signed by public_key and says what the
//     header's sth fields say (signature_invalid, "sth");
//  2. each entry line, in order: the line is exactly the canonical form of
//     the entry it decodes to, and the entry recomputes to its entry_hash
//     (hash_mismatch); prev_hash is the previous entry's entry_hash, ids
//     increase strictly and timestamps never decrease (chain_broken); the
//     local view recomputes to local_hash with the workspace's previous
//     local_hash as prev_hash, and system-level entries carry no local_hash
//     (hash_mismatch); each workspace's timestamps strictly increase
//     (not_monotonic) and nothing follows its terminal state
//     (after_terminal). These are the trail's rule set (trail.Walker), the
//     one the daemon applies to its stored trail;
//  3. there are exactly sth.size entries (chain_broken), and the Merkle root
//     over them is sth.root (root_mismatch, "sth");
//  4. every digest a checkpoint_created entry references has an object
//     (missing_object) whose bytes hash to the digest and decode to that
//     checkpoint (hash_mismatch), and the object lines are sorted, unique
//     and all referenced (hash_mismatch).
//
// # Deployments
//
// Several daemons can run as one deployment: they share the root
// workspace's id (each keeps its own copy of the root, created by its
// trail's entry #1), and every other workspace lives in exactly one of
// them, each daemon with its own trail, Merkle log and signing key. An
// auditor verifies each daemon's trail on its own, then the set with
// VerifySet (datadir.VerifySet for data dirs): one root, one hash
// algorithm and one taxonomy, no daemon twice, no workspace in two.
//
// # Caveats
//
// A bundle carries its own public key: a forger can re-sign a rewritten
// trail with a key of its own. Compare Report.PublicKey with the key you
// obtained from the daemon's operator (wacp info, DIR/trail.pub), or pass it
// to VerifyWithKey. Package auditor/datadir verifies a stopped daemon's data
// dir (datadir.Verify); it reads the key from the data dir it checks, with
// the same caveat. A signed head proves nothing about entries after it:
// datadir.Verify checks such a tail by its hashes and chains only. It runs
// integrity.Check, the daemon's own verifier, which also checks Badger's
// files, the stored indexes, heads and Merkle nodes and the checkpoint
// store (docs/audit.md §5). This package links no storage.
package auditor

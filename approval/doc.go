// Package approval is wacpd's operator approvals (issue 16, seed 003):
// control-plane checkpoints before a governed action runs, the canonical
// request an approval binds to, the permits an approval issues, and the
// trust state of each boundary. It is a pure core: the engine stores
// envelopes, permits and trust events and opens the highway gate; the
// daemon serves the operations; nothing here links storage or transport.
//
// # Model
//
// Every action request is first put in its canonical form (Canonicalize:
// RFC 8785 of the tool, the arguments and the execution context, with a
// canonicalization_version); its SHA-256 is the binding digest. Evaluate
// then decides, from the action's facts and the steward's policy (both
// from the atlas), the session's approved envelope (what its approvals
// so far cover: a risk tier, paths, provider classes, policy versions,
// per-step), its checkpoint mode, the trust of every boundary the request
// touches and the session's permits, which triggers fire and whether a
// permit covers them. A checkpoint that nothing covers is presented to an
// operator as Pending: the nine fields of checkpoint_pending, produced
// here, rendered by clients verbatim. The operator's answer is an
// Outcome; Decide turns it into a permit (bound to the digest, or for a
// modified envelope to its scope) and the envelope's new state, or a
// denial.
//
// Trust is per boundary (tool, path, provider, workflow class) and
// event-sourced (Fold): the first violation on a boundary resets it to
// untrusted at once; restoring it is an operator's event; nothing moves
// trust from one boundary to another.
//
// # Invariants
//
//   - The mode never waives only policy-defined checkpoints
//     (checkpoint_actions); a mandatory trigger always fires.
//   - A permit binds to one canonical digest, compared in constant time,
//     or to an envelope's scope; it never covers another tool, a path
//     outside its scope, another policy version, or anything after its
//     expiry, its last use or its revocation.
//   - A permit issued before a boundary's violation does not cover a
//     request touching that boundary; an envelope permit never covers a
//     per-step or always checkpoint.
package approval

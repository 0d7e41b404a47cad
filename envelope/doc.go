// Package envelope holds WACP envelopes (Envelope spec): the record, request
// decoding, the validation pipeline (structure → type → matrix → right) with
// the spec's rejection reasons, and the inbox order.
//
// # Model
//
// An accepted envelope is created (envelope_created in the sender's trail)
// and, when the receiver's inbox accepts (idle, active, blocked), delivered
// in the same commit (envelope_delivered in the receiver's trail) with the
// runtime's acknowledged signal to the sender (ref = envelope id). A
// receiver in suspended or migrating queues it until it resumes. The inbox
// is ordered blocking > urgent > normal, FIFO within a level (Rank, then
// the monotonic envelope id).
//
// # Integrity
//
// Every envelope carries the runtime's integrity proof (integrity.go, WACP
// Security §4.1): an Ed25519 signature over the RFC 8785 form of its
// fields. Prove sets it; VerifyProof checks it, returning an
// *IntegrityError (proof_missing, signature_invalid) to be rejected with
// ReasonIntegrityViolation.
//
// # Format
//
// Package envstore stores envelopes, inbox positions (e/i/<ws>/<rank
// byte><id>), queues and lease deadlines; package runtime/delivery writes
// delivery's effects inside the engine's transaction.
package envelope

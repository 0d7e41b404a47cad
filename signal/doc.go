// Package signal holds WACP signals (Signal spec): the uniform record, the
// closed set of eleven types (taxonomy.SignalType), the reason rule, emit
// permissions by role, and the NATS subject a delivered signal is published
// on.
//
// # Model
//
// Signals go only to the immediate parent; the runtime assigns id,
// timestamp, delivered_to and delivered_at, writes signal_emitted in the
// emitter's local trail and signal_delivered in the receiver's, and applies
// the state effect (blocked, started, complete, failed) through the
// workspace state machine. A transition applies only when the workspace is
// in its from-state; otherwise the signal is recorded with no effect.
// checkpoint, acknowledged and integrate are emitted by the runtime itself;
// suspend and migrate through coordinator operations.
//
// # Format
//
// Subject: wacp.v1.sig.<to_ws>.<from_ws>.<type>, body = the JSON record.
// This package stores nothing; the runtime's outbox holds signals until
// they are published.
package signal

// Package runtime is the engine of wacpd: it joins workspaces, checkpoint
// chains, signals, envelopes, integration and the trail over one Badger
// database, and (in later work) serves them over NATS.
//
// # Model
//
// Engine is a transactional state machine. Each operation validates with
// pure functions of the other packages (workspace.Next, checkpointchain.Build,
// envelope.Check, signal.Check), then writes its effect and every trail
// entry it causes into a Badger transaction with synchronous writes
// (write-ahead: if the commit fails, nothing of it exists, in memory or on
// disk). Operations run one at a time on the committer goroutine, which
// groups the ones that arrive together into one transaction (group commit,
// committer.go); the in-memory state (workspace records, chain registers,
// trail heads) changes only after a batch is durable.
//
// A checkpoint commit holds: the object in casstore, the chain register,
// checkpoint_created, resource_discrepancy entries, the runtime's checkpoint
// signal (signal_emitted, signal_delivered) and an outbox record of the
// signal, which the daemon publishes after the commit and acknowledges with
// AckOutbox.
//
// # Format
//
// Key prefixes: cas/ (casstore), t/ (trail), w/ (workspace), k/
// (checkpointchain), e/ (envelopes: e/e/<id>, inbox e/i/<ws>/<rank><id>,
// queue e/q/<ws>/<id>, lease deadlines e/x/<deadline><id>; see lease.go), o/ (signal outbox, o/<signal id>), m/ (metadata:
// m/root).
//
// # Caveats
//
// Entries about a workspace that is already terminal go to the global trail
// only, so nothing follows a terminal state in a local trail. Timeout
// timers, budgets and liveness are recorded but not yet enforced.
package runtime

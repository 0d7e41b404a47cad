// Package runtime is the engine of wacpd: it joins workspaces, checkpoint
// chains, signals, envelopes, integration and the trail over one Badger
// database. It knows nothing of NATS: package daemon serves it (the wire
// contract), through its exported methods and a few typed hooks (Grants
// for token records, OnCommit, OutboxAfter and AckOutbox for the signal
// publisher, Tokens, Fingerprint).
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
// signal (signal_emitted, signal_delivered), which the daemon publishes
// after the commit (the outbox is derived from the trail: outbox.go) and
// confirms with AckOutbox.
//
// # Format
//
// Key prefixes, each owned by one storage package: cas/ (casstore/
// badgerstore), t/ (trail/traillog), w/ (workspace/wsstore), k/
// (checkpointchain/chainstore), e/ (envelopes, inboxes, queues and lease
// deadlines: envelope/envstore), a/ (token records: principal/tokenstore);
// m/ (metadata: m/root, m/open, m/sth; m/outbox, the outbox's mark, is
// signal/outboxstore's) is the engine's own.
//
// # Placement
//
// Several daemons may share one NATS cluster (placement.go): they share the
// root's id (Config.RootID), each holding its own copy of the root, and
// with Config.Partitions the ids of workspaces and checkpoints are drawn so
// that a workspace lies in its parent's partition (a child of the root in
// the one its request names, WithPartition) and a checkpoint in its
// workspace's. Ids stay strictly increasing; other ids are not placed.
//
// # Caveats
//
// Entries about a workspace that is already terminal go to the global trail
// only, so nothing follows a terminal state in a local trail. Workspace
// timeouts are enforced (ExpireTimeouts, run by RunTimers), and so is every
// budget dimension (budget.go); admission control refuses a creation the
// run has no capacity for (admission.go).
//
// # Contexts
//
// A write operation honours its context until the committer takes it
// (ErrNotTaken: nothing ran); once taken it completes whatever its context
// does, since a commit cannot be called back half-way.
package runtime

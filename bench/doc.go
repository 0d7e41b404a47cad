// Package bench measures wacpd's checkpoint path against the disk's own
// limit (issue 5). Run starts a daemon in-process on a temporary directory,
// or uses a running one, drives a number of agent workspaces that create
// checkpoints over NATS TCP, and measures on the same filesystem the floor:
// a bare Badger database with synchronous writes and a single writer doing
// one transaction per write.
//
// # What is measured
//
//   - Ack latency: from the call of client.CreateCheckpoint to its reply,
//     per checkpoint, at the agent.
//   - Throughput: acknowledged checkpoints per second of the load phase.
//   - Signal latency: from the checkpoint's own timestamp (assigned by the
//     daemon when the commit begins, so it includes the durable write) to
//     the coordinator's receipt of its checkpoint signal in a durable Watch.
//   - Verify rate: trail entries per second of one audit.trail.verify over
//     the whole trail after the load, timed at the coordinator.
//   - Peak RSS: VmHWM of this process, reset when the load starts (after the
//     floor and the bounds, whose memory is returned to the system first)
//     where Linux allows it. With the daemon in-process it is daemon and
//     clients together.
//   - Floor: p50, p99 and rate of the bare Badger writes, of the same size.
//   - CPU per checkpoint: this process's over the load and, for each of
//     Config.Processes (the daemons and NATS servers behind Config.URL),
//     theirs, read in /proc/<pid>/stat before and after the load.
//
// # Against a running daemon
//
// With Config.URL (a daemon's NATS URL, or the servers of the NATS cluster
// one daemon or a deployment of several runs on, with Config.NATSToken for
// an external server) the load, the signals and the verification are
// measured as with the in-process daemon, through the cluster. What needs
// the daemon in this process or its data dir is not measured: what it
// gave Badger and its segment files per checkpoint (Report.Written), the
// data dir's size in the windows, the restart, the store after compaction
// (Report.After), the read bound of the verification and the volume and
// contract bounds, which take their shape from Report.Written. Peak RSS is
// this process's only; a watched process's is its VmHWM since it started.
// On a deployment of several daemons the coordinator's audit.trail.verify
// covers its own daemon's trail, not the others'.
//
// # Caveats
//
// Tests must not assert on any timing this package reports. Signal latency
// compares the daemon's wall clock with this process's: against a daemon on
// another host (Config.URL) it includes their clock offset. With Config.URL
// the floor is measured under Config.Dir, which must be on the daemon's disk
// for the ratios to mean anything, and the durable consumer the coordinator
// watches with is left on the daemon's stream.
//
// The floor opens Badger itself: the one exception to the rule that only
// runtime opens Badger, because the floor must not include the runtime.
package bench

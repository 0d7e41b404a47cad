// Package workspace holds the workspace record, the nine-state machine and
// the failure cascade of WACP (Workspace spec §3–§4, digest §3.4).
//
// # Model
//
// Next is the whole state machine: a pure function from (state, stored
// pre-state, trigger) to the next state. Only the transitions of the spec's
// table exist; terminal states (closed, failed) have none; suspended and
// migrating resume to the pre-state stored when they were entered. Abort,
// parent_failed and system_shutdown are allowed from every non-terminal
// state. Cascade plans what a failure does to the subtree. Plan builds a new
// child record (owner and originator inheritance, containment of visibility
// and authority). The runtime applies these and writes the trail.
//
// # Format
//
// The record is JSON (Workspace). Package workspace/wsstore keeps it in
// Badger under w/<workspace id>, rewritten in the same transaction as the
// trail entries of every change; this package links no storage.
//
// # Caveats
//
// ObserverStarted is a wacpd deviation: under the base permission matrix an
// observer receives no envelopes, so it could never leave idle; wacpd lets an
// observer's own started signal take the idle → active edge
// (docs/conformance.md).
package workspace

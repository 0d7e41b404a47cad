// Package highway holds WACP's human highway gates and their configuration
// (Human Highway spec, digest §3.12), as pure rules: what a gate record
// holds, which transitions are gated with what timeout and fallback
// (Config: the spec's schema, its defaults and its three presets), how a
// gate is opened, resolved by a person, timed out to its fallback or
// resolved by the protocol when its subject is gone, the re-entry guard,
// and the trail events each step writes.
//
// # Model
//
// A gate is pending until it is resolved, once: by a user (approve, reject
// or modify, the modifications limited to the fields its type lets a
// person change), by its fallback when its deadline (the trigger time plus
// its timeout) has passed, or by the protocol when its subject became
// invalid. A gate without a timeout waits indefinitely. The deadline is a
// point in time, so a gate whose time ran out while the daemon was down
// falls back as soon as the daemon is up again. Gates are served FIFO by
// trigger time; queue_position is the number of pending gates ahead of a
// gate when it opened. Guard keeps the (gate type, subject) pairs a
// fallback resolved: re-triggering one is converted as the spec's §6.1
// says and writes gate_reentry_blocked.
//
// Exactly six gate types exist; the set is closed.
//
// # Format
//
// Gate is a JSON record: the spec's gate event (every field present, null
// where unset) with its state and resolution. The engine stores gates;
// this package links no storage and no transport.
//
// # Caveats
//
// A gate that falls back to escalate_to_coordinator is resolved with the
// action escalate_to_coordinator (the spec's resolution actions are
// approve, reject and modify; a fallback that hands the decision to the
// coordinator is neither): the transition waits for the coordinator, and
// its re-trigger is converted to approve by the guard.
package highway

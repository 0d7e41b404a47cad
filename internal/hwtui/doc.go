// Package hwtui is the operator's terminal UI for the human highway (wacp
// highway; Human Highway §3, §4, §7): a bubbletea program that shows the
// pending gates live, one at a time in FIFO order, and lets a person
// approve, reject or modify the gate at the head of the queue.
//
// # Model
//
// The program reads the daemon through a Source, never through a client
// directly: Queue for the pending gates, Resolve to answer one, Inspect for
// the context of one, and Changes, a feed that says when a gate was
// triggered, resolved or timed out. Run owns one goroutine that follows
// Changes and posts a message to the program on each event; the model
// then reads the queue again (one read at a time: events that arrive
// during a read cause one more read, not one each). When Changes ends with
// an error the daemon is taken to be unreachable and the header says so
// until the feed follows again: Run restarts it with a backoff of 500ms to
// 4s, and the model reads the queue, and every 500ms again while that
// fails.
//
// What a person sees is what the daemon sent: the gate's fields, and its
// subject as indented JSON with the daemon's fields, order and values. Text
// is wrapped to the window and the subject is cut to the lines that fit
// (d shows all of it, scrollable); control characters and bidirectional
// formatting characters are shown escaped, so nothing an agent wrote can
// drive the terminal or reorder what is shown.
//
// A control-plane checkpoint (issue 16: an envelope_delivery gate whose
// subject carries checkpoint_pending) is shown as its nine fields,
// labelled, in the order of seed 003, with the daemon's values verbatim;
// a subject missing one of them is shown as a plain gate, nothing filled
// in. d shows its canonical form, scope delta and trust snapshot first.
// Besides y, n and m (the modify of its envelope), p approves it and
// shifts its session to per-step approval, h denies it and halts the
// workflow.
//
// # Invariants
//
//   - Nothing is sent without a key press naming the action: y approves, n
//     rejects, ctrl+s in the editor modifies. An irreversible gate
//     (Gate.Irreversible) needs y (or p, or the modify's ctrl+s) and then
//     Y; any other key cancels, a confirmation is bound to the gate it was
//     asked for, and only Y sets the request's confirm, which the daemon
//     requires of an irreversible checkpoint's approval.
//   - A modification holds only the fields the operator changed, all of
//     them among the gate type's mutable fields (highway.GateType.Mutable);
//     an edit that changes nothing sends nothing.
//   - One answer at a time: while a resolution is in flight, y, n and m
//     wait for it.
//
// # Caveats
//
// The key that answers a gate answers the gate on the screen when the key
// is read: a gate resolved elsewhere meanwhile gives the daemon's error
// (invalid_transition), shown on the result line. Quitting leaves every
// gate pending; a gate with a timeout then falls back at its deadline.
package hwtui

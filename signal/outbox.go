package signal

// OutboxItem is a delivered signal waiting to be published on NATS. The
// engine derives the outbox from the trail (each signal_delivered entry,
// with its signal_emitted entry) and keeps a mark of how far the daemon's
// publishes are confirmed (package outboxstore), so a signal whose trail
// entries are durable is published at least once, also across crashes.
type OutboxItem struct {
	ID      string `json:"id"` // the signal id; also Nats-Msg-Id
	Subject string `json:"subject"`
	Signal  Signal `json:"signal"`
	// Seq is the global seq of the signal's signal_delivered entry in the
	// trail: confirming the item moves the mark there.
	Seq uint64 `json:"-"`
}

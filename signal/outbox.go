package signal

// OutboxItem is a delivered signal waiting to be published on NATS. The
// engine writes it in the transaction that delivers the signal (package
// outboxstore keeps it) and removes it once the daemon's publish is
// confirmed, so a signal whose trail entries are durable is published at
// least once, also across crashes.
type OutboxItem struct {
	ID      string `json:"id"` // the signal id; also Nats-Msg-Id
	Subject string `json:"subject"`
	Signal  Signal `json:"signal"`
}

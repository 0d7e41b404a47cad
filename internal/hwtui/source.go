package hwtui

import (
	"context"

	"github.com/wacpd/wacpd/highway"
)

// Source is where the UI reads gates and sends answers: the daemon, for a
// user token (cmd/wacp adapts a client). Its methods are called from
// goroutines other than the program's and must be safe for concurrent use.
type Source interface {
	// Queue returns the pending gates, FIFO.
	Queue(ctx context.Context) ([]highway.Gate, error)
	// Resolve sends an answer: the gate, the action, a Modify's
	// modifications (a JSON object of the changed fields), a checkpoint's
	// outcome, and the second confirmation of an irreversible gate.
	Resolve(ctx context.Context, req highway.ResolveRequest) (highway.Gate, error)
	// Inspect returns lines about g's context: its workspace, that
	// workspace's chain head, its recent trail.
	Inspect(ctx context.Context, g highway.Gate) ([]string, error)
	// Changes calls fn once it follows the gate events (the queue read
	// then holds whatever came before), then on each gate event, until
	// ctx ends (then it returns nil); it returns an error when the feed
	// breaks. Until its first fn after a break, the UI says the daemon
	// is unreachable.
	Changes(ctx context.Context, fn func()) error
}

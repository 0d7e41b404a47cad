package daemon

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// endedAgents closes the connections of an agent whose workspace has just
// ended (closed or failed): its token no longer connects (Daemon.live), and
// what it had open is cut too, so a finished workspace's token can neither
// read nor call anything.
type endedAgents struct {
	mu   sync.Mutex // guards ws
	ws   []string
	kick chan struct{}
}

func newEndedAgents() *endedAgents { return &endedAgents{kick: make(chan struct{}, 1)} }

// onCommit runs under the engine's lock: it only queues.
func (e *endedAgents) onCommit(c runtime.Commit) {
	for _, en := range c.Entries {
		if en.EventType != trail.EventWorkspaceStateChanged {
			continue
		}
		var b struct {
			WS string          `json:"workspace_id"`
			To workspace.State `json:"to_state"`
		}
		if json.Unmarshal(en.Body, &b) != nil || !b.To.Terminal() {
			continue
		}
		e.mu.Lock()
		e.ws = append(e.ws, b.WS)
		e.mu.Unlock()
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// run disconnects the queued agents until ctx ends.
func (e *endedAgents) run(ctx context.Context, disconnect func(principal.Principal)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		}
		e.mu.Lock()
		ws := e.ws
		e.ws = nil
		e.mu.Unlock()
		for _, id := range ws {
			disconnect(principal.Principal{Kind: principal.KindAgent, Workspace: id})
		}
	}
}

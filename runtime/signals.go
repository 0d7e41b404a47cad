package runtime

import (
	"context"

	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// EmitSignal emits a signal from the agent of workspace ws (wire contract
// §3.2): it checks the type, the role's emit set and the reason rule,
// records signal_emitted and signal_delivered (to the parent), queues the
// signal for publishing, and applies its state effect in the same commit.
// A state effect applies only when the workspace is in the transition's
// from-state; otherwise the signal is recorded with no effect (Signal spec:
// idempotent processing). Agents of suspended, migrating, integrating or
// conflicted workspaces emit nothing (invalid_transition); a signal that
// finds its workspace terminal (an abort or a failure came first) is
// recorded and refused with invalid_transition (Workspace §7).
func (e *Engine) EmitSignal(ctx context.Context, ws string, body []byte) (agentsignal.Signal, error) {
	return runAs(ctx, e, len(body), func() (agentsignal.Signal, error) { return e.emitSignalLocked(ctx, ws, body) })
}

// emitSignalLocked is EmitSignal run by the committer.
func (e *Engine) emitSignalLocked(ctx context.Context, ws string, body []byte) (agentsignal.Signal, error) {
	req, err := agentsignal.DecodeRequest(body)
	if err != nil {
		return agentsignal.Signal{}, err
	}
	w := e.get(ws)
	if w == nil {
		return agentsignal.Signal{}, Refuse(wire.CodeNotFound, "workspace %s does not exist", ws)
	}
	if err := agentsignal.Check(e.tax, w.Role, req); err != nil {
		return agentsignal.Signal{}, err
	}
	switch w.State {
	case workspace.Idle, workspace.Active, workspace.Blocked:
	case workspace.Closed, workspace.Failed:
		return agentsignal.Signal{}, e.lateSignal(w, req) // precedence.go
	default:
		return agentsignal.Signal{}, agentsignal.Reject(agentsignal.ReasonInvalidTransition, "workspace %s is %s and emits no signals", ws, w.State)
	}
	typ := taxonomy.SignalType(req.Type)
	var s agentsignal.Signal
	err = e.commit(metered(ws, len(body), func(t *tx) error {
		c := t.ws(ws)
		var err error
		if s, err = t.emit(c, typ, req.Reason, req.Ref, e.actorOf(c)); err != nil {
			return err
		}
		if typ == taxonomy.SignalEscalation {
			if err := t.routeEscalation(c, s.ID, req.Reason); err != nil {
				return err
			}
		}
		trig, ok := e.signalEffect(c, typ)
		if !ok {
			return t.put(c)
		}
		reason := ""
		if typ == taxonomy.SignalFailed {
			reason = req.Reason
		}
		return t.transition(c, trig, e.actorOf(c), reason, false)
	}))
	return s, err
}

// signalEffect returns the transition an agent's signal of type typ causes
// in w's current state, if any.
func (e *Engine) signalEffect(w *workspace.Workspace, typ taxonomy.SignalType) (workspace.Trigger, bool) {
	var trig workspace.Trigger
	switch typ {
	case taxonomy.SignalBlocked:
		trig = workspace.AgentBlocked
	case taxonomy.SignalStarted:
		trig = workspace.AgentStarted
		if w.State == workspace.Idle && e.tax.BaseOf(w.Role) == taxonomy.RoleObserver {
			trig = workspace.ObserverStarted
		}
	case taxonomy.SignalComplete:
		trig = workspace.AgentComplete
	case taxonomy.SignalFailed:
		trig = workspace.AgentFailed
	default:
		return "", false
	}
	if _, _, err := workspace.Next(w.State, w.PreState, trig); err != nil {
		return "", false
	}
	return trig, true
}

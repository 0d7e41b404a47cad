package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// Gates of the human highway (Human Highway §3; the rules are package
// highway's). A gate opens in the commit of the transition it holds up and
// is resolved, once, in a later commit: by a user (ResolveGate), by its
// fallback when its deadline passes (ExpireGates, from RunTimers; a
// deadline is a point in time, so a gate whose time ran out while the
// daemon was down falls back at the first look after the restart), or by
// the protocol when its subject goes away (invalidateGates). Each
// resolution has its effect on the subject in the same commit
// (settleGate). Gate entries go to the subject workspace's local trail,
// or the coordinator's when there is none.

// openGate opens a gate of type typ for subject s when the run's highway
// gates typ; an ungated task_approval is opened with its time already
// run out and fallback approve, and falls back in the same commit.
// Re-triggering a gate its fallback resolved goes through the re-entry
// guard. held reports that a pending gate (id) now holds the transition
// up: a new one, or one already pending for the same type and subject
// (a second request for the same transition opens no second gate). When
// held is false the caller does the transition itself (the type is not
// gated) or it is done (the gate resolved at once, its effect settled).
func (t *tx) openGate(typ highway.GateType, s highway.Subject) (id string, held bool, err error) {
	cfg := *t.e.cfg.Highway
	if !cfg.Gated(typ) {
		if typ != highway.TaskApproval {
			return "", false, nil
		}
		zero := time.Duration(0)
		cfg.Overrides = map[highway.GateType]highway.Policy{typ: {Timeout: &zero, Fallback: highway.FallbackApprove}}
	}
	return t.openGateWith(cfg, typ, s)
}

// openGateWith is openGate for a gate cfg's policy governs, whether or
// not cfg gates its type (a conflict the coordinator escalates to a
// person opens one anyway).
func (t *tx) openGateWith(cfg highway.Config, typ highway.GateType, s highway.Subject) (id string, held bool, err error) {
	for _, g := range t.gatesSeen() {
		if g.Pending() && g.Type == typ && g.SubjectID == s.ID {
			return g.ID, true, nil
		}
	}
	at := t.next()
	id = t.e.ids.New(at)
	convert, ev, err := t.e.gov.guard.Check(typ, s.ID, id)
	if err != nil {
		return "", false, Refuse(wire.CodeInvalidTransition, "%v", err)
	}
	if convert {
		if err := t.gateAppend(s.Workspace, trail.ActorProtocol, ev); err != nil {
			return "", false, err
		}
		g := highway.Gate{ID: id, Type: typ, SubjectID: s.ID, Subject: s.Body, Workspace: optional(s.Workspace),
			Resolution: &highway.Resolution{Action: highway.Approve, Actor: highway.ActorFallback}}
		return id, false, t.settleGate(g)
	}
	g, ev, err := highway.Open(cfg, typ, s, id, at, clock.Format(at), t.pendingGates())
	if err != nil {
		return "", false, err
	}
	if err := t.putGate(g); err != nil {
		return "", false, err
	}
	if err := t.gateAppend(s.Workspace, trail.ActorProtocol, ev); err != nil {
		return "", false, err
	}
	// A gate opened with no time at all (an ungated task_approval) falls
	// back now; any other is not due.
	if err := t.expireGate(g.ID, at); err != nil {
		return "", false, err
	}
	g, _ = t.gate(g.ID)
	return g.ID, g.Pending(), nil
}

// gatePending is the refusal of an operation gate id holds up.
func gatePending(id string, typ highway.GateType, what string) error {
	return &Error{Code: wire.CodeGatePending, Message: fmt.Sprintf("%s waits at %s gate %s for an operator (highway.get)", what, typ, id),
		Details: map[string]any{"gate_id": id, "gate_type": string(typ)}}
}

// pendingGates counts the gates pending as t sees them.
func (t *tx) pendingGates() int {
	n := 0
	for _, g := range t.gatesSeen() {
		if g.Pending() {
			n++
		}
	}
	return n
}

// gateAppend writes highway event ev, by actor, to ws's local trail, or
// the coordinator's when ws is "".
func (t *tx) gateAppend(ws, actor string, ev highway.Event) error {
	if ws == "" {
		ws = t.e.root
	}
	_, err := t.append(ws, actor, ev.Type, ev.Body)
	return err
}

// gateWorkspace is gate g's subject workspace, "" for none.
func gateWorkspace(g highway.Gate) string {
	if g.Workspace != nil {
		return *g.Workspace
	}
	return ""
}

// expireGate falls gate id back at now, if it is pending as t sees it
// and its deadline has passed, and settles its subject.
func (t *tx) expireGate(id string, now time.Time) error {
	g, _ := t.gate(id)
	g, events, ok := highway.Expire(g, now, clock.Format(now))
	if !ok {
		return nil
	}
	if err := t.putGate(g); err != nil {
		return err
	}
	for _, ev := range events {
		if err := t.gateAppend(gateWorkspace(g), highway.ActorFallback, ev); err != nil {
			return err
		}
	}
	return t.settleGate(g)
}

// settleGate has resolved gate g's effect on its subject.
func (t *tx) settleGate(g highway.Gate) error {
	apply, err := t.planSettle(g)
	if err != nil || apply == nil {
		return err
	}
	return apply(t)
}

// planSettle returns, writing nothing, what resolved gate g does to its
// subject (nil when nothing waits on the gate any more: the subject went
// away meanwhile, or the decision went to the coordinator). ResolveGate
// calls it before it writes anything, as an operation that fails after
// writing poisons its batch.
func (t *tx) planSettle(g highway.Gate) (func(*tx) error, error) {
	r := g.Resolution
	if r.Action == highway.EscalateToCoordinator {
		return nil, nil
	}
	if _, ok := t.checkpoint(g.ID); !ok && r.Outcome != "" {
		return nil, Refuse(wire.CodeInvalidStructure, "outcome %q is a checkpoint's; gate %s holds a %s", r.Outcome, g.ID, g.Type)
	}
	switch g.Type {
	case highway.TaskApproval:
		return t.planTaskApproval(g)
	case highway.Integration:
		return t.planIntegration(g)
	case highway.WorkspaceAbort:
		return t.planAbort(g)
	case highway.ConflictResolution:
		return t.planConflict(g)
	case highway.EnvelopeDelivery:
		if cp, ok := t.checkpoint(g.ID); ok {
			return t.planCheckpoint(g, cp)
		}
		return t.planEnvelope(g)
	case highway.WorkspaceCreate:
		return t.planCreate(g)
	}
	return nil, nil
}

// planTaskApproval: the task approved (modified first, for a modify) or
// cancelled.
func (t *tx) planTaskApproval(g highway.Gate) (func(*tx) error, error) {
	r := g.Resolution
	k, ok := t.task(g.SubjectID)
	if !ok || k.Status != task.Draft {
		return nil, nil
	}
	var events []task.Event
	var err error
	if r.Action == highway.Modify {
		if k, err = task.Modify(k, r.Modifications); err != nil {
			return nil, taskRefusal(err)
		}
		k, events, err = task.Approve(k, true, false)
	} else {
		k, events, err = task.Approve(k, r.Action == highway.Approve, r.Actor == highway.ActorFallback)
	}
	if err != nil {
		return nil, taskRefusal(err)
	}
	return func(t *tx) error { return t.changeTask(k, r.Actor, events) }, nil
}

// invalidateGates resolves every pending gate of subject as invalidated
// (actor protocol).
func (t *tx) invalidateGates(subject string) error {
	for _, g := range t.gatesSeen() {
		if g.SubjectID != subject || !g.Pending() {
			continue
		}
		if err := t.invalidateGate(g); err != nil {
			return err
		}
	}
	return nil
}

// invalidateGate resolves pending gate g as invalidated (actor protocol).
func (t *tx) invalidateGate(g highway.Gate) error {
	out, ev, err := highway.Invalidate(g, clock.Format(t.next()))
	if err != nil {
		return err
	}
	if err := t.putGate(out); err != nil {
		return err
	}
	return t.gateAppend(gateWorkspace(out), highway.ActorProtocol, ev)
}

// Gates returns the gates the caller may see: pending ones in queue order
// (FIFO by trigger time), or, with all, every gate.
func (e *Engine) Gates(ctx context.Context, all bool) []highway.Gate {
	e.mu.Lock()
	defer e.mu.Unlock()
	gates := make([]highway.Gate, 0, len(e.gov.gates))
	for _, g := range e.gov.gates {
		gates = append(gates, *g)
	}
	if !all {
		return highway.Queue(gates)
	}
	slices.SortFunc(gates, func(a, b highway.Gate) int {
		if c := strings.Compare(a.Timestamp, b.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return gates
}

// Gate returns gate id.
func (e *Engine) Gate(ctx context.Context, id string) (highway.Gate, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.gov.gates[id]
	if !ok {
		return highway.Gate{}, Refuse(wire.CodeNotFound, "gate %s does not exist", id)
	}
	return *g, nil
}

// ResolveGate records user userID's answer to a gate (a highway.resolve
// body) when the user is active and holds the gate type's capability
// (user.Authorize; a denial writes capability_denied and is refused with
// capability_denied), and has its effect on the subject in the same
// commit.
func (e *Engine) ResolveGate(ctx context.Context, userID string, body []byte) (highway.Gate, error) {
	req, err := highway.DecodeResolveRequest(body)
	if err != nil {
		return highway.Gate{}, &Error{Code: wire.CodeInvalidStructure, Message: err.Error(), Err: err}
	}
	return runAs(ctx, e, len(body), func() (highway.Gate, error) {
		g, ok := e.gateOf(req.GateID)
		if !ok {
			return highway.Gate{}, Refuse(wire.CodeNotFound, "gate %s does not exist", req.GateID)
		}
		if !g.Pending() {
			return highway.Gate{}, Refuse(wire.CodeInvalidTransition, "gate %s was resolved by %s", g.ID, g.Resolution.Actor)
		}
		var out highway.Gate
		err := e.userCommit(func(t *tx) error {
			ts := clock.Format(t.next())
			if err := t.authorizeUser(userID, "gate."+string(g.Type), e.gateTarget(g), ts); err != nil {
				return err // a denial is recorded: userCommit commits it
			}
			res, ev, err := highway.Resolve(g, req, userID, ts)
			if err != nil {
				return &Error{Code: wire.CodeInvalidStructure, Message: err.Error(), Err: err}
			}
			if cp, ok := t.checkpoint(g.ID); ok && cp.Irreversible() && !req.Confirm &&
				(req.Action == highway.Approve || req.Action == highway.Modify) {
				return Refuse(wire.CodeInvalidStructure, "checkpoint %s holds an irreversible action (%s): approving it needs a second confirmation (confirm: true)", g.ID, cp.Tool)
			}
			// The effect is planned before anything is written: an
			// operation that fails after writing poisons its batch.
			apply, err := t.planSettle(res)
			if err != nil {
				return err
			}
			if err := t.putGate(res); err != nil {
				return err
			}
			if err := t.gateAppend(gateWorkspace(res), res.Resolution.Actor, ev); err != nil {
				return err
			}
			out = res
			if apply == nil {
				return nil
			}
			return apply(t)
		})
		return out, err
	})
}

// gateTarget is what a gate acts on, for capability scope: its subject
// workspace and that workspace's owner, or, for a task, the coordinator's
// owner (tasks are the coordinator's plan). Caller holds e.mu.
func (e *Engine) gateTarget(g highway.Gate) user.Target {
	ws := gateWorkspace(g)
	if ws == "" {
		ws = e.root
	}
	if w := e.get(ws); w != nil {
		return user.Target{ID: w.ID, Owner: w.Owner}
	}
	return user.Target{}
}

// ExpireGates falls back every pending gate whose deadline has passed at
// now, each in its own commit, and returns how many.
func (e *Engine) ExpireGates(ctx context.Context, now time.Time) (int, error) {
	return runAs(ctx, e, 0, func() (int, error) {
		n := 0
		for _, g := range highway.Queue(e.open.tx.gatesSeen()) {
			if d, ok := g.DeadlineTime(); !ok || now.Before(d) {
				continue
			}
			if err := e.commit(func(t *tx) error { return t.expireGate(g.ID, now) }); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	})
}

// pendingList returns the pending gates the engine holds. Caller holds
// e.mu.
func (e *Engine) pendingList() []highway.Gate {
	var out []highway.Gate
	for _, g := range e.gov.gates {
		if g.Pending() {
			out = append(out, *g)
		}
	}
	return out
}

// nextGateDeadline returns the earliest deadline of the pending gates.
func (e *Engine) nextGateDeadline() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	next, found := highway.NextDeadline(e.pendingList())
	for _, x := range e.gov.escal {
		if d, ok := x.DeadlineTime(); ok && x.Pending() && (!found || d.Before(next)) {
			next, found = d, true
		}
	}
	return next, found
}

// kickGates tells the timers a gate opened or was resolved. Caller holds
// e.mu (apply).
func (e *Engine) kickGates() {
	select {
	case e.gateKick <- struct{}{}:
	default:
	}
}

// gateTimer fires at the earliest gate deadline (RunTimers).
type gateTimer struct {
	e     *Engine
	timer *time.Timer
}

func newGateTimer(e *Engine) *gateTimer {
	g := &gateTimer{e: e, timer: time.NewTimer(time.Hour)}
	g.reset()
	return g
}

// reset sets the timer to the next deadline (at once when it passed).
func (g *gateTimer) reset() {
	if !g.timer.Stop() {
		select {
		case <-g.timer.C:
		default:
		}
	}
	next, ok := g.e.nextGateDeadline()
	if !ok {
		g.timer.Reset(time.Hour)
		return
	}
	g.timer.Reset(max(0, time.Until(next)))
}

// fire expires the gates that are due and sets the timer again.
func (g *gateTimer) fire(ctx context.Context) {
	now := g.e.clock.Now()
	if _, err := g.e.ExpireGates(ctx, now); err != nil && !errors.Is(err, ErrClosed) {
		g.e.lg.Error("expire gates", "err", err)
	}
	if _, err := g.e.ExpireEscalations(ctx, now); err != nil && !errors.Is(err, ErrClosed) {
		g.e.lg.Error("expire escalations", "err", err)
	}
	g.reset()
}

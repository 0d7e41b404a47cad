package runtime

import (
	"context"
	"slices"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Graceful termination (WACP Workspace §3, §15; PROTOCOL §6.10). The
// coordinator, or a delegate over its child, sends a feedback envelope
// whose payload (format json) is an object with intent
// graceful_termination, a grace_period (a Go duration, "30s") and
// optionally a reason; other members are the agent's. In the commit that
// sends it the runtime records graceful_termination_initiated
// {workspace_id, grace_period, reason} in the receiver's trail and stores
// the deadline in its record. If the workspace has not emitted complete
// when the deadline passes (it is still active or blocked), it fails:
// graceful_termination_expired {workspace_id, grace_period,
// partial_checkpoint} (the last checkpoint made since the request, null if
// none), the failed signal and the transition with reason
// graceful_termination_expired. A complete in time moves it to
// integrating, where the grace period no longer applies. A workspace
// suspended or migrating at the deadline fails once it is back, as a
// timeout does. The deadline is in the durable record: a restart keeps it,
// and the outage counts.
//
// A request whose grace_period is missing or not a positive duration, or
// to a workspace that is not idle, active or blocked, is rejected as the
// envelope (invalid_structure) and changes nothing. A second request
// replaces the first's deadline.

// graceDefaultReason is graceful_termination_initiated's reason when the
// request gives none.
const graceDefaultReason = "coordinator_request"

// checkGrace rejects a graceful termination request that cannot start: a
// bad grace_period, or a receiver that is not idle, active or blocked.
// Envelopes that are not such requests pass. Caller holds e.mu.
func (e *Engine) checkGrace(req envelope.Request) error {
	if req.Type != taxonomy.EnvelopeFeedback {
		return nil
	}
	_, _, ok, err := workspace.ParseGraceRequest(req.Payload.Format, req.Payload.Content)
	switch {
	case !ok:
		return nil
	case err != nil:
		return envelope.Reject(envelope.ReasonInvalidStructure, "%v", err)
	}
	if to := e.get(req.To); to != nil && !workspace.GraceApplies(to.State) {
		return envelope.Reject(envelope.ReasonInvalidStructure, "workspace %s is %s; a graceful termination is asked of an idle, active or blocked workspace", to.ID, to.State)
	}
	return nil
}

// startGrace records the graceful termination env asks for, if it is such
// a request (checkGrace passed it): graceful_termination_initiated in the
// receiver's trail, by actor, and the deadline in its record.
func (t *tx) startGrace(env *envelope.Envelope, actor string) error {
	if env.Type != taxonomy.EnvelopeFeedback || env.Origin != envelope.OriginAgent {
		return nil
	}
	req, period, ok, err := workspace.ParseGraceRequest(env.Payload.Format, env.Payload.Content)
	if !ok || err != nil {
		return nil
	}
	c := t.ws(env.To)
	if c == nil || c.State.Terminal() || c.State == workspace.Integrating || c.State == workspace.Conflicted {
		return nil
	}
	reason := req.Reason
	if reason == "" {
		reason = graceDefaultReason
	}
	ts := t.next()
	deadline := clock.Format(ts.Add(period))
	err = t.appendAt(ts, c.ID, actor, trail.EventGracefulTerminationInitiated, map[string]any{
		"workspace_id": c.ID, "grace_period": req.GracePeriod, "reason": reason,
		"envelope_id": env.ID, "deadline": deadline,
	})
	if err != nil {
		return err
	}
	c.Grace = workspace.Grace{
		Period: req.GracePeriod, Deadline: deadline, Reason: reason, Envelope: env.ID,
		Checkpoints: t.chain(c.ID).Count,
	}
	return t.put(c)
}

// ExpireGracePeriods fails every workspace whose grace period has run out
// at now without complete. It returns how many failed.
func (e *Engine) ExpireGracePeriods(ctx context.Context, now time.Time) (int, error) {
	return runLane(ctx, e, true, 0, func() (int, error) { return e.expireGracePeriodsLocked(now) }) // precedence.go
}

// expireGracePeriodsLocked is ExpireGracePeriods run by the committer.
func (e *Engine) expireGracePeriodsLocked(now time.Time) (int, error) {
	var due []string
	for id, w := range e.ws {
		if workspace.GraceRunOut(w, now) {
			due = append(due, id)
		}
	}
	slices.Sort(due)
	n := 0
	for _, id := range due {
		failed := false
		err := e.commit(func(t *tx) error {
			c := t.peek(id)
			if !workspace.GraceRunOut(c, now) { // failed by an earlier cascade in this loop
				return nil
			}
			c = t.ws(id)
			var partial any
			if ch := t.chain(id); ch.Count > c.Grace.Checkpoints {
				partial = ch.Head
			}
			_, err := t.append(id, trail.ActorProtocol, trail.EventGracefulTerminationExpired, map[string]any{
				"workspace_id": id, "grace_period": c.Grace.Period, "partial_checkpoint": partial,
			})
			if err != nil {
				return err
			}
			if _, err := t.emit(c, taxonomy.SignalFailed, string(workspace.GraceExpired), "", trail.ActorProtocol); err != nil {
				return err
			}
			failed = true
			return t.transition(c, workspace.GraceExpired, trail.ActorProtocol, string(workspace.GraceExpired), false)
		})
		if err != nil {
			return n, err
		}
		if failed {
			n++
		}
	}
	return n, nil
}

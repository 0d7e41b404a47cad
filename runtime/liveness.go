package runtime

import (
	"context"
	"slices"
	"time"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Liveness monitoring (WACP Workspace §6, Recovery §3.4). A workspace
// created with liveness_interval that is active or blocked and whose local
// trail gets no entry within the interval is given a liveness_warning
// {workspace_id, interval, last_activity_timestamp} in its own trail, by
// the protocol. The warning is an entry of that trail too, so the next one
// is due an interval after it: a silence is warned about once per interval
// for as long as it lasts, the warnings naming the same last activity.
// Liveness is advisory: nothing fails; the timeout and the budgets stay
// what end a workspace. The coordinator is told through the live trail
// feed (wacp.v1.trail.<ws>.liveness_warning); the spec's closed set of
// signals has none for it.
//
// Nothing is scheduled in memory: each look (RunTimers' tick, and recovery
// at start) compares the clock with the timestamp of the workspace's last
// trail entry, which the trail's heads hold across restarts. The outage
// counts: after a restart a workspace whose interval ran out since its
// last entry is warned at once (Recovery §3.4: "If the interval has
// already elapsed since that entry, record a liveness_warning").

// CheckLiveness writes a liveness_warning for every workspace whose
// liveness interval has run out at now since its last trail entry. It
// returns how many it wrote.
func (e *Engine) CheckLiveness(ctx context.Context, now time.Time) (int, error) {
	return runAs(ctx, e, 0, func() (int, error) { return e.checkLivenessLocked(now) })
}

// checkLivenessLocked is CheckLiveness run by the committer.
func (e *Engine) checkLivenessLocked(now time.Time) (int, error) {
	var watched []string
	for id, w := range e.ws {
		if w.LivenessInterval != "" && workspace.LivenessApplies(w.State) {
			watched = append(watched, id)
		}
	}
	slices.Sort(watched)
	n := 0
	for _, id := range watched {
		wrote := false
		err := e.commit(func(t *tx) error {
			w := t.peek(id)
			head := t.batch.LocalHead(id)
			due, activity := workspace.LivenessDue(w, head.ID, head.Timestamp, now)
			if !due {
				return nil
			}
			c := t.ws(id)
			_, err := t.append(id, trail.ActorProtocol, trail.EventLivenessWarning, map[string]any{
				"workspace_id": id, "interval": c.LivenessInterval, "last_activity_timestamp": activity,
			})
			if err != nil {
				return err
			}
			c.Liveness = workspace.Liveness{Warning: t.batch.LocalHead(id).ID, Since: activity}
			wrote = true
			return t.put(c)
		})
		if err != nil {
			return n, err
		}
		if wrote {
			n++
		}
	}
	return n, nil
}

// runWorkspaceTimers is one look of the liveness monitor and of the
// graceful terminations' grace periods (graceful.go), from RunTimers'
// tick and from recovery.
func (e *Engine) runWorkspaceTimers(ctx context.Context, now time.Time) error {
	if _, err := e.ExpireGracePeriods(ctx, now); err != nil {
		return err
	}
	_, err := e.CheckLiveness(ctx, now)
	return err
}

// workspaceTimers counts w's liveness and grace timers, for
// recovery_completed's timers_reconstructed. Caller holds e.mu.
func workspaceTimers(w *workspace.Workspace) int {
	n := 0
	if w.LivenessInterval != "" && workspace.LivenessApplies(w.State) {
		n++
	}
	if w.Grace.Deadline != "" && !w.State.Terminal() && w.State != workspace.Integrating && w.State != workspace.Conflicted {
		n++
	}
	return n
}

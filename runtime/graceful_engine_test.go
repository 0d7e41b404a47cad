package runtime

import (
	"testing"
	"time"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Tests of graceful termination (graceful.go, WACP Workspace §3).

// graceBody is the coordinator's feedback envelope asking ws to wind down
// within period.
func graceBody(ws, period string) []byte {
	return mustJSON(map[string]any{
		"to": ws, "type": "feedback", "priority": "urgent",
		"payload": map[string]any{"format": "json", "content": `{"intent":"graceful_termination","grace_period":"` + period + `","reason":"drain","note":"save your work"}`},
	})
}

func askGrace(t testing.TB, e *Engine, ws, period string) {
	t.Helper()
	if _, err := e.SendEnvelope(ctx, e.Root(), graceBody(ws, period)); err != nil {
		t.Fatalf("SendEnvelope(graceful_termination %s): %v", period, err)
	}
}

func expireGrace(t testing.TB, e *Engine, now time.Time, want int) {
	t.Helper()
	n, err := e.ExpireGracePeriods(ctx, now)
	if err != nil || n != want {
		t.Fatalf("ExpireGracePeriods = %d, %v, want %d", n, err, want)
	}
}

// TestGraceful_ExpiresWithoutComplete: the request records
// graceful_termination_initiated in the receiver's trail and the envelope
// reaches its inbox; a checkpoint made during the grace period is the
// partial_checkpoint; at the deadline, not before, the workspace fails
// with graceful_termination_expired (the failed signal, the transition's
// trigger and reason).
func TestGraceful_ExpiresWithoutComplete(t *testing.T) {
	clk := newFakeClock()
	e := openVerified(t, withFakeClock(clk))
	w := newWorker(t, e)
	first := checkpoint(t, e, w.ID, nil, "provisional") // before the request: not the partial one
	askGrace(t, e, w.ID, "1m")
	init := localEntries(t, e, w.ID, trail.EventGracefulTerminationInitiated)
	if len(init) != 1 {
		t.Fatalf("%d graceful_termination_initiated, want 1", len(init))
	}
	if b := entryBody(t, init[0]); b["workspace_id"] != w.ID || b["grace_period"] != "1m" || b["reason"] != "drain" || init[0].Actor != trail.ActorSystem {
		t.Errorf("graceful_termination_initiated = %v by %s, want workspace_id, grace_period 1m, reason drain, by system", b, init[0].Actor)
	}
	if got := drainInbox(t, e, w.ID); len(got) != 2 {
		t.Errorf("inbox holds %v, want the directive and the feedback", got)
	}
	head := checkpoint(t, e, w.ID, &first.ID, "provisional")

	start, _ := time.Parse(time.RFC3339Nano, init[0].Timestamp)
	clk.Advance(start.Add(time.Minute - time.Nanosecond).Sub(clk.Now()))
	expireGrace(t, e, clk.Now(), 0)
	clk.Advance(time.Nanosecond)
	expireGrace(t, e, clk.Now(), 1)
	ws, _ := e.GetWorkspace(ctx, e.Root(), w.ID)
	if ws.State != workspace.Failed || ws.Reason != "graceful_termination_expired" {
		t.Fatalf("after the grace period: %s (%s), want failed (graceful_termination_expired)", ws.State, ws.Reason)
	}
	exp := trailWhere(t, e, trail.EventGracefulTerminationExpired, map[string]string{"workspace_id": w.ID})
	if len(exp) != 1 {
		t.Fatalf("%d graceful_termination_expired, want 1", len(exp))
	}
	if b := entryBody(t, exp[0]); b["grace_period"] != "1m" || b["partial_checkpoint"] != head.ID {
		t.Errorf("graceful_termination_expired = %v, want grace_period 1m, partial_checkpoint %s", b, head.ID)
	}
	if n := len(trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{
		"workspace_id": w.ID, "to_state": "failed", "trigger": "graceful_termination_expired", "reason": "graceful_termination_expired"})); n != 1 {
		t.Errorf("%d transitions to failed on graceful_termination_expired, want 1", n)
	}
	if n := len(trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"from": w.ID, "type": "failed", "reason": "graceful_termination_expired"})); n != 1 {
		t.Errorf("%d failed signals with reason graceful_termination_expired, want 1", n)
	}
}

// TestGraceful_CompleteInTimeWins: complete before the deadline moves the
// workspace to integrating; the deadline then fails nothing. Without a
// checkpoint during the grace period partial_checkpoint is null.
func TestGraceful_CompleteInTimeWins(t *testing.T) {
	clk := newFakeClock()
	e := openVerified(t, withFakeClock(clk))
	done := newWorker(t, e)
	idle := newWorker(t, e)
	askGrace(t, e, done.ID, "1m")
	askGrace(t, e, idle.ID, "1m")
	checkpoint(t, e, done.ID, nil, "final")
	emitOK(t, e, done.ID, `{"type":"complete"}`)
	clk.Advance(2 * time.Minute)
	expireGrace(t, e, clk.Now(), 1)
	if st := wsState(t, e, done.ID); st != workspace.Integrating {
		t.Errorf("a workspace that completed in time is %s, want integrating", st)
	}
	if st := wsState(t, e, idle.ID); st != workspace.Failed {
		t.Errorf("a workspace that did not complete is %s, want failed", st)
	}
	exp := trailWhere(t, e, trail.EventGracefulTerminationExpired, nil)
	if len(exp) != 1 || entryBody(t, exp[0])["partial_checkpoint"] != nil {
		t.Errorf("graceful_termination_expired = %v, want one with partial_checkpoint null", exp)
	}
}

// TestGraceful_BadRequestsRejected: a grace_period that is missing or not
// a positive duration, or a receiver that is suspended, rejects the
// envelope (invalid_structure, envelope_rejected) and starts nothing.
func TestGraceful_BadRequestsRejected(t *testing.T) {
	e := openVerified(t)
	w := newWorker(t, e)
	s := newWorker(t, e)
	if _, err := e.Suspend(ctx, e.Root(), s.ID, ""); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		body []byte
	}{
		{"no grace_period", mustJSON(map[string]any{"to": w.ID, "type": "feedback",
			"payload": map[string]any{"format": "json", "content": `{"intent":"graceful_termination"}`}})},
		{"zero", graceBody(w.ID, "0s")},
		{"words", graceBody(w.ID, "soon")},
		{"suspended receiver", graceBody(s.ID, "1m")},
	} {
		_, err := e.SendEnvelope(ctx, e.Root(), tt.body)
		wantCode(t, tt.name, err, "invalid_structure")
	}
	if n := len(trailWhere(t, e, trail.EventGracefulTerminationInitiated, nil)); n != 0 {
		t.Errorf("%d graceful_termination_initiated after refused requests", n)
	}
	if n := len(trailWhere(t, e, trail.EventEnvelopeRejected, map[string]string{"reason": "invalid_structure"})); n != 4 {
		t.Errorf("%d envelope_rejected (invalid_structure), want 4", n)
	}
	if got := drainInbox(t, e, w.ID); len(got) != 1 {
		t.Errorf("inbox holds %v, want only the directive", got)
	}
	// A markdown feedback naming the intent is plain feedback.
	_, err := e.SendEnvelope(ctx, e.Root(), mustJSON(map[string]any{"to": w.ID, "type": "feedback",
		"payload": map[string]any{"content": `{"intent":"graceful_termination"}`}}))
	if err != nil {
		t.Fatalf("markdown feedback: %v", err)
	}
}

// TestGraceful_SurvivesRestart: the deadline is in the durable record and
// the outage counts: a grace period that ran out while the daemon was down
// fails the workspace during recovery.
func TestGraceful_SurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := openEngineAt(t, dir, withFakeClock(clk))
	short := newWorker(t, e)
	long := newWorker(t, e)
	askGrace(t, e, short.ID, "1m")
	askGrace(t, e, long.ID, "1h")
	crash(t, e)
	clk.Advance(2 * time.Minute)

	e = openEngineAt(t, dir, withFakeClock(clk))
	if st := wsState(t, e, short.ID); st != workspace.Failed {
		t.Fatalf("a 1m grace period after 2m down: %s, want failed", st)
	}
	if st := wsState(t, e, long.ID); st != workspace.Active {
		t.Fatalf("a 1h grace period after 2m down: %s, want active", st)
	}
	recs := recoveries(t, e)
	if len(recs) != 1 || recs[0]["workspaces_failed"] != float64(1) || recs[0]["timers_reconstructed"] != float64(1) {
		t.Fatalf("recovery_completed = %v, want workspaces_failed 1, timers_reconstructed 1", recs)
	}
	clk.Advance(time.Hour)
	expireGrace(t, e, clk.Now(), 1)
	verify(t, e)
}

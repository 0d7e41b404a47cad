package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wacpd/wacpd/runtime/opqueue"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Tests of the six concurrency invariants (WACP Workspace §7, precedence.go):
// one named after each. Races are made deterministic by holding the
// committer (holdCommitter) while the competing operations queue up, then
// letting it go: what the committer takes first is then up to the queue,
// not to the scheduler.

// holdCommitter occupies the committer with an operation that waits until
// the returned release is called; operations submitted meanwhile wait in
// the queue.
func holdCommitter(t testing.TB, e *Engine) (release func()) {
	t.Helper()
	entered, free, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- e.run(ctx, 0, func() error { close(entered); <-free; return nil })
	}()
	<-entered
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(free)
			if err := <-done; err != nil {
				t.Errorf("held operation: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// queued starts op on a goroutine and waits until it is in lane (the
// committer's ordinary or urgent queue) with n operations in all; it
// returns op's result's channel.
func queued(t testing.TB, lane chan *opqueue.Op, n int, what string, op func() error) <-chan error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- op() }()
	waitFor(t, what+" queued", func() bool { return len(lane) == n })
	return res
}

// stateChanges returns the (from, to) of every workspace_state_changed
// entry about ws, local or system-level, in trail order.
func stateChanges(t testing.TB, e *Engine, ws string) [][2]string {
	t.Helper()
	var out [][2]string
	for _, en := range globalTrail(t, e) {
		if en.EventType != trail.EventWorkspaceStateChanged {
			continue
		}
		b := entryBody(t, en)
		if b["workspace_id"] == ws {
			out = append(out, [2]string{fmt.Sprint(b["from_state"]), fmt.Sprint(b["to_state"])})
		}
	}
	return out
}

// lateSignals returns the signal_emitted entries from ws of type typ that
// follow ws's terminal transition in the global trail.
func lateSignals(t testing.TB, e *Engine, ws, typ string) []trail.Entry {
	t.Helper()
	var out []trail.Entry
	terminal := false
	for _, en := range globalTrail(t, e) {
		b := entryBody(t, en)
		switch {
		case en.EventType == trail.EventWorkspaceStateChanged && b["workspace_id"] == ws &&
			workspace.State(fmt.Sprint(b["to_state"])).Terminal():
			terminal = true
		case terminal && en.EventType == trail.EventSignalEmitted && b["from"] == ws && b["type"] == typ:
			out = append(out, en)
		}
	}
	return out
}

// wantLate checks that err refuses a signal that found its workspace
// terminal, and that the signal is recorded after the terminal
// transition: system-level, with no delivery.
func wantLate(t testing.TB, e *Engine, ws, typ string, err error) {
	t.Helper()
	var rj *agentsignal.Rejection
	if !errors.As(err, &rj) || rj.Reason != agentsignal.ReasonInvalidTransition {
		t.Fatalf("late %s signal: err = %v, want invalid_transition", typ, err)
	}
	late := lateSignals(t, e, ws, typ)
	if len(late) != 1 {
		t.Fatalf("%d %s signal_emitted after %s's terminal transition, want 1 (recorded with no effect)", len(late), typ, ws)
	}
	if late[0].Workspace != "" {
		t.Errorf("late signal_emitted in workspace %s's trail, want system-level (deviation 8)", late[0].Workspace)
	}
	id := entryBody(t, late[0])["signal_id"]
	for _, en := range trailWhere(t, e, trail.EventSignalDelivered, nil) {
		if entryBody(t, en)["signal_id"] == id {
			t.Errorf("late %s signal %v was delivered", typ, id)
		}
	}
}

// TestConcurrency_SingleWriter (invariant 1): transitions of one workspace
// are serialized, each evaluated against the state the one before left.
// Many coordinators' aborts, suspends and the agent's signals race on one
// workspace: exactly one abort succeeds, every other is refused
// (invalid_transition), and the workspace's transitions form one chain,
// each from the state the previous one reached.
func TestConcurrency_SingleWriter(t *testing.T) {
	const racers = 12
	e := openTest(t)
	for round := 0; round < 3; round++ {
		w := newWorker(t, e)
		var (
			wg              sync.WaitGroup
			start           = make(chan struct{})
			mu              sync.Mutex
			aborted, others int
			unexpected      []error
		)
		for i := 0; i < racers; i++ {
			wg.Add(3)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.Abort(ctx, e.Root(), w.ID, "race")
				mu.Lock()
				defer mu.Unlock()
				switch code := Code(err); {
				case err == nil:
					aborted++
				case code == wire.CodeInvalidTransition:
					others++
				default:
					unexpected = append(unexpected, err)
				}
			}()
			go func() {
				defer wg.Done()
				<-start
				e.Suspend(ctx, e.Root(), w.ID, "race") // refused once failed or suspended
				e.Resume(ctx, e.Root(), w.ID)
			}()
			go func() {
				defer wg.Done()
				<-start
				e.EmitSignal(ctx, w.ID, []byte(`{"type":"blocked","reason":"race"}`))
				e.EmitSignal(ctx, w.ID, []byte(`{"type":"started"}`))
			}()
		}
		close(start)
		wg.Wait()
		if aborted != 1 || others != racers-1 || len(unexpected) != 0 {
			t.Fatalf("round %d: %d aborts succeeded, %d refused invalid_transition, others %v; want 1, %d, none",
				round, aborted, others, unexpected, racers-1)
		}
		changes := stateChanges(t, e, w.ID)
		for i := 1; i < len(changes); i++ {
			if changes[i][0] != changes[i-1][1] {
				t.Fatalf("round %d: transition %d is %s -> %s after one to %s: two transitions saw the same state",
					round, i, changes[i][0], changes[i][1], changes[i-1][1])
			}
		}
		if last := changes[len(changes)-1]; last[1] != string(workspace.Failed) {
			t.Fatalf("round %d: last transition %v, want to failed", round, last)
		}
	}
	verify(t, e)
}

// TestConcurrency_AbortPrecedence (invariant 2): an abort — the
// coordinator's, a person's, a group's — that arrives while the agent's
// complete is already waiting runs first; the workspace fails without
// passing through integrating, and the complete is recorded in the trail
// with no effect and refused.
func TestConcurrency_AbortPrecedence(t *testing.T) {
	tests := []struct {
		name, reason string
		abort        func(e *Engine, root, ws string) error
	}{
		{"coordinator", "aborted_by_coordinator", func(e *Engine, root, ws string) error {
			_, err := e.Abort(ctx, root, ws, "stop now")
			return err
		}},
		{"person", ReasonAbortedByHuman, func(e *Engine, root, ws string) error {
			_, err := e.UserAbort(ctx, "alice", wire.IDRequest{ID: ws, Reason: "stop now"})
			return err
		}},
		{"group", "batch_abort", func(e *Engine, root, ws string) error {
			_, err := e.BatchAbort(ctx, root, "batch-1", "stop now")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openTest(t)
			mkUser(t, e, "alice", user.AbortAny)
			w := newWorker(t, e, map[string]any{"group": "batch-1"})
			checkpoint(t, e, w.ID, nil, "final")
			root := e.Root() // takes the lock the held committer keeps
			release := holdCommitter(t, e)
			complete := queued(t, e.queue.C, 1, "complete", func() error {
				_, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"complete"}`))
				return err
			})
			abort := queued(t, e.queue.Urgent(), 1, "abort", func() error { return tt.abort(e, root, w.ID) })
			release()
			if err := <-abort; err != nil {
				t.Fatalf("abort: %v", err)
			}
			wantLate(t, e, w.ID, "complete", <-complete)
			changes := stateChanges(t, e, w.ID)
			if last := changes[len(changes)-1]; last != [2]string{"active", "failed"} {
				t.Fatalf("last transition %v, want active -> failed (the abort before the queued complete)", last)
			}
			failed := trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": w.ID, "to_state": "failed"})
			if len(failed) != 1 || entryBody(t, failed[0])["reason"] != tt.reason {
				t.Fatalf("failed transitions = %v, want one, %s", failed, tt.reason)
			}
			verify(t, e)
		})
	}
}

// TestConcurrency_ExternalFailurePrecedence (invariant 3): a runtime or
// protocol failure — a timeout, the compute budget, a grace period running
// out — that arrives while the agent's complete is waiting runs first, as
// an abort does; the complete is recorded with no effect.
func TestConcurrency_ExternalFailurePrecedence(t *testing.T) {
	tests := []struct {
		name   string
		extra  map[string]any
		setup  func(t *testing.T, e *Engine, clk *fakeClock, ws string)
		fail   func(e *Engine, clk *fakeClock) (int, error)
		reason string
	}{
		{"timeout", map[string]any{"timeout": "1m"},
			func(t *testing.T, e *Engine, clk *fakeClock, ws string) { clk.Advance(2 * time.Minute) },
			func(e *Engine, clk *fakeClock) (int, error) { return e.ExpireTimeouts(ctx, clk.Now()) },
			"timeout"},
		{"compute budget", map[string]any{"budget": map[string]any{"compute_budget": map[string]any{"token_limit": 0, "compute_timeout": "1m"}}},
			func(t *testing.T, e *Engine, clk *fakeClock, ws string) { clk.Advance(2 * time.Minute) },
			func(e *Engine, clk *fakeClock) (int, error) { return e.ExpireComputeBudgets(ctx) },
			"budget_exceeded"},
		{"grace period", nil,
			func(t *testing.T, e *Engine, clk *fakeClock, ws string) {
				askGrace(t, e, ws, "1m")
				clk.Advance(2 * time.Minute)
			},
			func(e *Engine, clk *fakeClock) (int, error) { return e.ExpireGracePeriods(ctx, clk.Now()) },
			"graceful_termination_expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			e := openTest(t, withFakeClock(clk))
			w := newWorker(t, e, tt.extra)
			checkpoint(t, e, w.ID, nil, "final")
			tt.setup(t, e, clk, w.ID)
			release := holdCommitter(t, e)
			complete := queued(t, e.queue.C, 1, "complete", func() error {
				_, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"complete"}`))
				return err
			})
			var n int
			failure := queued(t, e.queue.Urgent(), 1, tt.name, func() (err error) {
				n, err = tt.fail(e, clk)
				return err
			})
			release()
			if err := <-failure; err != nil || n != 1 {
				t.Fatalf("%s = %d, %v; want 1 failed", tt.name, n, err)
			}
			wantLate(t, e, w.ID, "complete", <-complete)
			failed := trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": w.ID, "to_state": "failed"})
			if len(failed) != 1 {
				t.Fatalf("%d transitions to failed, want 1", len(failed))
			}
			if b := entryBody(t, failed[0]); b["from_state"] != "active" || b["reason"] != tt.reason {
				t.Fatalf("failed transition %v, want from active, reason %s", b, tt.reason)
			}
			verify(t, e)
		})
	}
}

// TestConcurrency_SignalEmissionOrder (invariant 4): the signals of one
// workspace reach its parent in emission order — the parent's trail
// (signal_delivered) and the outbox the daemon publishes from — while
// other workspaces emit at the same time.
func TestConcurrency_SignalEmissionOrder(t *testing.T) {
	const workers, each = 6, 10
	e := openTest(t)
	ids := make([]string, workers)
	for i := range ids {
		ids[i] = newWorker(t, e).ID
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				body := fmt.Sprintf(`{"type":"blocked","reason":"step %02d"}`, j)
				if j%2 == 1 {
					body = fmt.Sprintf(`{"type":"started","reason":"step %02d"}`, j)
				}
				if _, err := e.EmitSignal(ctx, id, []byte(body)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		var emitted []string // signal ids in emission order (the agent's own trail)
		steps := map[string]bool{}
		for _, en := range localEntries(t, e, id, trail.EventSignalEmitted) {
			if b := entryBody(t, en); strings.HasPrefix(fmt.Sprint(b["reason"]), "step ") {
				emitted = append(emitted, fmt.Sprint(b["signal_id"]))
				steps[fmt.Sprint(b["signal_id"])] = true
			}
		}
		if len(emitted) != each {
			t.Fatalf("%s: %d signals emitted, want %d", id, len(emitted), each)
		}
		var delivered []string
		for _, en := range localEntries(t, e, e.Root(), trail.EventSignalDelivered) {
			if b := entryBody(t, en); b["from"] == id && steps[fmt.Sprint(b["signal_id"])] {
				delivered = append(delivered, fmt.Sprint(b["signal_id"]))
			}
		}
		var published []string
		for _, o := range outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.From == id && steps[o.Signal.ID] }) {
			published = append(published, o.Signal.ID)
		}
		for what, got := range map[string][]string{"delivered": delivered, "outbox": published} {
			if fmt.Sprint(got) != fmt.Sprint(emitted) {
				t.Errorf("%s: %s order %v, want the emission order %v", id, what, got, emitted)
			}
		}
		for j, sid := range emitted {
			en := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"signal_id": sid})
			if want := fmt.Sprintf("step %02d", j); len(en) != 1 || entryBody(t, en[0])["reason"] != want {
				t.Errorf("%s: signal %d is %v, want reason %q", id, j, en, want)
			}
		}
	}
}

// TestConcurrency_TrailMonotonicity (invariant 5): within a workspace the
// trail's timestamps strictly increase, with no duplicates, when the wall
// clock stands still and when it goes back, under concurrent writers.
func TestConcurrency_TrailMonotonicity(t *testing.T) {
	clk := newFakeClock()
	e := openTest(t, withFakeClock(clk))
	ws := []string{newWorker(t, e).ID, newWorker(t, e).ID, newWorker(t, e).ID}
	var wg sync.WaitGroup
	for i, id := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var head *string
			for j := 0; j < 8; j++ {
				if i == 0 && j == 4 {
					clk.Advance(-time.Hour) // the wall clock steps back
				}
				cp, err := e.CreateCheckpoint(ctx, id, cpReq(head, "provisional"))
				if err != nil {
					t.Error(err)
					return
				}
				head = &cp.ID
			}
		}()
	}
	wg.Wait()
	for _, id := range append(ws, e.Root()) {
		entries, err := e.Trail().ReadLocal(ctx, id, "", trail.MaxLimit)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(entries); i++ {
			if entries[i].Timestamp <= entries[i-1].Timestamp {
				t.Fatalf("%s: entry %d at %s after %s: timestamps not strictly increasing", id, i, entries[i].Timestamp, entries[i-1].Timestamp)
			}
		}
	}
	verify(t, e)
}

// TestConcurrency_TimeoutRace (invariant 6): when a timeout and the
// agent's complete race, the first processed wins. Complete first: the
// workspace is integrating and the timeout, due since, does nothing (it is
// not applicable while integrating), then the accept closes it (or a
// revise fails it, revision_required: nothing leads back to active). Timeout
// first: failed with reason timeout, and the late complete is recorded with
// no effect. Both waiting at once: the timeout runs first (invariant 3).
func TestConcurrency_TimeoutRace(t *testing.T) {
	setup := func(t *testing.T) (*Engine, *fakeClock, string) {
		clk := newFakeClock()
		e := openTest(t, withFakeClock(clk))
		w := newWorker(t, e, map[string]any{"timeout": "1m"})
		checkpoint(t, e, w.ID, nil, "final")
		return e, clk, w.ID
	}
	expire := func(t *testing.T, e *Engine, clk *fakeClock, want int) {
		t.Helper()
		if n, err := e.ExpireTimeouts(ctx, clk.Now()); err != nil || n != want {
			t.Fatalf("ExpireTimeouts = %d, %v; want %d", n, err, want)
		}
	}
	t.Run("complete first", func(t *testing.T) {
		e, clk, ws := setup(t)
		emitOK(t, e, ws, `{"type":"complete"}`)
		clk.Advance(2 * time.Minute)
		expire(t, e, clk, 0)
		if st := wsState(t, e, ws); st != workspace.Integrating {
			t.Fatalf("state = %s, want integrating (the timeout cancelled)", st)
		}
		res, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": ws, "decision": "accept"}))
		if err != nil || res.Outcome != "closed" {
			t.Fatalf("Integrate(accept) = %+v, %v; want closed", res, err)
		}
		expire(t, e, clk, 0)
		if n := len(trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": ws, "to_state": "failed"})); n != 0 {
			t.Fatalf("%d transitions to failed, want none", n)
		}
	})
	t.Run("complete first, then revise", func(t *testing.T) {
		// No way leads back from integrating to active (a revise fails the
		// workspace, revision_required): the timeout never comes back.
		e, clk, ws := setup(t)
		emitOK(t, e, ws, `{"type":"complete"}`)
		clk.Advance(2 * time.Minute)
		if _, err := e.Integrate(ctx, e.Root(), integrateBody(ws, DecisionRevise)); err != nil {
			t.Fatalf("Integrate(revise): %v", err)
		}
		expire(t, e, clk, 0)
		failed := trailWhere(t, e, trail.EventWorkspaceStateChanged, map[string]string{"workspace_id": ws, "to_state": "failed"})
		if len(failed) != 1 || entryBody(t, failed[0])["reason"] != "revision_required" {
			t.Fatalf("failed transitions %v, want one, revision_required", failed)
		}
	})
	t.Run("timeout first", func(t *testing.T) {
		e, clk, ws := setup(t)
		clk.Advance(2 * time.Minute)
		expire(t, e, clk, 1)
		_, err := e.EmitSignal(ctx, ws, []byte(`{"type":"complete"}`))
		wantLate(t, e, ws, "complete", err)
		if st := wsState(t, e, ws); st != workspace.Failed {
			t.Fatalf("state = %s, want failed", st)
		}
	})
	t.Run("both waiting", func(t *testing.T) {
		e, clk, ws := setup(t)
		clk.Advance(2 * time.Minute)
		release := holdCommitter(t, e)
		complete := queued(t, e.queue.C, 1, "complete", func() error {
			_, err := e.EmitSignal(ctx, ws, []byte(`{"type":"complete"}`))
			return err
		})
		var n int
		timeout := queued(t, e.queue.Urgent(), 1, "timeout", func() (err error) {
			n, err = e.ExpireTimeouts(ctx, clk.Now())
			return err
		})
		release()
		if err := <-timeout; err != nil || n != 1 {
			t.Fatalf("ExpireTimeouts = %d, %v; want 1", n, err)
		}
		wantLate(t, e, ws, "complete", <-complete)
		verify(t, e)
	})
}

// TestConcurrency_LateSignalsRecordedOnly: every agent signal that finds
// its workspace terminal is recorded and refused, and changes nothing: no
// transition, no delivery, no outbox item.
func TestConcurrency_LateSignalsRecordedOnly(t *testing.T) {
	e := openTest(t)
	w := newWorker(t, e)
	if _, err := e.Abort(ctx, e.Root(), w.ID, ""); err != nil {
		t.Fatal(err)
	}
	before := len(stateChanges(t, e, w.ID))
	outbox := len(outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.From == w.ID }))
	for _, typ := range []string{"complete", "blocked", "started", "failed"} {
		body, _ := json.Marshal(map[string]string{"type": typ, "reason": "late"})
		_, err := e.EmitSignal(ctx, w.ID, body)
		wantLate(t, e, w.ID, typ, err)
	}
	if n := len(stateChanges(t, e, w.ID)); n != before {
		t.Errorf("%d transitions after the late signals, want %d", n, before)
	}
	if n := len(outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.From == w.ID })); n != outbox {
		t.Errorf("%d outbox items from %s after the late signals, want %d", n, w.ID, outbox)
	}
	if st := wsState(t, e, w.ID); st != workspace.Failed {
		t.Errorf("state = %s, want failed", st)
	}
	verify(t, e)
}

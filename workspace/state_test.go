package workspace_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/workspace"
)

// toPre marks a row of specTable whose target is the stored pre-state.
const toPre workspace.State = "<stored pre-state>"

// transition is one row of the expected transition table.
type transition struct {
	from    workspace.State
	trigger workspace.Trigger
	to      workspace.State
}

// specNonTerminal lists the seven non-terminal states (WACP Workspace §3).
var specNonTerminal = []workspace.State{
	workspace.Idle, workspace.Active, workspace.Blocked, workspace.Suspended,
	workspace.Migrating, workspace.Integrating, workspace.Conflicted,
}

// specTable returns the expected transition table, written by hand from WACP
// Workspace §3 (transition rules) and the digest §3.4, and deliberately not
// derived from the package's own table. Abort, parent_failed (failure
// cascade) and system_shutdown (forced shutdown) are allowed from every
// non-terminal state. observer_started is wacpd's documented deviation.
func specTable() []transition {
	rows := []transition{
		// idle
		{workspace.Idle, workspace.FirstEnvelope, workspace.Active},
		{workspace.Idle, workspace.ObserverStarted, workspace.Active},
		{workspace.Idle, workspace.CreationError, workspace.Failed},
		{workspace.Idle, workspace.Timeout, workspace.Failed},
		{workspace.Idle, workspace.AgentFailed, workspace.Failed},
		// active
		{workspace.Active, workspace.Migrate, workspace.Migrating},
		{workspace.Active, workspace.AgentBlocked, workspace.Blocked},
		{workspace.Active, workspace.AgentComplete, workspace.Integrating},
		{workspace.Active, workspace.AgentFailed, workspace.Failed},
		{workspace.Active, workspace.Timeout, workspace.Failed},
		{workspace.Active, workspace.BudgetExceeded, workspace.Failed},
		{workspace.Active, workspace.Suspend, workspace.Suspended},
		{workspace.Active, workspace.GraceExpired, workspace.Failed},
		// blocked
		{workspace.Blocked, workspace.AgentStarted, workspace.Active},
		{workspace.Blocked, workspace.Migrate, workspace.Migrating},
		{workspace.Blocked, workspace.Suspend, workspace.Suspended},
		{workspace.Blocked, workspace.Timeout, workspace.Failed},
		{workspace.Blocked, workspace.BudgetExceeded, workspace.Failed},
		{workspace.Blocked, workspace.AgentFailed, workspace.Failed},
		{workspace.Blocked, workspace.GraceExpired, workspace.Failed},
		// migrating
		{workspace.Migrating, workspace.MigrationCompleted, toPre},
		{workspace.Migrating, workspace.MigrationError, workspace.Failed},
		// suspended
		{workspace.Suspended, workspace.Resume, toPre},
		// integrating
		{workspace.Integrating, workspace.IntegrationSucceeded, workspace.Closed},
		{workspace.Integrating, workspace.ConflictDetected, workspace.Conflicted},
		{workspace.Integrating, workspace.IntegrationFailed, workspace.Failed},
		// conflicted
		{workspace.Conflicted, workspace.ConflictResolved, workspace.Closed},
		{workspace.Conflicted, workspace.ConflictUnresolved, workspace.Failed},
		{workspace.Conflicted, workspace.ConflictTimeout, workspace.Failed},
	}
	for _, s := range specNonTerminal {
		for _, trig := range []workspace.Trigger{workspace.Abort, workspace.ParentFailed, workspace.SystemShutdown, workspace.BatchAbort} {
			rows = append(rows, transition{s, trig, workspace.Failed})
		}
	}
	return rows
}

// specTriggers lists every trigger the spec table uses, by hand.
var specTriggers = []workspace.Trigger{
	workspace.FirstEnvelope, workspace.ObserverStarted, workspace.CreationError,
	workspace.AgentBlocked, workspace.AgentStarted, workspace.AgentComplete, workspace.AgentFailed,
	workspace.Abort, workspace.ParentFailed, workspace.SystemShutdown,
	workspace.Timeout, workspace.BudgetExceeded,
	workspace.Migrate, workspace.MigrationCompleted, workspace.MigrationError,
	workspace.Suspend, workspace.Resume,
	workspace.IntegrationSucceeded, workspace.ConflictDetected, workspace.IntegrationFailed,
	workspace.ConflictResolved, workspace.ConflictUnresolved, workspace.ConflictTimeout,
	workspace.GraceExpired, workspace.BatchAbort,
}

// expect returns what Next(from, pre, trig) must return according to rows.
func expect(rows []transition, from, pre workspace.State, trig workspace.Trigger) (to, newPre workspace.State, ok bool) {
	for _, r := range rows {
		if r.from != from || r.trigger != trig {
			continue
		}
		switch {
		case r.to == toPre:
			if pre != workspace.Active && pre != workspace.Blocked {
				return "", "", false
			}
			return pre, "", true
		case r.to == workspace.Suspended || r.to == workspace.Migrating:
			return r.to, from, true
		default:
			return r.to, "", true
		}
	}
	return "", "", false
}

// anyPre lists stored pre-states that must not matter except on resumption.
var anyPre = []workspace.State{"", workspace.Active, workspace.Blocked, workspace.Idle, workspace.Failed}

func preName(s workspace.State) string {
	if s == "" {
		return "pre=none"
	}
	return "pre=" + string(s)
}

// checkEdge asserts that from moves to want on trig whatever the stored
// pre-state, and that entering suspended or migrating stores from.
func checkEdge(t *testing.T, from workspace.State, trig workspace.Trigger, want workspace.State) {
	t.Helper()
	wantPre := workspace.State("")
	if want == workspace.Suspended || want == workspace.Migrating {
		wantPre = from
	}
	for _, pre := range anyPre {
		t.Run(preName(pre), func(t *testing.T) {
			to, newPre, err := workspace.Next(from, pre, trig)
			if err != nil || to != want || newPre != wantPre {
				t.Errorf("Next(%q, %q, %q) = %q, %q, %v, want %q, %q, nil", from, pre, trig, to, newPre, err, want, wantPre)
			}
		})
	}
}

// checkResume enters via enter from before, then leaves via leave, and
// asserts that the workspace returns to before.
func checkResume(t *testing.T, before workspace.State, enter workspace.Trigger, via workspace.State, leave workspace.Trigger) {
	t.Helper()
	t.Run("enter", func(t *testing.T) {
		to, newPre, err := workspace.Next(before, "", enter)
		if err != nil || to != via || newPre != before {
			t.Errorf("Next(%q, %q, %q) = %q, %q, %v, want %q, %q, nil", before, "", enter, to, newPre, err, via, before)
		}
	})
	t.Run("leave", func(t *testing.T) {
		to, newPre, err := workspace.Next(via, before, leave)
		if err != nil || to != before || newPre != "" {
			t.Errorf("Next(%q, %q, %q) = %q, %q, %v, want %q, %q, nil", via, before, leave, to, newPre, err, before, "")
		}
	})
}

// The transitions of the spec table, one test each.

func TestTransition_IdleToActive_FirstEnvelope(t *testing.T) {
	checkEdge(t, workspace.Idle, workspace.FirstEnvelope, workspace.Active)
}

// ObserverStarted is the wacpd deviation (package doc, docs/conformance.md).
func TestTransition_IdleToActive_ObserverStarted(t *testing.T) {
	checkEdge(t, workspace.Idle, workspace.ObserverStarted, workspace.Active)
}

func TestTransition_IdleToFailed_CreationError(t *testing.T) {
	checkEdge(t, workspace.Idle, workspace.CreationError, workspace.Failed)
}

func TestTransition_IdleToFailed_Timeout(t *testing.T) {
	checkEdge(t, workspace.Idle, workspace.Timeout, workspace.Failed)
}

func TestTransition_ActiveToMigrating(t *testing.T) {
	checkEdge(t, workspace.Active, workspace.Migrate, workspace.Migrating)
}

func TestTransition_ActiveToBlocked(t *testing.T) {
	checkEdge(t, workspace.Active, workspace.AgentBlocked, workspace.Blocked)
}

func TestTransition_ActiveToIntegrating(t *testing.T) {
	checkEdge(t, workspace.Active, workspace.AgentComplete, workspace.Integrating)
}

func TestTransition_ActiveToFailed_AgentFailed(t *testing.T) {
	checkEdge(t, workspace.Active, workspace.AgentFailed, workspace.Failed)
}

func TestTransition_ActiveToFailed_Timeout(t *testing.T) {
	checkEdge(t, workspace.Active, workspace.Timeout, workspace.Failed)
}

func TestTransition_ActiveToFailed_BudgetExceeded(t *testing.T) {
	checkEdge(t, workspace.Active, workspace.BudgetExceeded, workspace.Failed)
}

func TestTransition_ActiveToSuspended(t *testing.T) {
	checkEdge(t, workspace.Active, workspace.Suspend, workspace.Suspended)
}

func TestTransition_BlockedToActive(t *testing.T) {
	checkEdge(t, workspace.Blocked, workspace.AgentStarted, workspace.Active)
}

func TestTransition_BlockedToMigrating(t *testing.T) {
	checkEdge(t, workspace.Blocked, workspace.Migrate, workspace.Migrating)
}

func TestTransition_BlockedToSuspended(t *testing.T) {
	checkEdge(t, workspace.Blocked, workspace.Suspend, workspace.Suspended)
}

func TestTransition_BlockedToFailed_Timeout(t *testing.T) {
	checkEdge(t, workspace.Blocked, workspace.Timeout, workspace.Failed)
}

func TestTransition_BlockedToFailed_BudgetExceeded(t *testing.T) {
	checkEdge(t, workspace.Blocked, workspace.BudgetExceeded, workspace.Failed)
}

func TestTransition_MigratingToActive_ResumesPreState(t *testing.T) {
	checkResume(t, workspace.Active, workspace.Migrate, workspace.Migrating, workspace.MigrationCompleted)
}

func TestTransition_MigratingToBlocked_ResumesPreState(t *testing.T) {
	checkResume(t, workspace.Blocked, workspace.Migrate, workspace.Migrating, workspace.MigrationCompleted)
}

func TestTransition_MigratingToFailed_MigrationError(t *testing.T) {
	checkEdge(t, workspace.Migrating, workspace.MigrationError, workspace.Failed)
}

func TestTransition_SuspendedToActive_ResumesPreState(t *testing.T) {
	checkResume(t, workspace.Active, workspace.Suspend, workspace.Suspended, workspace.Resume)
}

func TestTransition_SuspendedToBlocked_ResumesPreState(t *testing.T) {
	checkResume(t, workspace.Blocked, workspace.Suspend, workspace.Suspended, workspace.Resume)
}

// Suspended → failed on "system-level forced shutdown".
func TestTransition_SuspendedToFailed_SystemShutdown(t *testing.T) {
	checkEdge(t, workspace.Suspended, workspace.SystemShutdown, workspace.Failed)
}

func TestTransition_IntegratingToClosed(t *testing.T) {
	checkEdge(t, workspace.Integrating, workspace.IntegrationSucceeded, workspace.Closed)
}

func TestTransition_IntegratingToConflicted(t *testing.T) {
	checkEdge(t, workspace.Integrating, workspace.ConflictDetected, workspace.Conflicted)
}

func TestTransition_IntegratingToFailed_IntegrationFailed(t *testing.T) {
	checkEdge(t, workspace.Integrating, workspace.IntegrationFailed, workspace.Failed)
}

func TestTransition_ConflictedToClosed(t *testing.T) {
	checkEdge(t, workspace.Conflicted, workspace.ConflictResolved, workspace.Closed)
}

func TestTransition_ConflictedToFailed_Unresolvable(t *testing.T) {
	checkEdge(t, workspace.Conflicted, workspace.ConflictUnresolved, workspace.Failed)
}

func TestTransition_ConflictedToFailed_Timeout(t *testing.T) {
	checkEdge(t, workspace.Conflicted, workspace.ConflictTimeout, workspace.Failed)
}

// Abort is allowed from every non-terminal state.

func TestTransition_IdleToFailed_Abort(t *testing.T) {
	checkEdge(t, workspace.Idle, workspace.Abort, workspace.Failed)
}

func TestTransition_ActiveToFailed_Abort(t *testing.T) {
	checkEdge(t, workspace.Active, workspace.Abort, workspace.Failed)
}

func TestTransition_BlockedToFailed_Abort(t *testing.T) {
	checkEdge(t, workspace.Blocked, workspace.Abort, workspace.Failed)
}

func TestTransition_MigratingToFailed_Abort(t *testing.T) {
	checkEdge(t, workspace.Migrating, workspace.Abort, workspace.Failed)
}

func TestTransition_SuspendedToFailed_Abort(t *testing.T) {
	checkEdge(t, workspace.Suspended, workspace.Abort, workspace.Failed)
}

func TestTransition_IntegratingToFailed_Abort(t *testing.T) {
	checkEdge(t, workspace.Integrating, workspace.Abort, workspace.Failed)
}

func TestTransition_ConflictedToFailed_Abort(t *testing.T) {
	checkEdge(t, workspace.Conflicted, workspace.Abort, workspace.Failed)
}

// The failure cascade fails same-owner descendants in any non-terminal state.
func TestTransition_NonTerminalToFailed_ParentFailed(t *testing.T) {
	for _, s := range specNonTerminal {
		t.Run(string(s), func(t *testing.T) { checkEdge(t, s, workspace.ParentFailed, workspace.Failed) })
	}
}

// A forced shutdown fails every non-terminal workspace.
func TestTransition_NonTerminalToFailed_SystemShutdown(t *testing.T) {
	for _, s := range specNonTerminal {
		t.Run(string(s), func(t *testing.T) { checkEdge(t, s, workspace.SystemShutdown, workspace.Failed) })
	}
}

// TestTransition_Illegal checks every (state, pre-state, trigger) triple
// against the hand-written table: exactly its rows succeed, with exactly its
// results, and everything else is an *TransitionError wrapping
// ErrInvalidTransition.
func TestTransition_Illegal(t *testing.T) {
	rows := specTable()
	states := append(workspace.States(), "", "bogus")
	pres := append([]workspace.State{""}, workspace.States()...)
	pres = append(pres, "bogus")
	triggers := append(workspace.Triggers(), "", "bogus")
	slices.Sort(triggers)

	legal := map[transition]bool{}
	for _, from := range states {
		t.Run(string(from)+"_", func(t *testing.T) {
			for _, trig := range triggers {
				for _, pre := range pres {
					to, newPre, err := workspace.Next(from, pre, trig)
					wantTo, wantPre, ok := expect(rows, from, pre, trig)
					if ok {
						if err != nil || to != wantTo || newPre != wantPre {
							t.Errorf("Next(%q, %q, %q) = %q, %q, %v, want %q, %q, nil", from, pre, trig, to, newPre, err, wantTo, wantPre)
						}
						legal[transition{from, trig, ""}] = true
						continue
					}
					if err == nil {
						t.Errorf("Next(%q, %q, %q) = %q, %q, nil, want error", from, pre, trig, to, newPre)
						continue
					}
					checkInvalid(t, err, from, trig)
					if to != "" || newPre != "" {
						t.Errorf("Next(%q, %q, %q) = %q, %q, %v, want \"\", \"\" with the error", from, pre, trig, to, newPre, err)
					}
				}
			}
		})
	}
	// Every row of the expected table was reached by some pre-state.
	for _, r := range rows {
		if !legal[transition{r.from, r.trigger, ""}] {
			t.Errorf("row %s --%s--> %s never succeeded", r.from, r.trigger, r.to)
		}
	}
}

// checkInvalid asserts err is a *TransitionError for (from, trig) that wraps
// ErrInvalidTransition.
func checkInvalid(t *testing.T, err error, from workspace.State, trig workspace.Trigger) {
	t.Helper()
	if !errors.Is(err, workspace.ErrInvalidTransition) {
		t.Errorf("Next(%q, _, %q) error = %v, want errors.Is ErrInvalidTransition", from, trig, err)
	}
	var te *workspace.TransitionError
	if !errors.As(err, &te) {
		t.Errorf("Next(%q, _, %q) error = %T, want *TransitionError", from, trig, err)
		return
	}
	if te.From != from || te.Trigger != trig {
		t.Errorf("Next(%q, _, %q) error = {From: %q, Trigger: %q}, want {From: %q, Trigger: %q}", from, trig, te.From, te.Trigger, from, trig)
	}
}

func TestTransition_TerminalStatesAbsorbEverything(t *testing.T) {
	triggers := append(workspace.Triggers(), "", "bogus")
	for _, from := range []workspace.State{workspace.Closed, workspace.Failed} {
		t.Run(string(from), func(t *testing.T) {
			if !from.Terminal() {
				t.Errorf("%q.Terminal() = false, want true", from)
			}
			for _, trig := range triggers {
				for _, pre := range append([]workspace.State{""}, workspace.States()...) {
					to, newPre, err := workspace.Next(from, pre, trig)
					if err == nil {
						t.Errorf("Next(%q, %q, %q) = %q, %q, nil, want error", from, pre, trig, to, newPre)
						continue
					}
					checkInvalid(t, err, from, trig)
				}
			}
		})
	}
}

// rank is the lifecycle position of a state: a legal transition never
// lowers it.
var rank = map[workspace.State]int{
	workspace.Idle:        0,
	workspace.Active:      1,
	workspace.Blocked:     1,
	workspace.Suspended:   1,
	workspace.Migrating:   1,
	workspace.Integrating: 2,
	workspace.Conflicted:  3,
	workspace.Closed:      4,
	workspace.Failed:      4,
}

func TestTransition_NoBackwardTransitions(t *testing.T) {
	for _, from := range workspace.States() {
		for _, trig := range workspace.Triggers() {
			for _, pre := range append([]workspace.State{""}, workspace.States()...) {
				to, _, err := workspace.Next(from, pre, trig)
				if err != nil {
					continue
				}
				name := fmt.Sprintf("Next(%q, %q, %q) = %q", from, pre, trig, to)
				if to == workspace.Idle {
					t.Errorf("%s, want anything but idle: nothing leads back to idle", name)
				}
				if (from == workspace.Integrating || from == workspace.Conflicted) &&
					(to == workspace.Active || to == workspace.Blocked || to == workspace.Suspended || to == workspace.Migrating) {
					t.Errorf("%s, want closed, conflicted or failed: no way back from %s", name, from)
				}
				if rank[to] < rank[from] {
					t.Errorf("%s, want a state no earlier in the lifecycle than %s", name, from)
				}
			}
		}
	}
}

func TestTransition_ResumeWithoutValidPreStateFails(t *testing.T) {
	bad := []workspace.State{"", workspace.Idle, workspace.Suspended, workspace.Migrating,
		workspace.Integrating, workspace.Conflicted, workspace.Closed, workspace.Failed, "bogus"}
	for _, tt := range []struct {
		from workspace.State
		trig workspace.Trigger
	}{
		{workspace.Suspended, workspace.Resume},
		{workspace.Migrating, workspace.MigrationCompleted},
	} {
		for _, pre := range bad {
			t.Run(fmt.Sprintf("%s/%s", tt.from, preName(pre)), func(t *testing.T) {
				to, newPre, err := workspace.Next(tt.from, pre, tt.trig)
				if err == nil {
					t.Fatalf("Next(%q, %q, %q) = %q, %q, nil, want error", tt.from, pre, tt.trig, to, newPre)
				}
				checkInvalid(t, err, tt.from, tt.trig)
			})
		}
	}
}

// Suspension and migration do not nest: the stored pre-state is always
// active or blocked.
func TestTransition_NoNestedSuspension(t *testing.T) {
	for _, from := range []workspace.State{workspace.Suspended, workspace.Migrating} {
		for _, trig := range []workspace.Trigger{workspace.Suspend, workspace.Migrate} {
			to, newPre, err := workspace.Next(from, workspace.Active, trig)
			if err == nil {
				t.Errorf("Next(%q, %q, %q) = %q, %q, nil, want error", from, workspace.Active, trig, to, newPre)
			}
		}
	}
}

func TestTriggers(t *testing.T) {
	got := workspace.Triggers()
	slices.Sort(got)
	want := slices.Clone(specTriggers)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Triggers() = %v, want %v", got, want)
	}
}

func TestStates(t *testing.T) {
	want := []workspace.State{"idle", "active", "blocked", "suspended", "migrating", "integrating", "conflicted", "closed", "failed"}
	if got := workspace.States(); !slices.Equal(got, want) {
		t.Errorf("States() = %v, want %v", got, want)
	}
	for _, s := range want {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false, want true", s)
		}
		if got, want := s.Terminal(), s == "closed" || s == "failed"; got != want {
			t.Errorf("%q.Terminal() = %v, want %v", s, got, want)
		}
	}
	for _, s := range []workspace.State{"", "Idle", "open", "deleted"} {
		if s.Valid() {
			t.Errorf("%q.Valid() = true, want false", s)
		}
	}
}

// TestTriggerNames freezes the persisted trigger strings: they are written to
// the trail as workspace_state_changed.trigger.
func TestTriggerNames(t *testing.T) {
	tests := []struct {
		trig workspace.Trigger
		want string
	}{
		{workspace.FirstEnvelope, "first_envelope_delivered"},
		{workspace.ObserverStarted, "observer_started"},
		{workspace.CreationError, "creation_error"},
		{workspace.AgentBlocked, "agent_blocked"},
		{workspace.AgentStarted, "agent_started"},
		{workspace.AgentComplete, "agent_complete"},
		{workspace.AgentFailed, "agent_failed"},
		{workspace.Abort, "abort"},
		{workspace.ParentFailed, "parent_failed"},
		{workspace.SystemShutdown, "system_shutdown"},
		{workspace.Timeout, "timeout"},
		{workspace.BudgetExceeded, "budget_exceeded"},
		{workspace.Migrate, "migrate"},
		{workspace.MigrationCompleted, "migration_completed"},
		{workspace.MigrationError, "migration_error"},
		{workspace.Suspend, "suspend"},
		{workspace.Resume, "resume"},
		{workspace.IntegrationSucceeded, "integration_succeeded"},
		{workspace.ConflictDetected, "conflict_detected"},
		{workspace.IntegrationFailed, "integration_failed"},
		{workspace.ConflictResolved, "conflict_resolved"},
		{workspace.ConflictUnresolved, "conflict_unresolvable"},
		{workspace.ConflictTimeout, "conflict_timeout"},
		{workspace.GraceExpired, "graceful_termination_expired"},
		{workspace.BatchAbort, "batch_abort"},
	}
	if len(tests) != len(specTriggers) {
		t.Fatalf("%d trigger names pinned, want %d", len(tests), len(specTriggers))
	}
	for _, tt := range tests {
		if string(tt.trig) != tt.want {
			t.Errorf("string(%v) = %q, want %q", tt.trig, string(tt.trig), tt.want)
		}
	}
}

func TestTransitionError(t *testing.T) {
	_, _, err := workspace.Next(workspace.Closed, "", workspace.Abort)
	if got, want := err.Error(), "workspace: no transition from closed on abort"; got != want {
		t.Errorf("Next(closed, \"\", abort).Error() = %q, want %q", got, want)
	}
	if got := errors.Unwrap(err); got != workspace.ErrInvalidTransition {
		t.Errorf("errors.Unwrap(%v) = %v, want ErrInvalidTransition", err, got)
	}
}

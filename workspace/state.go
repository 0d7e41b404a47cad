package workspace

import "fmt"

// State is a WACP workspace state. Persisted as its string value.
type State string

// The nine states (WACP Workspace §3); closed and failed are terminal.
const (
	Idle        State = "idle"
	Active      State = "active"
	Blocked     State = "blocked"
	Suspended   State = "suspended"
	Migrating   State = "migrating"
	Integrating State = "integrating"
	Conflicted  State = "conflicted"
	Closed      State = "closed"
	Failed      State = "failed"
)

// States returns the nine states in spec order.
func States() []State {
	return []State{Idle, Active, Blocked, Suspended, Migrating, Integrating, Conflicted, Closed, Failed}
}

// Valid reports whether s is one of the nine states.
func (s State) Valid() bool {
	for _, v := range States() {
		if s == v {
			return true
		}
	}
	return false
}

// Terminal reports whether s is closed or failed.
func (s State) Terminal() bool { return s == Closed || s == Failed }

// Trigger is what makes a workspace change state; it is recorded as the
// `trigger` of workspace_state_changed. Persisted as its string value.
type Trigger string

// Triggers of the transition table (WACP Workspace §3, digest §3.4).
const (
	FirstEnvelope        Trigger = "first_envelope_delivered" // idle → active
	ObserverStarted      Trigger = "observer_started"         // idle → active; deviation, see ObserverStarted doc in docs/conformance.md
	CreationError        Trigger = "creation_error"           // idle → failed
	AgentBlocked         Trigger = "agent_blocked"            // active → blocked
	AgentStarted         Trigger = "agent_started"            // blocked → active
	AgentComplete        Trigger = "agent_complete"           // active → integrating
	AgentFailed          Trigger = "agent_failed"             // idle, active, blocked → failed (conformance deviation 2)
	Abort                Trigger = "abort"                    // any non-terminal → failed
	ParentFailed         Trigger = "parent_failed"            // any non-terminal → failed (failure cascade)
	SystemShutdown       Trigger = "system_shutdown"          // any non-terminal → failed (forced shutdown)
	Timeout              Trigger = "timeout"                  // idle, active, blocked → failed
	BudgetExceeded       Trigger = "budget_exceeded"          // active, blocked → failed
	Migrate              Trigger = "migrate"                  // active, blocked → migrating
	MigrationCompleted   Trigger = "migration_completed"      // migrating → pre-state
	MigrationError       Trigger = "migration_error"          // migrating → failed
	Suspend              Trigger = "suspend"                  // active, blocked → suspended
	Resume               Trigger = "resume"                   // suspended → pre-state
	IntegrationSucceeded Trigger = "integration_succeeded"    // integrating → closed
	ConflictDetected     Trigger = "conflict_detected"        // integrating → conflicted
	IntegrationFailed    Trigger = "integration_failed"       // integrating → failed (revise, reject, non-conflict error)
	ConflictResolved     Trigger = "conflict_resolved"        // conflicted → closed
	ConflictUnresolved   Trigger = "conflict_unresolvable"    // conflicted → failed
	ConflictTimeout      Trigger = "conflict_timeout"         // conflicted → failed
	// GraceExpired: a graceful termination's grace period ran out before
	// complete (Workspace §3); BatchAbort: the coordinator aborted the
	// workspace's group (Workspace §9).
	GraceExpired Trigger = "graceful_termination_expired" // active, blocked → failed
	BatchAbort   Trigger = "batch_abort"                  // any non-terminal → failed
)

// edge is one row of the transition table. to == "" means "the stored pre-state".
type edge struct {
	from []State
	to   State
}

var nonTerminal = []State{Idle, Active, Blocked, Suspended, Migrating, Integrating, Conflicted}

// table is the complete transition table; no other transition exists.
var table = map[Trigger]edge{
	FirstEnvelope:        {[]State{Idle}, Active},
	ObserverStarted:      {[]State{Idle}, Active},
	CreationError:        {[]State{Idle}, Failed},
	AgentBlocked:         {[]State{Active}, Blocked},
	AgentStarted:         {[]State{Blocked}, Active},
	AgentComplete:        {[]State{Active}, Integrating},
	AgentFailed:          {[]State{Idle, Active, Blocked}, Failed},
	Abort:                {nonTerminal, Failed},
	ParentFailed:         {nonTerminal, Failed},
	SystemShutdown:       {nonTerminal, Failed},
	Timeout:              {[]State{Idle, Active, Blocked}, Failed},
	BudgetExceeded:       {[]State{Active, Blocked}, Failed},
	Migrate:              {[]State{Active, Blocked}, Migrating},
	MigrationCompleted:   {[]State{Migrating}, ""},
	MigrationError:       {[]State{Migrating}, Failed},
	Suspend:              {[]State{Active, Blocked}, Suspended},
	Resume:               {[]State{Suspended}, ""},
	IntegrationSucceeded: {[]State{Integrating}, Closed},
	ConflictDetected:     {[]State{Integrating}, Conflicted},
	IntegrationFailed:    {[]State{Integrating}, Failed},
	ConflictResolved:     {[]State{Conflicted}, Closed},
	ConflictUnresolved:   {[]State{Conflicted}, Failed},
	ConflictTimeout:      {[]State{Conflicted}, Failed},
	GraceExpired:         {[]State{Active, Blocked}, Failed},
	BatchAbort:           {nonTerminal, Failed},
}

// Triggers returns every trigger of the transition table.
func Triggers() []Trigger {
	out := make([]Trigger, 0, len(table))
	for t := range table {
		out = append(out, t)
	}
	return out
}

// TransitionError is returned by Next for a transition the state machine does
// not have.
type TransitionError struct {
	From    State
	Trigger Trigger
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("workspace: no transition from %s on %s", e.From, e.Trigger)
}

// Unwrap returns ErrInvalidTransition.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// Next returns the state a workspace in state from moves to on trigger, and
// the pre-state to store (non-empty only when entering suspended or
// migrating). pre is the stored pre-state, used when resuming from suspended
// or migrating. Next is pure. Terminal states have no transitions.
func Next(from, pre State, trigger Trigger) (to, newPre State, err error) {
	e, ok := table[trigger]
	if !ok || !contains(e.from, from) {
		return "", "", &TransitionError{From: from, Trigger: trigger}
	}
	to = e.to
	if to == "" {
		if pre != Active && pre != Blocked {
			return "", "", &TransitionError{From: from, Trigger: trigger}
		}
		return pre, "", nil
	}
	if to == Suspended || to == Migrating {
		return to, from, nil
	}
	return to, "", nil
}

func contains(states []State, s State) bool {
	for _, v := range states {
		if v == s {
			return true
		}
	}
	return false
}

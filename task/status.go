package task

import (
	"fmt"
	"slices"
)

// Status is a task's lifecycle state. Persisted as its string value.
type Status string

// The eight states (Task spec §4); integrated and cancelled are terminal.
const (
	Draft      Status = "draft"
	Pending    Status = "pending"
	Assigned   Status = "assigned"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
	Failed     Status = "failed"
	Integrated Status = "integrated"
	Cancelled  Status = "cancelled"
)

// Statuses returns the eight states in spec order.
func Statuses() []Status {
	return []Status{Draft, Pending, Assigned, InProgress, Completed, Failed, Integrated, Cancelled}
}

// Valid reports whether s is one of the eight states.
func (s Status) Valid() bool { return slices.Contains(Statuses(), s) }

// Terminal reports whether s is integrated or cancelled.
func (s Status) Terminal() bool { return s == Integrated || s == Cancelled }

// Done reports whether s satisfies a dependency: completed or integrated.
func (s Status) Done() bool { return s == Completed || s == Integrated }

// Trigger is what moves a task (a row of the spec's state derivation
// table). Persisted as its string value.
type Trigger string

// The triggers of the derivation table (Task spec §4).
const (
	OnHumanApproval   Trigger = "human_approved"           // draft → pending
	OnTimeoutApproval Trigger = "approval_timeout_approve" // draft → pending
	OnTimeoutCancel   Trigger = "approval_timeout_cancel"  // draft → cancelled
	OnGateRejected    Trigger = "gate_rejected"            // draft → cancelled
	OnBind            Trigger = "bound"                    // pending → assigned
	OnStarted         Trigger = "started"                  // assigned → in_progress
	OnComplete        Trigger = "complete"                 // in_progress → completed
	OnFailed          Trigger = "failed"                   // assigned, in_progress → failed
	OnIntegrated      Trigger = "integration_completed"    // completed → integrated
	OnCancel          Trigger = "cancel"                   // any non-terminal → cancelled
	OnRetry           Trigger = "retry"                    // failed → pending
)

var nonTerminal = []Status{Draft, Pending, Assigned, InProgress, Completed, Failed}

// table is the whole derivation table; no other transition exists.
var table = map[Trigger]struct {
	from []Status
	to   Status
}{
	OnHumanApproval:   {[]Status{Draft}, Pending},
	OnTimeoutApproval: {[]Status{Draft}, Pending},
	OnTimeoutCancel:   {[]Status{Draft}, Cancelled},
	OnGateRejected:    {[]Status{Draft}, Cancelled},
	OnBind:            {[]Status{Pending}, Assigned},
	OnStarted:         {[]Status{Assigned}, InProgress},
	OnComplete:        {[]Status{InProgress}, Completed},
	OnFailed:          {[]Status{Assigned, InProgress}, Failed},
	OnIntegrated:      {[]Status{Completed}, Integrated},
	OnCancel:          {nonTerminal, Cancelled},
	OnRetry:           {[]Status{Failed}, Pending},
}

// Triggers returns every trigger of the derivation table, sorted.
func Triggers() []Trigger {
	out := make([]Trigger, 0, len(table))
	for t := range table {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// TransitionError is returned for a transition the lifecycle does not have.
type TransitionError struct {
	Task    string
	From    Status
	Trigger Trigger
}

func (e *TransitionError) Error() string {
	if e.Task == "" {
		return fmt.Sprintf("task: no transition from %s on %s", e.From, e.Trigger)
	}
	return fmt.Sprintf("task: %s is %s: no transition on %s", e.Task, e.From, e.Trigger)
}

// Unwrap returns ErrInvalidTransition.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// Next returns the status a task in status from moves to on trigger. It is
// pure; terminal states have no transitions.
func Next(from Status, trigger Trigger) (Status, error) {
	e, ok := table[trigger]
	if !ok || !slices.Contains(e.from, from) {
		return "", &TransitionError{From: from, Trigger: trigger}
	}
	return e.to, nil
}

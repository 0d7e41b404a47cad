package workspace

import "fmt"

// ValidPriority reports whether p is one of the four priorities.
func ValidPriority(p string) bool {
	switch p {
	case PriorityCritical, PriorityInteractive, PriorityNormal, PriorityBackground:
		return true
	}
	return false
}

// PriorityChangeable reports whether the priority of a workspace in state s
// may change (WACP Workspace §4 "Priority changes": active or blocked).
func PriorityChangeable(s State) bool { return s == Active || s == Blocked }

// Batch is the outcome of a batch operation on a group (WACP Workspace §9):
// the members it changed and those it skipped, each in id order.
type Batch struct {
	Affected []string
	Skipped  []string
}

// PlanBatchAbort splits a group's members (in id order) for batch_abort:
// every non-terminal member is aborted, a terminal one is skipped. Pure.
func PlanBatchAbort(members []*Workspace) Batch {
	b := Batch{Affected: []string{}, Skipped: []string{}}
	for _, w := range members {
		if w.State.Terminal() {
			b.Skipped = append(b.Skipped, w.ID)
		} else {
			b.Affected = append(b.Affected, w.ID)
		}
	}
	return b
}

// PlanBatchPriority splits a group's members (in id order) for a priority
// change to p: active and blocked members are changed, the others (idle,
// suspended, migrating, integrating, conflicted, terminal) are skipped;
// a member already at p is affected and changes nothing. An invalid p is
// an error wrapping ErrInvalidRequest. Pure.
func PlanBatchPriority(members []*Workspace, p string) (Batch, error) {
	if !ValidPriority(p) {
		return Batch{}, fmt.Errorf("%w: priority %q is not one of critical, interactive, normal, background", ErrInvalidRequest, p)
	}
	b := Batch{Affected: []string{}, Skipped: []string{}}
	for _, w := range members {
		if PriorityChangeable(w.State) {
			b.Affected = append(b.Affected, w.ID)
		} else {
			b.Skipped = append(b.Skipped, w.ID)
		}
	}
	return b, nil
}

// MaxGroupLen bounds a group id.
const MaxGroupLen = 256

// checkGroup checks a create request's group id (WACP Workspace §9: a
// free-form string the coordinator chooses; "" is no group): at most
// MaxGroupLen bytes, no control characters, not only spaces.
func checkGroup(g string) error {
	if g == "" {
		return nil
	}
	if len(g) > MaxGroupLen {
		return fmt.Errorf("group is longer than %d bytes", MaxGroupLen)
	}
	blank := true
	for _, r := range g {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("group %q has a control character", g)
		}
		if r != ' ' {
			blank = false
		}
	}
	if blank {
		return fmt.Errorf("group %q is blank", g)
	}
	return nil
}

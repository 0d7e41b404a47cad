package workspace

import "fmt"

// VisibilityGrantable reports whether a workspace in state s may receive a
// dynamic visibility grant (WACP Workspace §8 rule 4: active or blocked).
func VisibilityGrantable(s State) bool { return s == Active || s == Blocked }

// Grant adds target to w's visibility set (WACP Workspace §8, Visibility
// §4): w must be active or blocked, target another workspace not yet
// visible to it. The set only grows. The grantor's scope and the parent's
// containment need the tree and are the caller's. Errors wrap
// ErrInvalidRequest or, for the state, ErrInvalidTransition. Pure on w.
func Grant(w *Workspace, target string) error {
	switch {
	case !VisibilityGrantable(w.State):
		return fmt.Errorf("%w: workspace %s is %s; visibility is granted only to active or blocked workspaces", ErrInvalidTransition, w.ID, w.State)
	case target == "" || target == All:
		return fmt.Errorf("%w: target must be a workspace id", ErrInvalidRequest)
	case w.Sees(target):
		return fmt.Errorf("%w: workspace %s already sees %s", ErrInvalidRequest, w.ID, target)
	}
	w.Visibility = append(w.Visibility, target)
	return nil
}

package workspace

import "sort"

// CascadePlan is what the failure of one workspace does to its descendants
// (WACP Workspace §3, failure cascade).
type CascadePlan struct {
	// Fail lists the descendants that fail with parent_failed, parents
	// before children.
	Fail []string
	// Reparent lists the immediate children, of an owner other than their
	// failed parent's, that move under the coordinator with their subtrees.
	Reparent []string
}

// Cascade plans the failure cascade of workspace failed. children maps a
// workspace id to its children's ids; all holds every record. Same-owner
// non-terminal children fail, recursively; cross-owner non-terminal children
// are reparented to the coordinator (the root), keeping their owner,
// originator, state and subtree. When the root itself fails, everything
// non-terminal fails. Cascade is pure.
func Cascade(all map[string]*Workspace, children map[string][]string, failed string) CascadePlan {
	var p CascadePlan
	root := all[failed] != nil && all[failed].IsRoot()
	var walk func(id string)
	walk = func(id string) {
		owner := all[id].Owner
		kids := append([]string(nil), children[id]...)
		sort.Strings(kids) // ids are ULIDs: creation order
		for _, c := range kids {
			w := all[c]
			if w == nil {
				continue
			}
			if w.State.Terminal() {
				walk(c) // its descendants may still be live
				continue
			}
			if root || w.Owner == owner {
				p.Fail = append(p.Fail, c)
				walk(c)
				continue
			}
			p.Reparent = append(p.Reparent, c)
		}
	}
	if all[failed] != nil {
		walk(failed)
	}
	return p
}

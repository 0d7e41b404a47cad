package wire

// VisibilityGrantRequest is the body of workspace.visibility.grant: make
// Target visible to workspace ID, for Reason (WACP Workspace §8).
type VisibilityGrantRequest struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	Reason string `json:"reason"`
}

// PriorityRequest is the body of workspace.priority: workspace ID's new
// priority (critical, interactive, normal or background).
type PriorityRequest struct {
	ID       string `json:"id"`
	Priority string `json:"priority"`
}

// GroupAbortRequest is the body of group.abort: abort every non-terminal
// workspace of Group (WACP Workspace §9).
type GroupAbortRequest struct {
	Group  string `json:"group"`
	Reason string `json:"reason,omitempty"`
}

// GroupPriorityRequest is the body of group.priority: the new priority of
// the active and blocked workspaces of Group.
type GroupPriorityRequest struct {
	Group    string `json:"group"`
	Priority string `json:"priority"`
}

// Batch is the reply of group.abort and group.priority: what the batch
// operation's trail entry (batch_abort, batch_priority_changed) records.
// OldPriority and NewPriority are set by group.priority only; OldPriority
// is "mixed" when the affected workspaces had different priorities (each
// one's is in its priority_changed).
type Batch struct {
	GroupID     string   `json:"group_id"`
	OldPriority string   `json:"old_priority,omitempty"`
	NewPriority string   `json:"new_priority,omitempty"`
	Affected    []string `json:"affected_workspaces"`
	Skipped     []string `json:"skipped_workspaces"`
}

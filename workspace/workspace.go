package workspace

import (
	"encoding/json"
	"maps"
	"slices"
)

// Workspace priorities (WACP Workspace §4).
const (
	PriorityCritical    = "critical"
	PriorityInteractive = "interactive"
	PriorityNormal      = "normal"
	PriorityBackground  = "background"
)

// OriginatorSystem is the originator of every workspace the runtime creates
// without a human injection (WACP Causation).
const OriginatorSystem = "system"

// All is the visibility and authority entry of the root: everything.
const All = "*"

// Workspace is a workspace record: the WACP creation fields plus the
// runtime-owned state. Records are values; the runtime owns the live copy.
type Workspace struct {
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Parent           *string         `json:"parent"`
	State            State           `json:"state"`
	PreState         State           `json:"pre_state,omitempty"`
	Owner            string          `json:"owner"`
	Originator       string          `json:"originator"`
	Delegate         bool            `json:"delegate"`
	Directive        string          `json:"directive,omitempty"`
	TaskRef          string          `json:"task_ref,omitempty"`
	Context          json.RawMessage `json:"context,omitempty"`
	Visibility       []string        `json:"visibility"`
	Authority        []string        `json:"authority"`
	Timeout          string          `json:"timeout,omitempty"`
	Budget           *Budget         `json:"budget,omitempty"`
	Priority         string          `json:"priority"`
	Group            string          `json:"group,omitempty"`
	LivenessInterval string          `json:"liveness_interval,omitempty"`
	CreatedAt        string          `json:"created_at"`
	UpdatedAt        string          `json:"updated_at"`
	Reason           string          `json:"reason,omitempty"` // why it failed
	Agent            string          `json:"agent"`            // the bound agent's identity
	Meter            Meter           `json:"meter"`
	// Integration is the integration in progress while integrating or
	// conflicted; Conflicts are its unresolved conflicts.
	Integration *Integration `json:"integration,omitempty"`
	Conflicts   []Conflict   `json:"conflicts,omitempty"`
	// Liveness is the liveness monitor's state and Grace a graceful
	// termination in progress (liveness.go).
	Liveness Liveness `json:"liveness,omitzero"`
	Grace    Grace    `json:"grace,omitzero"`
}

// Integration records an integration that has started and not ended.
type Integration struct {
	Target     string `json:"target"`
	Mode       string `json:"mode"`
	Strategy   string `json:"strategy"`
	Checkpoint string `json:"checkpoint"`
	// Result is the coordinator's synthesis (integrate's result), merged
	// with the checkpoint when the conflicts are resolved.
	Result json.RawMessage `json:"result,omitempty"`
}

// Conflict types (WACP Integration spec, closed set).
const (
	ConflictContentOverlap        = "content_overlap"
	ConflictSemanticContradiction = "semantic_contradiction"
	ConflictDependencyViolation   = "dependency_violation"
	ConflictConstraintBreach      = "constraint_breach"
)

// Conflict is one conflict detected during integration.
type Conflict struct {
	ConflictType string   `json:"conflict_type"`
	Resources    []string `json:"resources"`
	Description  string   `json:"description"`
}

// Meter is the runtime's own resource meter of a workspace (WACP Workspace
// §6): active time, used to check agent-reported resource_usage.
type Meter struct {
	// ActiveSince is when the current active interval began; "" when the
	// workspace is not active.
	ActiveSince string `json:"active_since,omitempty"`
	// ActiveNanos is the active time accrued since the last checkpoint,
	// not counting the current interval.
	ActiveNanos int64 `json:"active_ns"`
	// Tokens and Cost are the external meter's cumulative readings at the
	// last checkpoint (see runtime.Meter); Metered reports whether they
	// were read.
	Tokens  int64   `json:"tokens,omitempty"`
	Cost    float64 `json:"cost,omitempty"`
	Metered bool    `json:"metered,omitempty"`
	// Warned lists the budget dimensions whose budget_warning was written.
	Warned []string `json:"warned,omitempty"`
	// ComputeNanos is the active time accrued before ActiveNanos's
	// interval: ComputeNanos + ActiveNanos + the current interval is the
	// workspace's compute time (compute_budget.compute_timeout). Written
	// only for a workspace with a budget (runtime/budget.go).
	ComputeNanos int64 `json:"compute_ns,omitempty"`
	// Used is the consumption the runtime meters by dimension for the
	// dimensions the workspace's budget limits and no record derives
	// (runtime/budget.go): reported or metered tokens and cost, context
	// size, bandwidth bytes.
	Used Usage `json:"used,omitempty"`
}

// Budget is a workspace budget (WACP Workspace §4). Nil parts are unlimited.
type Budget struct {
	ComputeBudget *ComputeBudget `json:"compute_budget,omitempty"`
	MemoryBudget  *MemoryBudget  `json:"memory_budget,omitempty"`
	StorageBudget *StorageBudget `json:"storage_budget,omitempty"`
	NetworkBudget *NetworkBudget `json:"network_budget,omitempty"`
	CostLimit     *float64       `json:"cost_limit,omitempty"`
}

// ComputeBudget limits tokens and active compute time.
type ComputeBudget struct {
	TokenLimit     int64  `json:"token_limit"`
	ComputeTimeout string `json:"compute_timeout,omitempty"`
}

// MemoryBudget limits the context size.
type MemoryBudget struct {
	ContextLimit int64 `json:"context_limit"`
}

// StorageBudget limits checkpoints and trail entries.
type StorageBudget struct {
	CheckpointLimit int64 `json:"checkpoint_limit"`
	TrailLimit      int64 `json:"trail_limit"`
}

// NetworkBudget limits bandwidth.
type NetworkBudget struct {
	BandwidthLimit int64 `json:"bandwidth_limit"`
}

// IsRoot reports whether w is the root workspace.
func (w *Workspace) IsRoot() bool { return w.Parent == nil }

// ParentID returns the parent's id, "" for the root.
func (w *Workspace) ParentID() string {
	if w.Parent == nil {
		return ""
	}
	return *w.Parent
}

// Clone returns a deep copy of w.
func (w *Workspace) Clone() *Workspace {
	c := *w
	if w.Parent != nil {
		p := *w.Parent
		c.Parent = &p
	}
	c.Visibility = slices.Clone(w.Visibility)
	c.Authority = slices.Clone(w.Authority)
	c.Context = slices.Clone(w.Context)
	c.Budget = w.Budget.Clone()
	c.Meter.Warned = slices.Clone(w.Meter.Warned)
	c.Meter.Used = maps.Clone(w.Meter.Used)
	if w.Integration != nil {
		in := *w.Integration
		c.Integration = &in
	}
	c.Conflicts = slices.Clone(w.Conflicts)
	return &c
}

// Sees reports whether w's visibility set includes target.
func (w *Workspace) Sees(target string) bool {
	return target == w.ID || slices.Contains(w.Visibility, All) || slices.Contains(w.Visibility, target)
}

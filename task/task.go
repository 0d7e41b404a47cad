package task

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/taxonomy"
)

// Priority is a task's priority (Task spec §2), inherited by the workspace
// a task is bound to. Persisted as its string value.
type Priority string

// The three task priorities.
const (
	PriorityNormal   Priority = "normal"
	PriorityElevated Priority = "elevated"
	PriorityUrgent   Priority = "urgent"
)

// Valid reports whether p is one of the three priorities.
func (p Priority) Valid() bool {
	return p == PriorityNormal || p == PriorityElevated || p == PriorityUrgent
}

// Task is a task record (Task spec §2). Every field is present in its JSON;
// the pointers are null where the spec says so.
type Task struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	Description      string    `json:"description"`
	DependsOn        []string  `json:"depends_on"`
	ParentTask       *string   `json:"parent_task"`
	Priority         Priority  `json:"priority"`
	ResourceEstimate *Estimate `json:"resource_estimate"`
	Status           Status    `json:"status"`
	WorkspaceRef     *string   `json:"workspace_ref"`
	WorkspaceHistory []string  `json:"workspace_history"`
	CheckpointRef    *string   `json:"checkpoint_ref"`
	GraphRef         string    `json:"graph_ref"`
	Timestamp        string    `json:"timestamp"`
	// Ready is computed by the runtime (View.Ready) and kept up to date as
	// dependencies complete; it is not part of the spec's schema.
	Ready bool `json:"ready"`
}

// Estimate is a task's optional resource estimate (Task spec §6): it
// informs budgets and is never enforced.
type Estimate struct {
	Tokens   *int64   `json:"tokens,omitempty"`
	WallTime string   `json:"wall_time,omitempty"` // a Go duration, > 0
	Cost     *float64 `json:"cost,omitempty"`
}

// Graph is a task graph record (Task spec §3).
type Graph struct {
	ID        string   `json:"id"`
	RootTask  string   `json:"root_task"`
	Tasks     []string `json:"tasks"`
	Timestamp string   `json:"timestamp"`
}

// Limits of a create request.
const (
	// MaxRequestTasks bounds the tasks of one create request.
	MaxRequestTasks = 1000
	// MaxNameBytes bounds a task's name; MaxDescriptionBytes its
	// description.
	MaxNameBytes        = 256
	MaxDescriptionBytes = 64 << 10
	// MaxDependencies bounds one task's depends_on.
	MaxDependencies = 256
)

// CreateRequest is the body of task.create: tasks to add to the graph
// named by Graph, or, when Graph is empty, a new graph whose root task is
// Tasks[0].
type CreateRequest struct {
	Graph string `json:"graph,omitempty"`
	Tasks []Spec `json:"tasks"`
}

// Spec is one task of a create request. DependsOn and ParentTask name
// tasks by id (tasks of the graph) or by the Key of another task of the
// same request.
type Spec struct {
	Key              string    `json:"key,omitempty"`
	Name             string    `json:"name"`
	Description      string    `json:"description,omitempty"`
	DependsOn        []string  `json:"depends_on,omitempty"`
	ParentTask       string    `json:"parent_task,omitempty"`
	Priority         Priority  `json:"priority,omitempty"`
	ResourceEstimate *Estimate `json:"resource_estimate,omitempty"`
}

// DecodeCreateRequest decodes and checks the shape of a create request:
// invalid UTF-8, nesting deeper than taxonomy.MaxNesting, unknown fields,
// wrong types and malformed values are errors wrapping ErrInvalidRequest.
// References are resolved by Plan.
func DecodeCreateRequest(data []byte) (CreateRequest, error) {
	if !utf8.Valid(data) {
		return CreateRequest{}, fmt.Errorf("%w: request is not valid UTF-8", ErrInvalidRequest)
	}
	if taxonomy.Nesting(data) > taxonomy.MaxNesting {
		return CreateRequest{}, fmt.Errorf("%w: request nests objects and arrays deeper than %d levels", ErrInvalidRequest, taxonomy.MaxNesting)
	}
	var r CreateRequest
	if err := strictjson.Decode(data, &r); err != nil {
		return CreateRequest{}, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return r, r.check()
}

// check checks what needs nothing but the request.
func (r CreateRequest) check() error {
	switch n := len(r.Tasks); {
	case n == 0:
		return bad("tasks: at least one task is required")
	case n > MaxRequestTasks:
		return bad("tasks: %d tasks, at most %d in one request", n, MaxRequestTasks)
	}
	keys := map[string]int{}
	for i, s := range r.Tasks {
		if err := s.check(); err != nil {
			return fmt.Errorf("tasks[%d]: %w", i, err)
		}
		if s.Key == "" {
			continue
		}
		if j, dup := keys[s.Key]; dup {
			return bad("tasks[%d]: key %q is also the key of tasks[%d]", i, s.Key, j)
		}
		keys[s.Key] = i
	}
	if r.Graph == "" && r.Tasks[0].ParentTask != "" {
		return bad("tasks[0]: the root task of a new graph has no parent_task")
	}
	return nil
}

func (s Spec) check() error {
	switch {
	case s.Name == "":
		return bad("name is required")
	case len(s.Name) > MaxNameBytes:
		return bad("name of %d bytes, at most %d", len(s.Name), MaxNameBytes)
	case len(s.Description) > MaxDescriptionBytes:
		return bad("description of %d bytes, at most %d", len(s.Description), MaxDescriptionBytes)
	case len(s.DependsOn) > MaxDependencies:
		return bad("depends_on: %d tasks, at most %d", len(s.DependsOn), MaxDependencies)
	case s.Priority != "" && !s.Priority.Valid():
		return bad("priority %q is not one of normal, elevated, urgent", s.Priority)
	}
	seen := map[string]bool{}
	for _, d := range s.DependsOn {
		if d == "" {
			return bad("depends_on: an empty reference")
		}
		if seen[d] {
			return bad("depends_on: %q is listed twice", d)
		}
		seen[d] = true
	}
	if s.Key != "" && (seen[s.Key] || s.ParentTask == s.Key) {
		return fmt.Errorf("%w: task %q names itself", ErrCycle, s.Key)
	}
	if e := s.ResourceEstimate; e != nil {
		if err := e.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Check validates an estimate (Task spec F-1): tokens ≥ 0, wall_time a
// duration > 0, cost ≥ 0 and finite.
func (e Estimate) Check() error {
	if e.Tokens != nil && *e.Tokens < 0 {
		return bad("resource_estimate.tokens %d is negative", *e.Tokens)
	}
	if e.WallTime != "" {
		if d, err := time.ParseDuration(e.WallTime); err != nil || d <= 0 {
			return bad("resource_estimate.wall_time %q is not a positive duration", e.WallTime)
		}
	}
	if e.Cost != nil && (*e.Cost < 0 || math.IsNaN(*e.Cost) || math.IsInf(*e.Cost, 0)) {
		return bad("resource_estimate.cost %v is negative or not finite", *e.Cost)
	}
	return nil
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
}

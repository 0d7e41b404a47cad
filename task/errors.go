package task

import "errors"

// These errors can be returned by the functions of this package. Test with
// errors.Is.
var (
	// ErrInvalidRequest is returned for a malformed create request or
	// field (a missing name, a bad priority or estimate, a duplicate key).
	ErrInvalidRequest = errors.New("task: invalid request")
	// ErrInvalidTransition is returned (inside *TransitionError) for a
	// transition the lifecycle does not have.
	ErrInvalidTransition = errors.New("task: invalid transition")
	// ErrCycle is returned when the request's dependencies form a cycle
	// (a task depending on itself included).
	ErrCycle = errors.New("task: dependency cycle")
	// ErrCrossGraph is returned when a dependency or parent_task names a
	// task of another graph.
	ErrCrossGraph = errors.New("task: task of another graph")
	// ErrNotFound is returned when no task or graph has the given id.
	ErrNotFound = errors.New("task: not found")
	// ErrNotReady is returned when binding a task whose dependencies are
	// not all completed or integrated.
	ErrNotReady = errors.New("task: dependencies not met")
	// ErrImmutable is returned for an attempt to change depends_on,
	// parent_task or graph_ref.
	ErrImmutable = errors.New("task: field is immutable")
)

// Package task holds WACP's task and task graph records and the rules that
// need no I/O (Task spec, digest §3.8): the eight-state lifecycle, the
// graph's invariants, binding, readiness and the transitive dependency
// queries, and the trail events each change writes.
//
// # Model
//
// A task graph only grows. Plan checks a create request against the graph
// it extends and returns the new tasks, all in draft: names and priorities,
// the resource estimate (tokens ≥ 0, wall_time > 0, cost ≥ 0), references
// (depends_on and parent_task, by task id or by the key of another task of
// the same request) that resolve inside the one graph, no task depending on
// itself, and no cycle. Tasks already stored cannot depend on a new task
// (depends_on never changes after creation), so only the request's own
// tasks can close a cycle, and Plan walks those. depends_on, parent_task
// and graph_ref are never changed by anything in this package.
//
// Next is the whole lifecycle: a pure function from (status, trigger) to the
// next status, with exactly the transitions of the spec's derivation table;
// integrated and cancelled have none. Approve, Bind, Start, Complete, Fail,
// Integrate, Cancel and Retry apply one transition to a task value and
// return the new value with the trail events the change writes
// (task_approved, task_assigned, task_status_changed, task_completed,
// task_failed); Plan returns task_created and graph_created. Derive maps a
// workspace's transition to its bound task's.
//
// A View over the tasks of one graph answers readiness (every dependency
// completed or integrated), the dependents of a task and the transitive
// dependencies in either direction.
//
// # Format
//
// Task and Graph are JSON records with every field of the spec present
// (null where unset). The engine stores them; this package links no
// storage.
//
// # Caveats
//
// A task is ready when its dependencies are completed or integrated, as the
// spec defines readiness; whether it can be bound also needs status pending
// (Bind checks both).
package task

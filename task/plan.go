package task

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wacpd/wacpd/trail"
)

// Event is a trail entry a change writes: its type and body (the
// registry's fields for the type, Task spec §8).
type Event struct {
	Type trail.EventType
	Body map[string]any
}

// Lookup returns the stored task with id, and false when there is none
// (in any graph).
type Lookup func(id string) (Task, bool)

// Plan checks req against the graph it extends, g (nil for a new graph),
// and returns the graph record (new, or g with the new tasks appended), the
// new tasks in request order, all in draft with ids from newID, and the
// events to write: graph_created first for a new graph, then task_created
// for each task. lookup finds the stored tasks that references name; a
// reference resolves first to a key of the request, then to a stored task,
// which must be of the same graph (ErrCrossGraph); a key that is also the
// id of a stored task is refused. Plan is pure: it changes neither g nor
// anything lookup returns.
func Plan(req CreateRequest, g *Graph, lookup Lookup, newID func() string, ts string) (Graph, []Task, []Event, error) {
	if err := req.check(); err != nil {
		return Graph{}, nil, nil, err
	}
	var graph Graph
	switch {
	case g == nil && req.Graph != "":
		return Graph{}, nil, nil, fmt.Errorf("%w: graph %s", ErrNotFound, req.Graph)
	case g == nil:
		graph = Graph{ID: newID(), Timestamp: ts}
	case req.Graph != g.ID:
		return Graph{}, nil, nil, fmt.Errorf("%w: the request extends graph %q, not %s", ErrInvalidRequest, req.Graph, g.ID)
	default:
		graph = *g
		graph.Tasks = slices.Clone(g.Tasks)
	}
	keys := map[string]int{}
	for i, s := range req.Tasks {
		if s.Key == "" {
			continue
		}
		if _, stored := lookup(s.Key); stored {
			return Graph{}, nil, nil, bad("tasks[%d]: key %q is the id of a stored task", i, s.Key)
		}
		keys[s.Key] = i
	}
	ids := make([]string, len(req.Tasks))
	for i := range req.Tasks {
		ids[i] = newID()
	}
	// resolve returns the id a reference names and, for a key, the index
	// of its task in the request (-1 for a stored task).
	resolve := func(i int, field, ref string) (string, int, error) {
		if j, ok := keys[ref]; ok {
			return ids[j], j, nil
		}
		t, ok := lookup(ref)
		switch {
		case !ok:
			return "", 0, fmt.Errorf("%w: tasks[%d].%s: task %s", ErrNotFound, i, field, ref)
		case t.GraphRef != graph.ID:
			return "", 0, fmt.Errorf("%w: tasks[%d].%s: task %s is of graph %s, not %s", ErrCrossGraph, i, field, ref, t.GraphRef, graph.ID)
		}
		return t.ID, -1, nil
	}
	tasks := make([]Task, len(req.Tasks))
	edges := make([][]int, len(req.Tasks)) // i → the request's tasks i depends on
	for i, s := range req.Tasks {
		t := Task{
			ID: ids[i], Name: s.Name, Description: s.Description, DependsOn: []string{},
			Priority: s.Priority, ResourceEstimate: s.ResourceEstimate, Status: Draft,
			WorkspaceHistory: []string{}, GraphRef: graph.ID, Timestamp: ts,
		}
		if t.Priority == "" {
			t.Priority = PriorityNormal
		}
		for _, ref := range s.DependsOn {
			id, j, err := resolve(i, "depends_on", ref)
			if err != nil {
				return Graph{}, nil, nil, err
			}
			if slices.Contains(t.DependsOn, id) {
				return Graph{}, nil, nil, bad("tasks[%d].depends_on: task %s is named twice", i, id)
			}
			if j == i {
				return Graph{}, nil, nil, fmt.Errorf("%w: tasks[%d] depends on itself", ErrCycle, i)
			}
			t.DependsOn = append(t.DependsOn, id)
			if j >= 0 {
				edges[i] = append(edges[i], j)
			}
		}
		if s.ParentTask != "" {
			id, j, err := resolve(i, "parent_task", s.ParentTask)
			if err != nil {
				return Graph{}, nil, nil, err
			}
			if j == i {
				return Graph{}, nil, nil, fmt.Errorf("%w: tasks[%d] is its own parent_task", ErrCycle, i)
			}
			t.ParentTask = &id
		}
		tasks[i] = t
	}
	if cycle := findCycle(edges); cycle != nil {
		names := make([]string, len(cycle))
		for k, i := range cycle {
			names[k] = label(req.Tasks[i], i)
		}
		return Graph{}, nil, nil, fmt.Errorf("%w: %s", ErrCycle, strings.Join(names, " → "))
	}
	if parentCycle(req.Tasks, keys) {
		return Graph{}, nil, nil, fmt.Errorf("%w: the request's parent_task links form a loop", ErrCycle)
	}
	var events []Event
	if g == nil {
		graph.RootTask = ids[0]
		events = append(events, Event{trail.EventGraphCreated, map[string]any{
			"graph_id": graph.ID, "root_task_id": graph.RootTask, "task_count": len(tasks)}})
	}
	for _, t := range tasks {
		graph.Tasks = append(graph.Tasks, t.ID)
		events = append(events, Event{trail.EventTaskCreated, map[string]any{
			"task_id": t.ID, "graph_id": graph.ID, "parent_task": deref(t.ParentTask), "name": t.Name,
			"depends_on": slices.Clone(t.DependsOn), "priority": string(t.Priority)}})
	}
	return graph, tasks, events, nil
}

// label names the request's task i in an error: its key, or tasks[i].
func label(s Spec, i int) string {
	if s.Key != "" {
		return fmt.Sprintf("%q", s.Key)
	}
	return fmt.Sprintf("tasks[%d]", i)
}

// findCycle returns the indexes of a cycle of the graph edges[i] → j (i
// depends on j), the first repeated at the end, or nil when there is none.
// It walks depth first without recursion (a request holds up to
// MaxRequestTasks tasks).
func findCycle(edges [][]int) []int {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(edges))
	type frame struct{ node, next int }
	for start := range edges {
		if state[start] != unseen {
			continue
		}
		path := []frame{{start, 0}}
		state[start] = onPath
		for len(path) > 0 {
			f := &path[len(path)-1]
			if f.next == len(edges[f.node]) {
				state[f.node] = done
				path = path[:len(path)-1]
				continue
			}
			j := edges[f.node][f.next]
			f.next++
			switch state[j] {
			case onPath:
				var cycle []int
				for k := range path {
					if path[k].node == j {
						for _, p := range path[k:] {
							cycle = append(cycle, p.node)
						}
						break
					}
				}
				return append(cycle, j)
			case unseen:
				state[j] = onPath
				path = append(path, frame{j, 0})
			}
		}
	}
	return nil
}

// parentCycle reports whether the request's parent_task links between its
// own tasks loop (a stored task's parent is fixed, so a loop needs only
// the request's tasks).
func parentCycle(specs []Spec, keys map[string]int) bool {
	for i := range specs {
		seen := 0
		for j := i; ; seen++ {
			p, ok := keys[specs[j].ParentTask]
			if !ok || specs[j].ParentTask == "" {
				break
			}
			if seen > len(specs) {
				return true
			}
			j = p
		}
	}
	return false
}

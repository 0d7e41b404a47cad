package task

import "slices"

// View answers questions about the tasks of one graph: readiness, the
// dependents of a task, and the transitive dependencies in either
// direction. It holds the tasks given to NewView and is not changed by
// anything after.
type View struct {
	tasks      map[string]*Task
	dependents map[string][]string // id → the tasks that depend on it, in graph order
	order      []string
}

// NewView returns a view of tasks (those of one graph, in graph order).
// A dependency on a task not among them is never done.
func NewView(tasks []Task) *View {
	v := &View{tasks: make(map[string]*Task, len(tasks)), dependents: map[string][]string{}}
	for i := range tasks {
		t := &tasks[i]
		v.tasks[t.ID] = t
		v.order = append(v.order, t.ID)
		for _, d := range t.DependsOn {
			v.dependents[d] = append(v.dependents[d], t.ID)
		}
	}
	return v
}

// Task returns the task with id in the view.
func (v *View) Task(id string) (Task, bool) {
	t, ok := v.tasks[id]
	if !ok {
		return Task{}, false
	}
	return *t, true
}

// Ready reports whether every dependency of task id is completed or
// integrated (Task spec §3, readiness); false for a task not in the view.
func (v *View) Ready(id string) bool {
	t, ok := v.tasks[id]
	if !ok {
		return false
	}
	for _, d := range t.DependsOn {
		if dt, ok := v.tasks[d]; !ok || !dt.Status.Done() {
			return false
		}
	}
	return true
}

// Dependents returns the tasks that depend directly on task id, in graph
// order.
func (v *View) Dependents(id string) []string { return slices.Clone(v.dependents[id]) }

// Requires returns every task task id depends on, directly or through
// others, in graph order.
func (v *View) Requires(id string) []string {
	return v.closure(id, func(t string) []string {
		if tt, ok := v.tasks[t]; ok {
			return tt.DependsOn
		}
		return nil
	})
}

// RequiredBy returns every task that depends on task id, directly or
// through others, in graph order.
func (v *View) RequiredBy(id string) []string {
	return v.closure(id, func(t string) []string { return v.dependents[t] })
}

// closure walks next from id and returns what it reaches (not id itself)
// in graph order.
func (v *View) closure(id string, next func(string) []string) []string {
	seen := map[string]bool{id: true}
	stack := slices.Clone(next(id))
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[t] {
			continue
		}
		seen[t] = true
		stack = append(stack, next(t)...)
	}
	out := []string{}
	for _, t := range v.order {
		if t != id && seen[t] {
			out = append(out, t)
		}
	}
	return out
}

// Readiness returns, for each task of the view whose stored Ready flag
// differs from what the view computes, its id and the new value: what the
// runtime rewrites after a change (a task completing makes its dependents
// ready; a retry or a new task changes nothing already stored).
func (v *View) Readiness() map[string]bool {
	out := map[string]bool{}
	for _, id := range v.order {
		if r := v.Ready(id); r != v.tasks[id].Ready {
			out[id] = r
		}
	}
	return out
}

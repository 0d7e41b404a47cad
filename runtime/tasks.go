package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Tasks and task graphs (Task spec; the rules are package task's). The
// coordinator and live delegates create, bind, cancel and retry tasks; the
// runtime moves a bound task as its workspace moves (followTask) and
// keeps each task's readiness. Task entries go to the coordinator's
// local trail (Task spec §8), actor the creating agent or, for derived
// transitions, protocol.

// taskActor returns the agent that works with tasks: the coordinator or a
// live delegate. Caller holds e.mu.
func (e *Engine) taskActor(actor string) (*workspace.Workspace, error) {
	a := e.get(actor)
	switch {
	case a == nil:
		return nil, Refuse(wire.CodeNotFound, "workspace %s does not exist", actor)
	case !a.IsRoot() && !a.Delegate:
		return nil, Refuse(wire.CodePermissionDenied, "only the coordinator or a delegate works with tasks")
	case a.State.Terminal():
		return nil, Refuse(wire.CodePermissionDenied, "workspace %s is %s", actor, a.State)
	}
	if err := activeAuthority(a); err != nil {
		return nil, err
	}
	return a, nil
}

// taskRefusal turns an error of package task into the wire's refusal.
func taskRefusal(err error) error {
	code := ""
	switch {
	case errors.Is(err, task.ErrNotFound):
		code = wire.CodeNotFound
	case errors.Is(err, task.ErrInvalidTransition), errors.Is(err, task.ErrNotReady):
		code = wire.CodeInvalidTransition
	case errors.Is(err, task.ErrInvalidRequest), errors.Is(err, task.ErrCycle),
		errors.Is(err, task.ErrCrossGraph), errors.Is(err, task.ErrImmutable):
		code = wire.CodeInvalidStructure
	default:
		return err
	}
	return &Error{Code: code, Message: err.Error(), Err: err}
}

// CreateTasks adds the tasks of a task.create request, in draft, to a new
// graph or to the graph the request names (graph_created first for a new
// one, then task_created for each), and opens each task's task_approval
// gate (gates.go).
func (e *Engine) CreateTasks(ctx context.Context, actor string, body []byte) (wire.TasksCreated, error) {
	req, err := task.DecodeCreateRequest(body)
	if err != nil {
		return wire.TasksCreated{}, taskRefusal(err)
	}
	return runAs(ctx, e, len(body), func() (wire.TasksCreated, error) {
		a, err := e.taskActor(actor)
		if err != nil {
			return wire.TasksCreated{}, err
		}
		var out wire.TasksCreated
		err = e.commit(func(t *tx) error {
			ts := t.next()
			var g *task.Graph
			if req.Graph != "" {
				if gg, ok := t.graph(req.Graph); ok {
					g = &gg
				}
			}
			graph, tasks, events, err := task.Plan(req, g, t.task, func() string { return e.ids.New(ts) }, clock.Format(ts))
			if err != nil {
				return taskRefusal(err)
			}
			if err := t.putGraph(graph); err != nil {
				return err
			}
			for _, k := range tasks {
				if err := t.putTask(k); err != nil {
					return err
				}
			}
			if err := t.taskEvents(e.actorOf(a), events); err != nil {
				return err
			}
			if err := t.refreshReady(graph.ID); err != nil {
				return err
			}
			for _, k := range tasks {
				if err := t.gateTask(k); err != nil {
					return err
				}
			}
			out.Graph = graph
			for _, k := range tasks {
				k, _ = t.task(k.ID)
				out.Tasks = append(out.Tasks, k)
			}
			return nil
		})
		return out, err
	})
}

// taskEvents writes task events to the coordinator's local trail.
func (t *tx) taskEvents(actor string, events []task.Event) error {
	for _, ev := range events {
		if _, err := t.append(t.e.root, actor, ev.Type, ev.Body); err != nil {
			return err
		}
	}
	return nil
}

// changeTask stores k, writes its events and refreshes its graph's
// readiness.
func (t *tx) changeTask(k task.Task, actor string, events []task.Event) error {
	if err := t.putTask(k); err != nil {
		return err
	}
	if err := t.taskEvents(actor, events); err != nil {
		return err
	}
	return t.refreshReady(k.GraphRef)
}

// refreshReady recomputes the readiness of the tasks of graph id and
// rewrites those whose flag changed (a dependency completed, integrated
// or was cancelled after completing).
func (t *tx) refreshReady(id string) error {
	g, ok := t.graph(id)
	if !ok {
		return nil
	}
	tasks := make([]task.Task, 0, len(g.Tasks))
	for _, tid := range g.Tasks {
		if k, ok := t.task(tid); ok {
			tasks = append(tasks, k)
		}
	}
	changed := task.NewView(tasks).Readiness()
	for _, tid := range g.Tasks {
		r, ok := changed[tid]
		if !ok {
			continue
		}
		k, _ := t.task(tid)
		k.Ready = r
		if err := t.putTask(k); err != nil {
			return err
		}
	}
	return nil
}

// view returns a view of graph id's tasks as the engine holds them.
// Caller holds e.mu.
func (e *Engine) view(id string) (task.Graph, []task.Task, *task.View, bool) {
	g, ok := e.gov.graphs[id]
	if !ok {
		return task.Graph{}, nil, nil, false
	}
	tasks := make([]task.Task, 0, len(g.Tasks))
	for _, tid := range g.Tasks {
		if k, ok := e.gov.tasks[tid]; ok {
			tasks = append(tasks, *k)
		}
	}
	return *g, tasks, task.NewView(tasks), true
}

// GetTask returns task id; with transitive, every task it depends on and
// every task depending on it, directly or through others.
func (e *Engine) GetTask(ctx context.Context, actor string, req wire.TaskGetRequest) (wire.TaskInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.taskActor(actor); err != nil {
		return wire.TaskInfo{}, err
	}
	k, ok := e.gov.tasks[req.ID]
	if !ok {
		return wire.TaskInfo{}, Refuse(wire.CodeNotFound, "task %s does not exist", req.ID)
	}
	out := wire.TaskInfo{Task: *k}
	if req.Transitive {
		_, _, v, _ := e.view(k.GraphRef)
		out.Requires, out.RequiredBy = v.Requires(k.ID), v.RequiredBy(k.ID)
	}
	return out, nil
}

// ListTasks returns the tasks matching q, graphs in creation order and
// each graph's tasks in its order.
func (e *Engine) ListTasks(ctx context.Context, actor string, q wire.TaskListRequest) (wire.TaskPage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.taskActor(actor); err != nil {
		return wire.TaskPage{}, err
	}
	if q.Status != "" && !q.Status.Valid() {
		return wire.TaskPage{}, Refuse(wire.CodeInvalidStructure, "status %q is not one of the eight task states", q.Status)
	}
	graphs := make([]*task.Graph, 0, len(e.gov.graphs))
	for _, g := range e.gov.graphs {
		if q.Graph == "" || g.ID == q.Graph {
			graphs = append(graphs, g)
		}
	}
	if q.Graph != "" && len(graphs) == 0 {
		return wire.TaskPage{}, Refuse(wire.CodeNotFound, "graph %s does not exist", q.Graph)
	}
	slices.SortFunc(graphs, func(a, b *task.Graph) int { return compareIDs(a.ID, b.ID) })
	out := wire.TaskPage{Tasks: []task.Task{}}
	for _, g := range graphs {
		for _, tid := range g.Tasks {
			k, ok := e.gov.tasks[tid]
			if !ok || (q.Status != "" && k.Status != q.Status) || (q.Ready != nil && k.Ready != *q.Ready) {
				continue
			}
			out.Tasks = append(out.Tasks, *k)
		}
	}
	return out, nil
}

// compareIDs orders ULIDs (creation order).
func compareIDs(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// GetGraph returns graph id with its tasks.
func (e *Engine) GetGraph(ctx context.Context, actor, id string) (wire.GraphInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.taskActor(actor); err != nil {
		return wire.GraphInfo{}, err
	}
	g, tasks, _, ok := e.view(id)
	if !ok {
		return wire.GraphInfo{}, Refuse(wire.CodeNotFound, "graph %s does not exist", id)
	}
	return wire.GraphInfo{Graph: g, Tasks: tasks}, nil
}

// BindTask binds pending, ready task req.ID to the idle workspace
// req.Workspace, which has no task (Task spec §5): the task moves to
// assigned and the workspace's task_ref names it. A delegate binds only
// workspaces of its subtree.
func (e *Engine) BindTask(ctx context.Context, actor string, req wire.TaskBindRequest) (task.Task, error) {
	return runAs(ctx, e, 0, func() (task.Task, error) {
		a, err := e.taskActor(actor)
		if err != nil {
			return task.Task{}, err
		}
		if !a.IsRoot() && !e.inSubtree(actor, req.Workspace) {
			return task.Task{}, Refuse(wire.CodePermissionDenied, "a delegate binds tasks only to workspaces of its subtree")
		}
		var out task.Task
		err = e.commit(func(t *tx) error {
			w := t.ws(req.Workspace)
			if w == nil {
				return Refuse(wire.CodeNotFound, "workspace %s does not exist", req.Workspace)
			}
			k, err := t.bind(req.ID, w, e.actorOf(a))
			out = k
			return err
		})
		return out, err
	})
}

// bind binds task id to workspace w (a tx copy, idle, without a task)
// and writes both.
func (t *tx) bind(id string, w *workspace.Workspace, actor string) (task.Task, error) {
	k, ok := t.task(id)
	switch {
	case !ok:
		return k, Refuse(wire.CodeNotFound, "task %s does not exist", id)
	case w.IsRoot():
		return k, Refuse(wire.CodeInvalidStructure, "the root workspace executes no task")
	case w.State != workspace.Idle:
		return k, Refuse(wire.CodeInvalidTransition, "workspace %s is %s; a task is bound to an idle workspace", w.ID, w.State)
	case w.TaskRef != "" && w.TaskRef != id:
		return k, Refuse(wire.CodeInvalidTransition, "workspace %s executes task %s (one workspace, one task)", w.ID, w.TaskRef)
	}
	k, events, err := task.Bind(k, w.ID, k.Ready)
	if err != nil {
		return k, taskRefusal(err)
	}
	if err := t.changeTask(k, actor, events); err != nil {
		return k, err
	}
	if w.TaskRef != id {
		w.TaskRef = id
		if err := t.put(w); err != nil {
			return k, err
		}
	}
	return k, nil
}

// CancelTask cancels task req.ID from any non-terminal state, aborts its
// bound workspace when that is not terminal (Task spec S-7), and resolves
// its pending gates as invalidated (Human Highway §6.5).
func (e *Engine) CancelTask(ctx context.Context, actor string, req wire.TaskOpRequest) (task.Task, error) {
	return e.changeTaskOp(ctx, actor, req.ID, func(t *tx, a *workspace.Workspace, k task.Task) (task.Task, error) {
		k, events, err := task.Cancel(k)
		if err != nil {
			return k, taskRefusal(err)
		}
		if err := t.changeTask(k, e.actorOf(a), events); err != nil {
			return k, err
		}
		if err := t.invalidateGates(k.ID); err != nil {
			return k, err
		}
		if k.WorkspaceRef != nil {
			if w := t.ws(*k.WorkspaceRef); w != nil && !w.State.Terminal() {
				return k, t.abortFor(w, t.e.actorOf(a), "aborted_by_coordinator", "task "+k.ID+" cancelled "+req.Reason)
			}
		}
		return k, nil
	})
}

// RetryTask returns failed task req.ID to pending (its history kept).
func (e *Engine) RetryTask(ctx context.Context, actor string, req wire.TaskOpRequest) (task.Task, error) {
	return e.changeTaskOp(ctx, actor, req.ID, func(t *tx, a *workspace.Workspace, k task.Task) (task.Task, error) {
		k, events, err := task.Retry(k)
		if err != nil {
			return k, taskRefusal(err)
		}
		return k, t.changeTask(k, e.actorOf(a), events)
	})
}

// changeTaskOp runs fn on task id in one commit, for the agent of actor
// (the coordinator or a live delegate), and returns what fn returns.
func (e *Engine) changeTaskOp(ctx context.Context, actor, id string, fn func(*tx, *workspace.Workspace, task.Task) (task.Task, error)) (task.Task, error) {
	return runAs(ctx, e, 0, func() (task.Task, error) {
		a, err := e.taskActor(actor)
		if err != nil {
			return task.Task{}, err
		}
		var out task.Task
		err = e.commit(func(t *tx) error {
			k, ok := t.task(id)
			if !ok {
				return Refuse(wire.CodeNotFound, "task %s does not exist", id)
			}
			out, err = fn(t, a, k)
			return err
		})
		return out, err
	})
}

// followTask moves the task bound to workspace w as w moved from from to
// to (task.Derive): started, completed (checkpoint_ref from w's most
// recent final checkpoint), failed (with w's reason), integrated.
func (t *tx) followTask(w *workspace.Workspace, from, to workspace.State) error {
	if w.TaskRef == "" {
		return nil
	}
	k, ok := t.task(w.TaskRef)
	if !ok || k.WorkspaceRef == nil || *k.WorkspaceRef != w.ID {
		return nil
	}
	trig, ok := task.Derive(k.Status, from, to)
	if !ok {
		return nil
	}
	var events []task.Event
	var err error
	switch trig {
	case task.OnStarted:
		k, events, err = task.Start(k)
	case task.OnComplete:
		k, events, err = task.Complete(k, t.chain(w.ID).LastFinal)
	case task.OnFailed:
		k, events, err = task.Fail(k, w.Reason)
	case task.OnIntegrated:
		k, events, err = task.Integrate(k)
	}
	if err != nil {
		return err
	}
	return t.changeTask(k, trail.ActorProtocol, events)
}

// gateTask opens the task_approval gate of new task k. When the run's
// highway does not gate task approval, the gate is one whose time runs
// out at once with fallback approve (the spec's draft → pending needs a
// human or a timeout fallback: C-3).
func (t *tx) gateTask(k task.Task) error {
	body, err := json.Marshal(k)
	if err != nil {
		return err
	}
	s := highway.Subject{ID: k.ID, Body: body, TaskRef: k.ID, GraphRef: k.GraphRef}
	_, _, err = t.openGate(highway.TaskApproval, s)
	return err
}

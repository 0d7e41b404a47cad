package runtime

import (
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/internal/recstore"
	"github.com/wacpd/wacpd/task"
	"github.com/wacpd/wacpd/user"
)

// The records of the human highway and the task graphs (tasks.go,
// gates.go, users.go): kept whole in memory, each change written in the
// commit of the operation that makes it, read back by loadGov at open.
// Their key prefixes (docs/formats.md): j/g/<graph id>, j/t/<task id>,
// g/<gate id>, u/<user id>, h/<escalation id>, each → the record's JSON.
const (
	keyGraphs = "j/g/"
	keyTasks  = "j/t/"
	keyGates  = "g/"
	keyUsers  = "u/"
	keyEscal  = "h/"
)

// govState is the engine's copy of those records. Guarded by Engine.mu.
type govState struct {
	graphs map[string]*task.Graph
	tasks  map[string]*task.Task
	gates  map[string]*highway.Gate
	users  map[string]*user.User
	escal  map[string]*highway.EscalationRecord
	guard  highway.Guard // the re-entry guard, from the resolved gates
}

// loadGov reads the records from the database (at open, and when
// degraded mode ends).
func (e *Engine) loadGov() (err error) {
	var g govState
	if g.graphs, err = recstore.LoadAll[task.Graph](e.db, keyGraphs); err != nil {
		return err
	}
	if g.tasks, err = recstore.LoadAll[task.Task](e.db, keyTasks); err != nil {
		return err
	}
	if g.gates, err = recstore.LoadAll[highway.Gate](e.db, keyGates); err != nil {
		return err
	}
	if g.users, err = recstore.LoadAll[user.User](e.db, keyUsers); err != nil {
		return err
	}
	if g.escal, err = recstore.LoadAll[highway.EscalationRecord](e.db, keyEscal); err != nil {
		return err
	}
	g.guard = highway.Guard{}
	for _, gt := range g.gates {
		g.guard.Note(*gt)
	}
	e.gov = g
	return nil
}

// govLayer is one tx layer's changed records, by id.
type govLayer struct {
	graphs map[string]*task.Graph
	tasks  map[string]*task.Task
	gates  map[string]*highway.Gate
	users  map[string]*user.User
	escal  map[string]*highway.EscalationRecord
}

func (t *tx) layer() *govLayer {
	if t.gov == nil {
		t.gov = &govLayer{graphs: map[string]*task.Graph{}, tasks: map[string]*task.Task{},
			gates: map[string]*highway.Gate{}, users: map[string]*user.User{},
			escal: map[string]*highway.EscalationRecord{}}
	}
	return t.gov
}

// find returns the record id of one kind as t sees it: from the newest
// layer that changed it, else the engine's; a copy.
func find[T any](t *tx, id string, kind func(*govLayer) map[string]*T, base map[string]*T) (T, bool) {
	for l := t; l != nil; l = l.parent {
		if l.gov != nil {
			if v, ok := kind(l.gov)[id]; ok {
				return *v, true
			}
		}
	}
	v, ok := base[id]
	if !ok {
		var zero T
		return zero, false
	}
	return *v, true
}

// put writes v, the record id of one kind, into t's layer and its
// transaction.
func put[T any](t *tx, prefix, id string, v T, kind func(*govLayer) map[string]*T) error {
	if err := t.step(prefix); err != nil {
		return err
	}
	kind(t.layer())[id] = &v
	return recstore.Put(t.txn, prefix, id, &v)
}

func graphsOf(g *govLayer) map[string]*task.Graph  { return g.graphs }
func tasksOf(g *govLayer) map[string]*task.Task    { return g.tasks }
func gatesOf(g *govLayer) map[string]*highway.Gate { return g.gates }
func usersOf(g *govLayer) map[string]*user.User    { return g.users }
func escalOf(g *govLayer) map[string]*highway.EscalationRecord {
	return g.escal
}

func (t *tx) graph(id string) (task.Graph, bool) { return find(t, id, graphsOf, t.e.gov.graphs) }
func (t *tx) task(id string) (task.Task, bool)   { return find(t, id, tasksOf, t.e.gov.tasks) }
func (t *tx) gate(id string) (highway.Gate, bool) {
	return find(t, id, gatesOf, t.e.gov.gates)
}
func (t *tx) user(id string) (user.User, bool) { return find(t, id, usersOf, t.e.gov.users) }
func (t *tx) escalation(id string) (highway.EscalationRecord, bool) {
	return find(t, id, escalOf, t.e.gov.escal)
}

// anyGates and anyEscalations report whether there is a record of the
// kind at all, as t sees them (the common case is none: a transition need
// not look further).
func (t *tx) anyGates() bool       { return anyRecord(t, gatesOf, t.e.gov.gates) }
func (t *tx) anyEscalations() bool { return anyRecord(t, escalOf, t.e.gov.escal) }

func anyRecord[T any](t *tx, kind func(*govLayer) map[string]*T, base map[string]*T) bool {
	if len(base) > 0 {
		return true
	}
	for l := t; l != nil; l = l.parent {
		if l.gov != nil && len(kind(l.gov)) > 0 {
			return true
		}
	}
	return false
}

// gatesSeen and escalationsSeen return every record of the kind as t sees
// them: each one's newest copy in t's layers, else the engine's.
func (t *tx) gatesSeen() []highway.Gate { return seenOf(t, gatesOf, t.e.gov.gates) }
func (t *tx) escalationsSeen() []highway.EscalationRecord {
	return seenOf(t, escalOf, t.e.gov.escal)
}

func seenOf[T any](t *tx, kind func(*govLayer) map[string]*T, base map[string]*T) []T {
	seen := map[string]bool{}
	var out []T
	for l := t; l != nil; l = l.parent {
		if l.gov == nil {
			continue
		}
		for id, v := range kind(l.gov) {
			if !seen[id] {
				seen[id] = true
				out = append(out, *v)
			}
		}
	}
	for id, v := range base {
		if !seen[id] {
			out = append(out, *v)
		}
	}
	return out
}

// gateOf and userOf read a record as get reads a workspace: through the
// open batch while the committer runs operations (so an operation sees
// what the batch's earlier operations changed), else the engine's.
// Caller holds e.mu.
func (e *Engine) gateOf(id string) (highway.Gate, bool) {
	if e.open != nil {
		return e.open.tx.gate(id)
	}
	return find(nil, id, gatesOf, e.gov.gates)
}

func (e *Engine) userOf(id string) (user.User, bool) {
	if e.open != nil {
		return e.open.tx.user(id)
	}
	return find(nil, id, usersOf, e.gov.users)
}

func (t *tx) putGraph(g task.Graph) error  { return put(t, keyGraphs, g.ID, g, graphsOf) }
func (t *tx) putTask(k task.Task) error    { return put(t, keyTasks, k.ID, k, tasksOf) }
func (t *tx) putGate(g highway.Gate) error { return put(t, keyGates, g.ID, g, gatesOf) }
func (t *tx) putUser(u user.User) error    { return put(t, keyUsers, u.ID, u, usersOf) }
func (t *tx) putEscalation(x highway.EscalationRecord) error {
	return put(t, keyEscal, x.ID, x, escalOf)
}

// mergeGov folds layer c's records into t.
func (t *tx) mergeGov(c *tx) {
	if c.gov == nil {
		return
	}
	l := t.layer()
	for id, v := range c.gov.graphs {
		l.graphs[id] = v
	}
	for id, v := range c.gov.tasks {
		l.tasks[id] = v
	}
	for id, v := range c.gov.gates {
		l.gates[id] = v
	}
	for id, v := range c.gov.users {
		l.users[id] = v
	}
	for id, v := range c.gov.escal {
		l.escal[id] = v
	}
}

// applyGov makes a committed batch's records the engine's. Caller holds
// e.mu.
func (e *Engine) applyGov(t *tx) {
	if t.gov == nil {
		return
	}
	for id, v := range t.gov.graphs {
		e.gov.graphs[id] = v
	}
	for id, v := range t.gov.tasks {
		e.gov.tasks[id] = v
	}
	for id, v := range t.gov.users {
		e.gov.users[id] = v
	}
	if len(t.gov.escal) > 0 {
		for id, v := range t.gov.escal {
			e.gov.escal[id] = v
		}
		e.kickGates()
	}
	if len(t.gov.gates) > 0 {
		for id, v := range t.gov.gates {
			e.gov.gates[id] = v
			e.gov.guard.Note(*v)
		}
		e.kickGates()
	}
}

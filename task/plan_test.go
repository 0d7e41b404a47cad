package task

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

const ts = "2026-11-26T00:00:00.000000000Z"

// ids returns a newID that numbers ids from "id-1".
func ids() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("id-%d", n) }
}

// store is a map of stored tasks as a Lookup.
type store map[string]Task

func (s store) lookup(id string) (Task, bool) { t, ok := s[id]; return t, ok }

// planNew plans req as a new graph over s.
func planNew(t *testing.T, s store, req CreateRequest) (Graph, []Task, []Event) {
	t.Helper()
	g, tasks, events, err := Plan(req, nil, s.lookup, ids(), ts)
	if err != nil {
		t.Fatalf("Plan = %v", err)
	}
	return g, tasks, events
}

func TestPlanNewGraph(t *testing.T) {
	// The spec's example (§3): E depends on C and D, D on B, B and C on A.
	req := CreateRequest{Tasks: []Spec{
		{Key: "A", Name: "goal"},
		{Key: "B", Name: "b", DependsOn: []string{"A"}, ParentTask: "A", Priority: PriorityUrgent},
		{Key: "C", Name: "c", DependsOn: []string{"A"}, ParentTask: "A"},
		{Key: "D", Name: "d", DependsOn: []string{"B"}, ParentTask: "A"},
		{Key: "E", Name: "e", DependsOn: []string{"C", "D"}, ParentTask: "A",
			ResourceEstimate: &Estimate{Tokens: ptr(int64(10)), WallTime: "1h", Cost: ptr(0.5)}},
	}}
	g, tasks, events := planNew(t, store{}, req)
	if g.ID != "id-1" || g.RootTask != "id-2" || !reflect.DeepEqual(g.Tasks, []string{"id-2", "id-3", "id-4", "id-5", "id-6"}) || g.Timestamp != ts {
		t.Errorf("graph = %+v", g)
	}
	for i, tk := range tasks {
		if tk.Status != Draft || tk.GraphRef != g.ID || tk.Timestamp != ts || tk.WorkspaceRef != nil ||
			tk.CheckpointRef != nil || tk.WorkspaceHistory == nil || len(tk.WorkspaceHistory) != 0 {
			t.Errorf("tasks[%d] = %+v, want a draft of graph %s with no workspace", i, tk, g.ID)
		}
	}
	if got := tasks[4].DependsOn; !reflect.DeepEqual(got, []string{"id-4", "id-5"}) {
		t.Errorf("E.depends_on = %v, want [id-4 id-5]", got)
	}
	if tasks[0].ParentTask != nil || tasks[1].ParentTask == nil || *tasks[1].ParentTask != "id-2" {
		t.Errorf("parent_task: A %v, B %v", tasks[0].ParentTask, tasks[1].ParentTask)
	}
	if tasks[1].Priority != PriorityUrgent || tasks[0].Priority != PriorityNormal {
		t.Errorf("priorities %s %s, want urgent normal", tasks[1].Priority, tasks[0].Priority)
	}
	if len(events) != 6 || events[0].Type != trail.EventGraphCreated {
		t.Fatalf("events = %v, want graph_created and five task_created", events)
	}
	if want := map[string]any{"graph_id": "id-1", "root_task_id": "id-2", "task_count": 5}; !reflect.DeepEqual(events[0].Body, want) {
		t.Errorf("graph_created = %v, want %v", events[0].Body, want)
	}
	want := map[string]any{"task_id": "id-6", "graph_id": "id-1", "parent_task": "id-2", "name": "e",
		"depends_on": []string{"id-4", "id-5"}, "priority": "normal"}
	if !reflect.DeepEqual(events[5].Body, want) {
		t.Errorf("task_created = %v, want %v", events[5].Body, want)
	}
	if events[1].Body["parent_task"] != nil {
		t.Errorf("root's task_created parent_task = %v, want null", events[1].Body["parent_task"])
	}
	checkEvents(t, events)
}

// checkEvents holds each event to the trail registry and its canonical
// encoding.
func checkEvents(t *testing.T, events []Event) {
	t.Helper()
	for _, e := range events {
		if err := trail.ValidateBody(e.Type, e.Body); err != nil {
			t.Errorf("%s: %v", e.Type, err)
		}
		if _, err := trail.EncodeBody(e.Type, e.Body); err != nil {
			t.Errorf("EncodeBody(%s) = %v", e.Type, err)
		}
	}
}

func TestPlanExtendsAGraph(t *testing.T) {
	g, tasks, _ := planNew(t, store{}, CreateRequest{Tasks: []Spec{{Key: "A", Name: "a"}, {Key: "B", Name: "b", DependsOn: []string{"A"}}}})
	s := store{}
	for _, tk := range tasks {
		tk.Status = Completed // any stored state: new tasks still enter as draft (F-2)
		s[tk.ID] = tk
	}
	before := fmt.Sprint(g, s)
	req := CreateRequest{Graph: g.ID, Tasks: []Spec{
		{Key: "x", Name: "x", DependsOn: []string{tasks[1].ID}, ParentTask: tasks[0].ID},
		{Name: "y", DependsOn: []string{"x", tasks[0].ID}, ParentTask: "x"},
	}}
	n := 100
	g2, added, events, err := Plan(req, &g, s.lookup, func() string { n++; return fmt.Sprint("n-", n) }, ts)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(g, s) != before {
		t.Error("Plan changed the stored graph or tasks")
	}
	if g2.ID != g.ID || g2.RootTask != g.RootTask || !reflect.DeepEqual(g2.Tasks, append(append([]string{}, g.Tasks...), "n-101", "n-102")) {
		t.Errorf("graph = %+v", g2)
	}
	if added[0].Status != Draft || added[1].Status != Draft || *added[1].ParentTask != "n-101" ||
		!reflect.DeepEqual(added[1].DependsOn, []string{"n-101", tasks[0].ID}) {
		t.Errorf("added = %+v", added)
	}
	if len(events) != 2 || events[0].Type != trail.EventTaskCreated {
		t.Errorf("events = %v, want two task_created and no graph_created", events)
	}
}

func TestPlanRefuses(t *testing.T) {
	_, tasks, _ := planNew(t, store{}, CreateRequest{Tasks: []Spec{{Name: "a"}}})
	_, other, _ := planNew(t, store{}, CreateRequest{Tasks: []Spec{{Name: "other"}}})
	other[0].ID, other[0].GraphRef = "other-task", "other-graph"
	s := store{tasks[0].ID: tasks[0], "other-task": other[0]}
	g := Graph{ID: tasks[0].GraphRef, RootTask: tasks[0].ID, Tasks: []string{tasks[0].ID}}
	tests := []struct {
		name  string
		graph *Graph
		req   CreateRequest
		want  error
	}{
		{"no tasks", nil, CreateRequest{}, ErrInvalidRequest},
		{"no name", nil, CreateRequest{Tasks: []Spec{{}}}, ErrInvalidRequest},
		{"bad priority", nil, CreateRequest{Tasks: []Spec{{Name: "a", Priority: "high"}}}, ErrInvalidRequest},
		{"duplicate key", nil, CreateRequest{Tasks: []Spec{{Key: "k", Name: "a"}, {Key: "k", Name: "b"}}}, ErrInvalidRequest},
		{"dependency twice", nil, CreateRequest{Tasks: []Spec{{Key: "k", Name: "a"}, {Name: "b", DependsOn: []string{"k", "k"}}}}, ErrInvalidRequest},
		{"root with a parent", nil, CreateRequest{Tasks: []Spec{{Name: "a", ParentTask: tasks[0].ID}}}, ErrInvalidRequest},
		{"self by key", nil, CreateRequest{Tasks: []Spec{{Key: "k", Name: "a", DependsOn: []string{"k"}}}}, ErrCycle},
		{"own parent", &g, CreateRequest{Graph: g.ID, Tasks: []Spec{{Key: "k", Name: "a", ParentTask: "k"}}}, ErrCycle},
		{"two-cycle", nil, CreateRequest{Tasks: []Spec{{Key: "a", Name: "a", DependsOn: []string{"b"}}, {Key: "b", Name: "b", DependsOn: []string{"a"}}}}, ErrCycle},
		{"three-cycle", nil, CreateRequest{Tasks: []Spec{{Key: "r", Name: "r"}, {Key: "a", Name: "a", DependsOn: []string{"c"}}, {Key: "b", Name: "b", DependsOn: []string{"a"}}, {Key: "c", Name: "c", DependsOn: []string{"b", "r"}}}}, ErrCycle},
		{"parent loop", &g, CreateRequest{Graph: g.ID, Tasks: []Spec{{Key: "a", Name: "a", ParentTask: "b"}, {Key: "b", Name: "b", ParentTask: "a"}}}, ErrCycle},
		{"cross-graph dependency", &g, CreateRequest{Graph: g.ID, Tasks: []Spec{{Name: "a", DependsOn: []string{"other-task"}}}}, ErrCrossGraph},
		{"cross-graph parent", &g, CreateRequest{Graph: g.ID, Tasks: []Spec{{Name: "a", ParentTask: "other-task"}}}, ErrCrossGraph},
		{"new graph naming a stored task", nil, CreateRequest{Tasks: []Spec{{Name: "a", DependsOn: []string{tasks[0].ID}}}}, ErrCrossGraph},
		{"unknown dependency", &g, CreateRequest{Graph: g.ID, Tasks: []Spec{{Name: "a", DependsOn: []string{"nope"}}}}, ErrNotFound},
		{"unknown graph", nil, CreateRequest{Graph: "nope", Tasks: []Spec{{Name: "a"}}}, ErrNotFound},
		{"other graph's id", &g, CreateRequest{Graph: "other-graph", Tasks: []Spec{{Name: "a"}}}, ErrInvalidRequest},
		{"key is a stored id", &g, CreateRequest{Graph: g.ID, Tasks: []Spec{{Key: tasks[0].ID, Name: "a"}}}, ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			fresh := func() string { n++; return fmt.Sprint("p-", n) } // unlike the stored ids
			_, got, events, err := Plan(tt.req, tt.graph, s.lookup, fresh, ts)
			if !errors.Is(err, tt.want) || got != nil || events != nil {
				t.Errorf("Plan = %v, %d events, %v; want %v", got, len(events), err, tt.want)
			}
		})
	}
}

func TestPlanNamesTheCycle(t *testing.T) {
	req := CreateRequest{Tasks: []Spec{{Key: "a", Name: "a", DependsOn: []string{"b"}}, {Key: "b", Name: "b", DependsOn: []string{"a"}}}}
	_, _, _, err := Plan(req, nil, store{}.lookup, ids(), ts)
	if want := `task: dependency cycle: "a" → "b" → "a"`; err == nil || err.Error() != want {
		t.Errorf("Plan = %v, want %q", err, want)
	}
}

func TestEstimateCheck(t *testing.T) {
	tests := []struct {
		e  Estimate
		ok bool
	}{
		{Estimate{}, true},
		{Estimate{Tokens: ptr(int64(0)), WallTime: "1ns", Cost: ptr(0.0)}, true},
		{Estimate{Tokens: ptr(int64(-1))}, false},
		{Estimate{WallTime: "0s"}, false},
		{Estimate{WallTime: "-1m"}, false},
		{Estimate{WallTime: "soon"}, false},
		{Estimate{Cost: ptr(-0.01)}, false},
	}
	for _, tt := range tests {
		err := tt.e.Check()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidRequest)) {
			t.Errorf("%+v.Check() = %v, want ok %v", tt.e, err, tt.ok)
		}
		req := CreateRequest{Tasks: []Spec{{Name: "a", ResourceEstimate: &tt.e}}}
		if _, _, _, err := Plan(req, nil, store{}.lookup, ids(), ts); (err == nil) != tt.ok {
			t.Errorf("Plan with estimate %+v = %v, want ok %v", tt.e, err, tt.ok)
		}
	}
}

func TestDecodeCreateRequest(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"tasks":[{"name":"a"}]}`, true},
		{`{"graph":"g","tasks":[{"key":"k","name":"a","depends_on":["x"],"parent_task":"p","priority":"elevated","resource_estimate":{"tokens":5,"wall_time":"2m","cost":1.5}}]}`, true},
		{`{"tasks":[{"name":"a","status":"pending"}]}`, false}, // status is the runtime's
		{`{"tasks":[{"name":"a","id":"x"}]}`, false},
		{`{"tasks":[{"name":"a","resource_estimate":{"tokens":-1}}]}`, false},
		{`{"tasks":[{"name":"a","resource_estimate":{"tokens":1.5}}]}`, false},
		{`{"tasks":[]}`, false},
		{`{"tasks":[{"name":"a"}]} x`, false},
		{"{\"tasks\":[{\"name\":\"\xff\"}]}", false},
	}
	for _, tt := range tests {
		_, err := DecodeCreateRequest([]byte(tt.in))
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidRequest)) {
			t.Errorf("DecodeCreateRequest(%s) = %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}

func ptr[T any](v T) *T { return &v }

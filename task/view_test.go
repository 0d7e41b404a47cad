package task

import (
	"reflect"
	"testing"
)

// example is the spec's graph (§3) as a view: A ← B ← D ← E, A ← C ← E.
func example(t *testing.T) ([]Task, map[string]string) {
	t.Helper()
	_, tasks, _ := planNew(t, store{}, CreateRequest{Tasks: []Spec{
		{Key: "A", Name: "a"},
		{Key: "B", Name: "b", DependsOn: []string{"A"}},
		{Key: "C", Name: "c", DependsOn: []string{"A"}},
		{Key: "D", Name: "d", DependsOn: []string{"B"}},
		{Key: "E", Name: "e", DependsOn: []string{"C", "D"}},
	}})
	id := map[string]string{}
	for i, k := range []string{"A", "B", "C", "D", "E"} {
		id[k] = tasks[i].ID
	}
	return tasks, id
}

func TestViewReadiness(t *testing.T) {
	tasks, id := example(t)
	set := func(k string, s Status) {
		for i := range tasks {
			if tasks[i].ID == id[k] {
				tasks[i].Status = s
			}
		}
	}
	ready := func() (out []string) {
		v := NewView(tasks)
		for _, k := range []string{"A", "B", "C", "D", "E"} {
			if v.Ready(id[k]) {
				out = append(out, k)
			}
		}
		return out
	}
	if got := ready(); !reflect.DeepEqual(got, []string{"A"}) {
		t.Errorf("ready = %v, want [A]", got)
	}
	set("A", Completed)
	if got := ready(); !reflect.DeepEqual(got, []string{"A", "B", "C"}) {
		t.Errorf("A completed: ready = %v, want [A B C]", got)
	}
	set("B", Integrated)
	set("C", Failed)
	if got := ready(); !reflect.DeepEqual(got, []string{"A", "B", "C", "D"}) {
		t.Errorf("B integrated, C failed: ready = %v, want [A B C D]", got)
	}
	set("C", Completed)
	set("D", Completed)
	if got := ready(); !reflect.DeepEqual(got, []string{"A", "B", "C", "D", "E"}) {
		t.Errorf("all done: ready = %v", got)
	}
	set("D", Cancelled)
	if got := ready(); !reflect.DeepEqual(got, []string{"A", "B", "C", "D"}) {
		t.Errorf("D cancelled: ready = %v, want E not ready", got)
	}
	if NewView(tasks).Ready("nope") {
		t.Error("Ready(unknown) = true")
	}
	// Readiness reports what differs from the stored flags.
	v := NewView(tasks)
	if got, want := v.Readiness(), map[string]bool{id["A"]: true, id["B"]: true, id["C"]: true, id["D"]: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Readiness() = %v, want %v", got, want)
	}
	tasks[0].Ready = true
	tasks[4].Ready = true
	if got, want := NewView(tasks).Readiness(), map[string]bool{id["B"]: true, id["C"]: true, id["D"]: true, id["E"]: false}; !reflect.DeepEqual(got, want) {
		t.Errorf("Readiness() = %v, want %v", got, want)
	}
}

func TestViewTransitive(t *testing.T) {
	tasks, id := example(t)
	v := NewView(tasks)
	names := func(ids []string) (out []string) {
		for _, x := range ids {
			for k, y := range id {
				if x == y {
					out = append(out, k)
				}
			}
		}
		return out
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"Requires(E)", v.Requires(id["E"]), []string{"A", "B", "C", "D"}},
		{"Requires(D)", v.Requires(id["D"]), []string{"A", "B"}},
		{"Requires(A)", v.Requires(id["A"]), nil},
		{"RequiredBy(A)", v.RequiredBy(id["A"]), []string{"B", "C", "D", "E"}},
		{"RequiredBy(B)", v.RequiredBy(id["B"]), []string{"D", "E"}},
		{"RequiredBy(E)", v.RequiredBy(id["E"]), nil},
		{"Dependents(A)", v.Dependents(id["A"]), []string{"B", "C"}},
	}
	for _, tt := range tests {
		if got := names(tt.got); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := v.Requires(id["E"]); got == nil {
		t.Error("Requires returns nil, want an empty or full list")
	}
}

package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// FuzzDecodeCreateRequest: a create request either decodes, re-encodes to
// the same request and plans (or is refused with a typed error), or is
// refused with ErrInvalidRequest; nothing panics.
func FuzzDecodeCreateRequest(f *testing.F) {
	for _, s := range []string{
		`{"tasks":[{"name":"a"}]}`,
		`{"tasks":[{"key":"a","name":"a"},{"key":"b","name":"b","depends_on":["a"],"parent_task":"a"}]}`,
		`{"tasks":[{"key":"a","name":"a","depends_on":["b"]},{"key":"b","name":"b","depends_on":["a"]}]}`,
		`{"graph":"g","tasks":[{"name":"x","depends_on":["t0"],"priority":"urgent","resource_estimate":{"tokens":1,"wall_time":"1s","cost":0}}]}`,
		`{"tasks":[{"name":"a","resource_estimate":{"wall_time":"0s"}}]}`,
		`{"tasks":[{"name":"a","depends_on":[]}]}`,
	} {
		f.Add([]byte(s))
	}
	stored := store{"t0": {ID: "t0", GraphRef: "g", Status: Pending}}
	g := Graph{ID: "g", RootTask: "t0", Tasks: []string{"t0"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeCreateRequest(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) && !errors.Is(err, ErrCycle) {
				t.Fatalf("DecodeCreateRequest = %v, want ErrInvalidRequest or ErrCycle", err)
			}
			return
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeCreateRequest(b)
		if err != nil {
			t.Fatalf("re-decode of %s = %v", b, err)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b2, b) {
			t.Fatalf("re-encoded %s, want %s", b2, b)
		}
		var graph *Graph
		if req.Graph == g.ID {
			graph = &g
		}
		n := 0
		_, tasks, events, err := Plan(req, graph, stored.lookup, func() string { n++; return fmt.Sprint("n", n) }, ts)
		switch {
		case err == nil && len(tasks) != len(req.Tasks):
			t.Fatalf("Plan = %d tasks for %d specs", len(tasks), len(req.Tasks))
		case err == nil:
			checkEvents(t, events)
		case !errors.Is(err, ErrInvalidRequest) && !errors.Is(err, ErrCycle) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrCrossGraph):
			t.Fatalf("Plan = %v, want a typed error", err)
		}
	})
}

package runtime

import (
	"testing"

	"github.com/wacpd/wacpd/trail"
)

// TestReadTrail_Scoped: WACP Trail §5 access. A worker reads its own trail;
// a query for another workspace's trail returns nothing (not an error) and
// records trail_access_denied; a delegate reads its child's trail; the
// coordinator reads everything.
func TestReadTrail_Scoped(t *testing.T) {
	e := openTest(t)
	w1 := newWorker(t, e)
	w2 := newWorker(t, e)
	del := newWorker(t, e, map[string]any{"delegate": true})
	child, err := e.CreateWorkspace(ctx, del.ID, []byte(`{"role":"worker"}`))
	if err != nil {
		t.Fatal(err)
	}

	own, _, err := e.ReadTrail(ctx, w1.ID, trail.Query{})
	if err != nil || len(own) == 0 {
		t.Fatalf("worker reads its own trail: %d entries, %v", len(own), err)
	}
	for _, en := range own {
		if en.Workspace != w1.ID {
			t.Fatalf("worker's own trail holds an entry of %q", en.Workspace)
		}
	}
	before := e.Trail().Len()
	other, _, err := e.ReadTrail(ctx, w1.ID, trail.Query{Workspace: w2.ID})
	if err != nil || len(other) != 0 {
		t.Fatalf("worker reads another's trail: %d entries, %v; want none and no error", len(other), err)
	}
	denied, _, _ := e.Trail().Read(ctx, trail.Query{EventType: trail.EventTrailAccessDenied})
	if e.Trail().Len() != before+1 || len(denied) != 1 {
		t.Fatalf("trail_access_denied entries = %d (trail grew by %d), want 1", len(denied), e.Trail().Len()-before)
	}
	sub, _, err := e.ReadTrail(ctx, del.ID, trail.Query{Workspace: child.ID})
	if err != nil || len(sub) == 0 {
		t.Fatalf("delegate reads its child's trail: %d entries, %v", len(sub), err)
	}
	all, _, err := e.ReadTrail(ctx, e.Root(), trail.Query{Limit: trail.MaxLimit})
	if err != nil || uint64(len(all)) != e.Trail().Len() {
		t.Fatalf("coordinator reads %d of %d entries, %v", len(all), e.Trail().Len(), err)
	}
}

package traillog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

// readFixture appends a fixed, hand-described trail and returns it.
//
//	#  workspace actor        event
//	0  -         protocol     system_degraded
//	1  ws-a      coordinator  workspace_created
//	2  ws-b      coordinator  workspace_created
//	3  ws-a      worker       workspace_state_changed
//	4  ws-b      worker       workspace_state_changed
//	5  ws-a      worker       checkpoint_created
//	6  -         protocol     recovery_completed
//	7  ws-c      observer     workspace_state_changed
//	8  ws-a      worker       workspace_state_changed
//	9  ws-b      worker       checkpoint_created
//	10 ws-c      observer     checkpoint_created
//	11 ws-a      coordinator  workspace_state_changed
func readFixture(tl *testLog) []trail.Entry {
	rows := []struct {
		ws, actor string
		typ       trail.EventType
	}{
		{"", trail.ActorProtocol, trail.EventSystemDegraded},
		{"ws-a", "coordinator", trail.EventWorkspaceCreated},
		{"ws-b", "coordinator", trail.EventWorkspaceCreated},
		{"ws-a", "worker", trail.EventWorkspaceStateChanged},
		{"ws-b", "worker", trail.EventWorkspaceStateChanged},
		{"ws-a", "worker", trail.EventCheckpointCreated},
		{"", trail.ActorProtocol, trail.EventRecoveryCompleted},
		{"ws-c", "observer", trail.EventWorkspaceStateChanged},
		{"ws-a", "worker", trail.EventWorkspaceStateChanged},
		{"ws-b", "worker", trail.EventCheckpointCreated},
		{"ws-c", "observer", trail.EventCheckpointCreated},
		{"ws-a", "coordinator", trail.EventWorkspaceStateChanged},
	}
	var out []trail.Entry
	for i := 0; i < len(rows); i += 4 {
		var evs []Event
		for _, r := range rows[i:min(i+4, len(rows))] {
			evs = append(evs, tl.ev(r.ws, r.actor, r.typ))
		}
		out = append(out, tl.append(evs...)...)
	}
	return out
}

func TestTrail_ReadFilters(t *testing.T) {
	tl := newTestLog(t)
	es := readFixture(tl)
	ts := func(i int) string { return es[i].Timestamp }
	tests := []struct {
		name string
		q    trail.Query
		want []int
	}{
		{"all", trail.Query{}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
		{"workspace", trail.Query{Workspace: "ws-a"}, []int{1, 3, 5, 8, 11}},
		{"workspace without entries", trail.Query{Workspace: "ws-z"}, nil},
		{"event type", trail.Query{EventType: trail.EventCheckpointCreated}, []int{5, 9, 10}},
		{"unknown event type", trail.Query{EventType: "nope"}, nil},
		{"actor", trail.Query{Actor: "observer"}, []int{7, 10}},
		{"reserved actor", trail.Query{Actor: trail.ActorProtocol}, []int{0, 6}},
		{"since inclusive", trail.Query{Since: ts(9)}, []int{9, 10, 11}},
		{"until exclusive", trail.Query{Until: ts(2)}, []int{0, 1}},
		{"since and until", trail.Query{Since: ts(3), Until: ts(7)}, []int{3, 4, 5, 6}},
		{"empty window", trail.Query{Since: ts(5), Until: ts(5)}, nil},
		{"workspace and type", trail.Query{Workspace: "ws-a", EventType: trail.EventWorkspaceStateChanged}, []int{3, 8, 11}},
		{"workspace and actor", trail.Query{Workspace: "ws-a", Actor: "coordinator"}, []int{1, 11}},
		{"type and actor and window", trail.Query{EventType: trail.EventWorkspaceStateChanged, Actor: "worker", Since: ts(4)}, []int{4, 8}},
		{"after", trail.Query{After: es[8].ID}, []int{9, 10, 11}},
		{"after last", trail.Query{After: es[11].ID}, nil},
		{"after with workspace", trail.Query{After: es[4].ID, Workspace: "ws-a"}, []int{5, 8, 11}},
		{"after another workspace's entry", trail.Query{After: es[7].ID, Workspace: "ws-b"}, []int{9}},
		{"after with type", trail.Query{After: es[5].ID, EventType: trail.EventCheckpointCreated}, []int{9, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next, err := tl.log.Read(context.Background(), tt.q)
			if err != nil {
				t.Fatalf("Read(%+v): %v", tt.q, err)
			}
			var want []string
			for _, i := range tt.want {
				want = append(want, es[i].ID)
			}
			if !slices.Equal(ids(got), want) {
				t.Errorf("Read(%+v) ids = %v, want %v", tt.q, ids(got), want)
			}
			if next != "" {
				t.Errorf("Read(%+v) next = %q, want empty", tt.q, next)
			}
			for _, e := range got {
				if !reflect.DeepEqual(e, es[slices.Index(ids(es), e.ID)]) {
					t.Errorf("Read returned %+v, appended %+v", e, es[slices.Index(ids(es), e.ID)])
				}
			}
		})
	}
}

func TestTrail_ReadPaging(t *testing.T) {
	tl := newTestLog(t)
	all := tl.interleaved(20, "ws-a", "ws-b", "ws-c")
	wsA := 0
	for _, e := range all {
		if e.Workspace == "ws-a" {
			wsA++
		}
	}
	tests := []struct {
		name  string
		q     trail.Query
		total int
	}{
		{"limit 3", trail.Query{Limit: 3}, 20},
		{"limit divides total", trail.Query{Limit: 5}, 20},
		{"limit 1", trail.Query{Limit: 1}, 20},
		{"limit equals total", trail.Query{Limit: 20}, 20},
		{"limit above total", trail.Query{Limit: 21}, 20},
		{"workspace limit 2", trail.Query{Limit: 2, Workspace: "ws-a"}, wsA},
		{"event type limit 2", trail.Query{Limit: 2, EventType: trail.EventSystemDegraded}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			var got []trail.Entry
			for pages := 1; ; pages++ {
				page, next, err := tl.log.Read(context.Background(), q)
				if err != nil {
					t.Fatalf("Read(%+v): %v", q, err)
				}
				if len(page) > tt.q.Limit {
					t.Fatalf("Read(%+v) returned %d entries, want at most %d", q, len(page), tt.q.Limit)
				}
				got = append(got, page...)
				if next == "" {
					break
				}
				if next != page[len(page)-1].ID {
					t.Errorf("Read(%+v) next = %q, want the last returned id %q", q, next, page[len(page)-1].ID)
				}
				if len(page) != tt.q.Limit {
					t.Errorf("Read(%+v) returned a short page of %d with next set", q, len(page))
				}
				if pages > 100 {
					t.Fatal("paging does not end")
				}
				q.After = next
			}
			if len(got) != tt.total {
				t.Fatalf("paged %d entries, want %d", len(got), tt.total)
			}
			whole := tl.readAll(trail.Query{Workspace: tt.q.Workspace, EventType: tt.q.EventType, Limit: trail.MaxLimit})
			if !slices.Equal(ids(got), ids(whole)) {
				t.Errorf("paged ids = %v, want %v", ids(got), ids(whole))
			}
		})
	}
}

func TestTrail_ReadLimits(t *testing.T) {
	tl := newMemLog(t)
	const n = trail.MaxLimit + 7
	var all []trail.Entry
	for i := 0; i < n; i += 250 {
		var evs []Event
		for j := i; j < min(i+250, n); j++ {
			if j%2 == 0 {
				evs = append(evs, tl.wsEv("ws-a"))
			} else {
				evs = append(evs, tl.sysEv())
			}
		}
		all = append(all, tl.append(evs...)...)
	}
	tests := []struct {
		limit    int
		want     int
		wantNext bool
	}{
		{0, trail.DefaultLimit, true},
		{-5, trail.DefaultLimit, true},
		{1, 1, true},
		{trail.DefaultLimit + 1, trail.DefaultLimit + 1, true},
		{trail.MaxLimit, trail.MaxLimit, true},
		{trail.MaxLimit + 1, trail.MaxLimit, true},
		{1 << 30, trail.MaxLimit, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			got, next, err := tl.log.Read(context.Background(), trail.Query{Limit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Errorf("Read(Limit: %d) returned %d entries, want %d", tt.limit, len(got), tt.want)
			}
			if (next != "") != tt.wantNext || (next != "" && next != all[len(got)-1].ID) {
				t.Errorf("Read(Limit: %d) next = %q, want %q", tt.limit, next, all[len(got)-1].ID)
			}
			local, err := tl.log.ReadLocal(context.Background(), "ws-a", "", tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			wantLocal := min(tt.want, (n+1)/2)
			if len(local) != wantLocal {
				t.Errorf("ReadLocal(ws-a, Limit: %d) returned %d entries, want %d", tt.limit, len(local), wantLocal)
			}
		})
	}
	// The tail: the last page has no next.
	got, next, err := tl.log.Read(context.Background(), trail.Query{After: all[trail.MaxLimit-1].ID, Limit: trail.MaxLimit})
	if err != nil || len(got) != n-trail.MaxLimit || next != "" {
		t.Errorf("Read(after #%d) = %d entries, next %q, %v, want %d, none", trail.MaxLimit, len(got), next, err, n-trail.MaxLimit)
	}
}

func TestTrail_ReadUnknownAfter(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(6, "ws-a")
	const unknown = "01ZZZZZZZZZZZZZZZZZZZZZZZZ"
	if _, _, err := tl.log.Read(context.Background(), trail.Query{After: unknown}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read(After: unknown) = %v, want %v", err, ErrNotFound)
	}
	if _, _, err := tl.log.Read(context.Background(), trail.Query{After: unknown, Workspace: "ws-a"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read(After: unknown, Workspace) = %v, want %v", err, ErrNotFound)
	}
	if _, err := tl.log.ReadLocal(context.Background(), "ws-a", unknown, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadLocal(after unknown) = %v, want %v", err, ErrNotFound)
	}
	if _, err := tl.log.Get(unknown); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(unknown) = %v, want %v", err, ErrNotFound)
	}
}

func TestTrail_Get(t *testing.T) {
	tl := newMemLog(t)
	es := tl.interleaved(9, "ws-a", "ws-b")
	for _, want := range es {
		got, err := tl.log.Get(want.ID)
		if err != nil {
			t.Fatalf("Get(%s): %v", want.ID, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Get(%s) = %+v, want %+v", want.ID, got, want)
		}
	}
}

func TestTrail_ReadCanceled(t *testing.T) {
	tl := newMemLog(t)
	tl.interleaved(5, "ws-a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := tl.log.Read(ctx, trail.Query{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Read(canceled ctx) = %v, want %v", err, context.Canceled)
	}
	if _, err := tl.log.Verify(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify(canceled ctx) = %v, want %v", err, context.Canceled)
	}
}

// TestTrail_SearchByID: the binary search by id behind Get and FirstAfterID
// finds every entry of a trail by its id, the entry after each, the first
// entry for an id below all, and none for one above all.
func TestTrail_SearchByID(t *testing.T) {
	tl := newMemLog(t)
	entries := readFixture(tl)
	n := uint64(len(entries))
	for i, e := range entries {
		if got, err := tl.log.Get(e.ID); err != nil || got.ID != e.ID {
			t.Errorf("Get(entry #%d) = %s, %v", i+1, got.ID, err)
		}
		if seq, err := tl.log.FirstAfterID(e.ID); err != nil || seq != uint64(i)+2 {
			t.Errorf("FirstAfterID(entry #%d) = %d, %v; want %d", i+1, seq, err, i+2)
		}
	}
	if seq, err := tl.log.FirstAfterID(""); err != nil || seq != 1 {
		t.Errorf(`FirstAfterID("") = %d, %v; want 1`, seq, err)
	}
	if seq, err := tl.log.FirstAfterID("01ZZZZZZZZZZZZZZZZZZZZZZZZ"); err != nil || seq != n+1 {
		t.Errorf("FirstAfterID(above all) = %d, %v; want %d", seq, err, n+1)
	}
}

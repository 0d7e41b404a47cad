package workspace_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/workspace"
)

// node describes one workspace of a test tree; parent "" makes it the root.
type node struct {
	id, parent, owner string
	state             workspace.State
}

// tree builds the inputs of Cascade from nodes, listing children in the
// order given (Cascade must not depend on it).
func tree(nodes ...node) (map[string]*workspace.Workspace, map[string][]string) {
	all := map[string]*workspace.Workspace{}
	kids := map[string][]string{}
	for _, n := range nodes {
		w := &workspace.Workspace{ID: n.id, Owner: n.owner, State: n.state, Role: "worker", Originator: "system"}
		if n.parent != "" {
			p := n.parent
			w.Parent = &p
			kids[p] = append(kids[p], n.id)
		}
		all[n.id] = w
	}
	return all, kids
}

func TestCascade(t *testing.T) {
	const (
		op    = "operator"
		alice = "alice"
		bob   = "bob"
		carol = "carol"
	)
	act, blk, idl, sus := workspace.Active, workspace.Blocked, workspace.Idle, workspace.Suspended
	tests := []struct {
		name         string
		nodes        []node
		failed       string
		wantFail     []string
		wantReparent []string
	}{
		{
			name: "same owner fails recursively to depth 3",
			nodes: []node{
				{"r", "", op, act},
				{"f", "r", alice, act},
				{"a", "f", alice, act},
				{"b", "a", alice, blk},
				{"c", "b", alice, sus},
				{"a2", "f", alice, idl},
				{"s", "r", alice, act}, // a sibling of f: untouched
			},
			failed:   "f",
			wantFail: []string{"a", "b", "c", "a2"},
		},
		{
			name: "cross owner immediate children are reparented with their subtree",
			nodes: []node{
				{"r", "", op, act},
				{"f", "r", alice, act},
				{"x", "f", bob, act},
				{"y", "x", bob, act},   // moves with x
				{"z", "x", alice, act}, // moves with x although alice's
				{"a", "f", alice, act},
				{"w", "a", carol, act}, // immediate child of the failing a
			},
			failed:       "f",
			wantFail:     []string{"a"},
			wantReparent: []string{"w", "x"},
		},
		{
			name: "terminal children are skipped but their live descendants handled",
			nodes: []node{
				{"r", "", op, act},
				{"f", "r", alice, act},
				{"d", "f", alice, workspace.Failed},
				{"e", "d", alice, idl},
				{"t", "f", alice, workspace.Closed},
				{"l", "t", alice, act},
				{"m", "t", bob, act},
				{"n", "m", bob, act},
				{"o", "t", alice, workspace.Failed},
			},
			failed:       "f",
			wantFail:     []string{"e", "l"},
			wantReparent: []string{"m"},
		},
		{
			name: "root failure fails everything regardless of owner",
			nodes: []node{
				{"r", "", op, act},
				{"a", "r", alice, act},
				{"b", "a", bob, blk},
				{"c", "b", carol, workspace.Migrating},
				{"x", "r", bob, workspace.Closed},
				{"y", "x", "dave", act},
				{"z", "r", "erin", workspace.Failed},
				{"i", "r", bob, workspace.Integrating},
				{"k", "r", carol, workspace.Conflicted},
			},
			failed:   "r",
			wantFail: []string{"a", "b", "c", "i", "k", "y"},
		},
		{
			name:   "leaf has nothing to cascade",
			nodes:  []node{{"r", "", op, act}, {"f", "r", alice, act}},
			failed: "f",
		},
		{
			name:   "unknown workspace plans nothing",
			nodes:  []node{{"r", "", op, act}, {"f", "r", alice, act}},
			failed: "nope",
		},
		{
			name: "children listed in any order come out in id order",
			nodes: []node{
				{"r", "", op, act},
				{"f", "r", alice, act},
				{"03", "f", alice, act},
				{"01", "f", bob, act},
				{"02", "f", alice, act},
				{"00", "f", carol, act},
			},
			failed:       "f",
			wantFail:     []string{"02", "03"},
			wantReparent: []string{"00", "01"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, kids := tree(tt.nodes...)
			before := cloneKids(kids)
			got := workspace.Cascade(all, kids, tt.failed)
			if !slices.Equal(got.Fail, tt.wantFail) {
				t.Errorf("Cascade(%s).Fail = %q, want %q", tt.failed, got.Fail, tt.wantFail)
			}
			if !slices.Equal(got.Reparent, tt.wantReparent) {
				t.Errorf("Cascade(%s).Reparent = %q, want %q", tt.failed, got.Reparent, tt.wantReparent)
			}
			if !reflect.DeepEqual(kids, before) {
				t.Errorf("Cascade(%s) changed its children map: %v, want %v", tt.failed, kids, before)
			}
		})
	}
}

// A child record missing from all (a stale children list) is skipped.
func TestCascade_MissingRecord(t *testing.T) {
	all, kids := tree(node{"r", "", "operator", workspace.Active}, node{"f", "r", "alice", workspace.Active}, node{"a", "f", "alice", workspace.Active})
	kids["f"] = append(kids["f"], "ghost")
	got := workspace.Cascade(all, kids, "f")
	if want := []string{"a"}; !slices.Equal(got.Fail, want) || len(got.Reparent) != 0 {
		t.Errorf("Cascade(f) = %+v, want {Fail: %q}", got, want)
	}
}

// TestCascade_ParentsBeforeChildren builds a random same-owner tree and
// checks that Fail lists exactly the live descendants, each after its
// failing ancestors, whatever the order of the children lists.
func TestCascade_ParentsBeforeChildren(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			nodes := []node{{"n000", "", "operator", workspace.Active}, {"n001", "n000", "alice", workspace.Active}}
			states := []workspace.State{workspace.Active, workspace.Blocked, workspace.Idle, workspace.Suspended, workspace.Closed, workspace.Failed}
			for i := 2; i < 300; i++ {
				parent := nodes[1+rng.IntN(len(nodes)-1)].id // so every node but the root is below n001
				nodes = append(nodes, node{fmt.Sprintf("n%03d", i), parent, "alice", states[rng.IntN(len(states))]})
			}
			all, kids := tree(nodes...)
			for _, k := range kids {
				rng.Shuffle(len(k), func(i, j int) { k[i], k[j] = k[j], k[i] })
			}
			got := workspace.Cascade(all, kids, "n001")

			// Every live descendant of n001, and nothing else.
			var want []string
			var walk func(string)
			walk = func(id string) {
				for _, c := range kids[id] {
					if !all[c].State.Terminal() {
						want = append(want, c)
					}
					walk(c)
				}
			}
			walk("n001")
			if len(got.Reparent) != 0 {
				t.Errorf("Cascade(n001).Reparent = %q, want none in a single-owner tree", got.Reparent)
			}
			if g, w := slices.Sorted(slices.Values(got.Fail)), slices.Sorted(slices.Values(want)); !slices.Equal(g, w) {
				t.Fatalf("Cascade(n001).Fail = %q, want (in any order) %q", g, w)
			}
			pos := map[string]int{}
			for i, id := range got.Fail {
				pos[id] = i
			}
			for i, id := range got.Fail {
				for p := all[id].ParentID(); p != "n001"; p = all[p].ParentID() {
					if j, ok := pos[p]; ok && j > i {
						t.Errorf("Cascade(n001).Fail has %s at %d before its ancestor %s at %d, want parents first", id, i, p, j)
					}
				}
			}
			// The same tree with children in another order plans the same.
			for _, k := range kids {
				slices.Reverse(k)
			}
			if again := workspace.Cascade(all, kids, "n001"); !reflect.DeepEqual(again, got) {
				t.Errorf("Cascade(n001) with reordered children = %+v, want %+v", again, got)
			}
		})
	}
}

func cloneKids(m map[string][]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

package integration

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/workspace"
)

// chain builds a register from incoming checkpoints merged in order.
func chain(t *testing.T, ins ...Incoming) []Record {
	t.Helper()
	var recs []Record
	for _, in := range ins {
		r, err := Next(Fold(recs), "T", in, StrategyDirect, ModeNormal, "ts", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return recs
}

func TestDetect(t *testing.T) {
	prior := []Incoming{
		{Source: "A", Checkpoint: "a1", Files: []string{"api.go", "shared.go"}, Content: `{"approach":"X","lang":"go"}`},
		{Source: "C", Checkpoint: "c1", Files: []string{"api.go"}},
	}
	tests := []struct {
		name string
		in   Incoming
		want map[string][]workspace.Conflict // by strategy
	}{
		{"nothing in common", Incoming{Source: "B", Files: []string{"b.go"}, Content: "plain"}, nil},
		{"overlap with two", Incoming{Source: "B", Files: []string{"shared.go", "api.go", "api.go"}}, map[string][]workspace.Conflict{
			StrategyLayered: {
				{ConflictType: workspace.ConflictContentOverlap, Resources: []string{"shared.go"}},
				{ConflictType: workspace.ConflictContentOverlap, Resources: []string{"api.go"}},
			},
			StrategyEvaluated: {
				{ConflictType: workspace.ConflictContentOverlap, Resources: []string{"shared.go"}},
				{ConflictType: workspace.ConflictContentOverlap, Resources: []string{"api.go"}},
			},
		}},
		{"own files again", Incoming{Source: "C", Files: []string{"api.go"}}, nil},
		{"contradiction, agreement ignored", Incoming{Source: "B", Content: `{"lang":"go","approach":"Y"}`}, map[string][]workspace.Conflict{
			StrategyEvaluated: {{ConflictType: workspace.ConflictSemanticContradiction, Resources: []string{"content:approach"}}},
		}},
		{"same value spelled otherwise", Incoming{Source: "B", Content: `{ "approach" : "X" }`}, nil},
		{"built on a replaced checkpoint", Incoming{Source: "B", Files: []string{"client.go"}, Assumes: map[string][]string{"a1": {"api.go", "shared.go"}}}, map[string][]workspace.Conflict{
			StrategyEvaluated: {{ConflictType: workspace.ConflictDependencyViolation, Resources: []string{"api.go"}}},
		}},
		{"built on the current checkpoint", Incoming{Source: "B", Files: []string{"client.go"}, Assumes: map[string][]string{"c1": {"api.go"}}}, nil},
		{"dependency not integrated", Incoming{Source: "B", PendingDeps: []string{"t2", "t1"}}, map[string][]workspace.Conflict{
			StrategyEvaluated: {{ConflictType: workspace.ConflictDependencyViolation, Resources: []string{"task:t1", "task:t2"}}},
		}},
		{"outside authority", Incoming{Source: "B", Files: []string{"docs/a.md", "src/x.go", "x.txt"}, Authority: []string{"docs/", "*.txt"}}, map[string][]workspace.Conflict{
			StrategyEvaluated: {{ConflictType: workspace.ConflictConstraintBreach, Resources: []string{"src/x.go"}}},
		}},
		{"no authority declared", Incoming{Source: "B", Files: []string{"src/x.go"}}, nil},
	}
	st := Fold(chain(t, prior...))
	for _, tt := range tests {
		for _, strategy := range []string{StrategyDirect, StrategyLayered, StrategyEvaluated} {
			t.Run(tt.name+"/"+strategy, func(t *testing.T) {
				got := Detect(strategy, st, tt.in)
				want := tt.want[strategy]
				if len(got) != len(want) {
					t.Fatalf("Detect(%s) = %+v, want %+v", strategy, got, want)
				}
				for i := range got {
					if got[i].ConflictType != want[i].ConflictType || !slices.Equal(got[i].Resources, want[i].Resources) || got[i].Description == "" {
						t.Errorf("Detect(%s)[%d] = %+v, want %+v", strategy, i, got[i], want[i])
					}
				}
			})
		}
	}
}

func TestFoldIncomingWins(t *testing.T) {
	recs := chain(t,
		Incoming{Source: "A", Checkpoint: "a1", Files: []string{"f"}, Content: `{"k":1}`},
		Incoming{Source: "B", Checkpoint: "b1", Files: []string{"f", "g"}, Content: `{"k":2}`},
	)
	st := Fold(recs)
	if st.Seq != 2 || st.Head != recs[1].Digest || st.Files["f"].Source != "B" || st.Files["g"].Seq != 2 || st.Keys["k"].Source != "B" {
		t.Errorf("Fold = %+v", st)
	}
	if *recs[1].Prev != recs[0].Digest || recs[0].Prev != nil {
		t.Errorf("prev links: %v, %v", recs[0].Prev, *recs[1].Prev)
	}
}

func TestNextSynthesisAndConflicts(t *testing.T) {
	in := Incoming{Source: "A", Checkpoint: "a1", Content: `{"k":1,"j":true}`}
	cf := []ResolvedConflict{{Conflict: workspace.Conflict{ConflictType: workspace.ConflictSemanticContradiction, Resources: []string{"content:k"}}, ResolutionStrategy: "coordinator_resolve"}}
	r, err := Next(State{}, "T", in, StrategyEvaluated, ModeNormal, "ts", json.RawMessage(`{"k":3}`), cf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Result != ResultConflictResolved || r.Keys["k"] != ContentKeys(`{"k":3}`)["k"] || r.Keys["j"] == "" {
		t.Errorf("Next = %+v, want the synthesis's k and conflict_resolved", r)
	}
}

func TestVerify(t *testing.T) {
	recs := chain(t, Incoming{Source: "A", Files: []string{"f"}}, Incoming{Source: "B"}, Incoming{Source: "C"})
	if err := Verify(recs); err != nil {
		t.Fatalf("Verify(good) = %v", err)
	}
	tests := []struct {
		name   string
		change func([]Record) []Record
	}{
		{"content changed", func(r []Record) []Record { r[1].Files = []string{"x"}; return r }},
		{"a record dropped", func(r []Record) []Record { return append(r[:1], r[2:]...) }},
		{"a fork", func(r []Record) []Record { p := *r[1].Prev; r[2].Prev = &p; return r }},
		{"reordered", func(r []Record) []Record { r[1], r[2] = r[2], r[1]; return r }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := tt.change(slices.Clone(recs))
			if err := Verify(bad); !errors.Is(err, ErrBrokenRegister) {
				t.Errorf("Verify(%s) = %v, want %v", tt.name, err, ErrBrokenRegister)
			}
		})
	}
}

func TestMergeReported(t *testing.T) {
	det := []workspace.Conflict{{ConflictType: workspace.ConflictContentOverlap, Resources: []string{"a", "b"}, Description: "runtime"}}
	rep := []workspace.Conflict{
		{ConflictType: workspace.ConflictContentOverlap, Resources: []string{"b", "a"}, Description: "coordinator"},
		{ConflictType: workspace.ConflictSemanticContradiction, Resources: []string{}, Description: "judgment"},
	}
	got := Merge(det, rep)
	if len(got) != 2 || got[0].Description != "runtime" || got[1].Description != "judgment" {
		t.Errorf("Merge = %+v, want the detected overlap and the reported contradiction", got)
	}
}

// FuzzContentKeys: any content gives keys without a panic, the same keys
// twice, and a JSON object's keys are all there.
func FuzzContentKeys(f *testing.F) {
	for _, s := range []string{``, `x`, `{}`, `{"a":1,"b":[1,2]}`, `{"a":{"z":1,"y":2}}`, `[1]`, `{"a":1e400}`, `{"a":"\ud800"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, b := ContentKeys(s), ContentKeys(s)
		if len(a) != len(b) {
			t.Fatalf("ContentKeys(%q) not deterministic", s)
		}
		for k, v := range a {
			if b[k] != v {
				t.Fatalf("ContentKeys(%q)[%q] = %s then %s", s, k, v, b[k])
			}
		}
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) == nil && len(m) != len(a) {
			t.Errorf("ContentKeys(%q) = %d keys, the object has %d", s, len(a), len(m))
		}
	})
}

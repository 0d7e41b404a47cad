package workspace_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/workspace"
)

func members(states ...workspace.State) []*workspace.Workspace {
	var out []*workspace.Workspace
	for i, s := range states {
		out = append(out, &workspace.Workspace{ID: string(rune('a' + i)), State: s, Group: "g"})
	}
	return out
}

func TestPlanBatchAbort(t *testing.T) {
	b := workspace.PlanBatchAbort(members(workspace.Active, workspace.Closed, workspace.Suspended, workspace.Failed, workspace.Idle))
	if want := []string{"a", "c", "e"}; !slices.Equal(b.Affected, want) {
		t.Errorf("Affected = %v, want %v", b.Affected, want)
	}
	if want := []string{"b", "d"}; !slices.Equal(b.Skipped, want) {
		t.Errorf("Skipped = %v, want %v", b.Skipped, want)
	}
}

func TestPlanBatchPriority(t *testing.T) {
	b, err := workspace.PlanBatchPriority(members(workspace.Active, workspace.Idle, workspace.Blocked, workspace.Integrating, workspace.Closed), workspace.PriorityCritical)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "c"}; !slices.Equal(b.Affected, want) {
		t.Errorf("Affected = %v, want %v", b.Affected, want)
	}
	if want := []string{"b", "d", "e"}; !slices.Equal(b.Skipped, want) {
		t.Errorf("Skipped = %v, want %v", b.Skipped, want)
	}
	if _, err := workspace.PlanBatchPriority(members(workspace.Active), "urgent"); !errors.Is(err, workspace.ErrInvalidRequest) {
		t.Errorf("PlanBatchPriority(urgent) = %v, want ErrInvalidRequest", err)
	}
}

func TestCreateRequestGroup(t *testing.T) {
	for _, tt := range []struct {
		group string
		ok    bool
	}{
		{"pipeline-042", true},
		{"batch 3", true},
		{"", true},
		{"   ", false},
		{"a\nb", false},
		{strings.Repeat("g", workspace.MaxGroupLen), true},
		{strings.Repeat("g", workspace.MaxGroupLen+1), false},
	} {
		body := `{"role":"worker","group":` + quote(tt.group) + `}`
		_, err := workspace.DecodeCreateRequest([]byte(body))
		if (err == nil) != tt.ok {
			t.Errorf("DecodeCreateRequest(group %q) = %v, want ok %v", tt.group, err, tt.ok)
		}
		if err != nil && !errors.Is(err, workspace.ErrInvalidRequest) {
			t.Errorf("DecodeCreateRequest(group %q) = %v, want ErrInvalidRequest", tt.group, err)
		}
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"`
}

func TestGrant(t *testing.T) {
	w := &workspace.Workspace{ID: "w", State: workspace.Active, Visibility: []string{"w", "x"}}
	if err := workspace.Grant(w, "y"); err != nil {
		t.Fatalf("Grant(y) = %v", err)
	}
	if !w.Sees("y") || !w.Sees("x") {
		t.Errorf("after Grant(y) visibility = %v, want x and y", w.Visibility)
	}
	for _, tt := range []struct {
		state  workspace.State
		target string
		want   error
	}{
		{workspace.Active, "y", workspace.ErrInvalidRequest}, // already visible
		{workspace.Active, "w", workspace.ErrInvalidRequest}, // itself
		{workspace.Active, workspace.All, workspace.ErrInvalidRequest},
		{workspace.Blocked, "z", nil},
		{workspace.Idle, "z", workspace.ErrInvalidTransition},
		{workspace.Suspended, "z", workspace.ErrInvalidTransition},
		{workspace.Integrating, "z", workspace.ErrInvalidTransition},
		{workspace.Closed, "z", workspace.ErrInvalidTransition},
	} {
		c := w.Clone()
		c.State = tt.state
		err := workspace.Grant(c, tt.target)
		if (tt.want == nil && err != nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("Grant(%s, %q) = %v, want %v", tt.state, tt.target, err, tt.want)
		}
		if err != nil && len(c.Visibility) != len(w.Visibility) {
			t.Errorf("a refused Grant changed the visibility: %v", c.Visibility)
		}
	}
}

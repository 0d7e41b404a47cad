package atlas_test

import (
	"errors"
	"testing"

	"github.com/wacpd/wacpd/atlas"
)

// TestPatternMatch: the seed's table (exact, prefix, suffix and middle
// wildcards) and where each stops, on dot boundaries.
func TestPatternMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, action string
		want            bool
	}{
		{"ticket.delete", "ticket.delete", true},
		{"ticket.delete", "ticket.deleted", false},
		{"ticket.delete", "ticket", false},
		{"ticket.delete", "ticket.delete.all", false},
		{"ticket.*", "ticket.get", true},
		{"ticket.*", "ticket.delete", true},
		{"ticket.*", "ticket.comment.add", true},
		{"ticket.*", "ticket", false},
		{"ticket.*", "tickets.get", false},
		{"ticket.*", "user.ticket.get", false},
		{"*.delete", "ticket.delete", true},
		{"*.delete", "user.delete", true},
		{"*.delete", "admin.user.delete", true},
		{"*.delete", "delete", false},
		{"*.delete", "ticket.delete.now", false},
		{"*.delete", "ticket.undelete", false},
		{"admin.*.delete", "admin.user.delete", true},
		{"admin.*.delete", "admin.org.user.delete", true},
		{"admin.*.delete", "admin.delete", false},
		{"admin.*.delete", "user.admin.x.delete", false},
		{"*", "ticket.get", true},
		{"*", "x", true},
		{"*.*", "x", false},
		{"*.*", "x.y", true},
		{"a.*.b.*", "a.x.b.y.z", true},
		{"a.*.b.*", "a.b.y", false},
	} {
		if got := atlas.Match(tt.pattern, tt.action); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.action, got, tt.want)
		}
	}
}

func TestParsePatternRefuses(t *testing.T) {
	for _, bad := range []string{"", ".", "a.", ".a", "a..b", "delete_*", "a.*b", "a b", "a.\tb", "**"} {
		if _, err := atlas.ParsePattern(bad); !errors.Is(err, atlas.ErrPattern) {
			t.Errorf("ParsePattern(%q) = %v, want ErrPattern", bad, err)
		}
		if atlas.Match(bad, "a.b") {
			t.Errorf("the bad pattern %q matched", bad)
		}
	}
	if err := atlas.CheckActionID("ticket.*"); !errors.Is(err, atlas.ErrPattern) {
		t.Errorf("CheckActionID(ticket.*) = %v", err)
	}
	if err := atlas.CheckActionID("api.github.create_issue"); err != nil {
		t.Errorf("CheckActionID(api.github.create_issue) = %v", err)
	}
}

// FuzzPattern: parsing never panics; a pattern without wildcards matches
// exactly itself, and "*" everything parseable as an action id.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{"ticket.*", "*.delete", "admin.*.delete", "a..b", "*"} {
		f.Add(s, "ticket.delete")
	}
	f.Fuzz(func(t *testing.T, pattern, action string) {
		p, err := atlas.ParsePattern(pattern)
		if err != nil {
			return
		}
		got := p.Match(action)
		if atlas.CheckActionID(pattern) == nil && got != (pattern == action) {
			t.Fatalf("literal %q vs %q: %v", pattern, action, got)
		}
		if atlas.CheckActionID(action) == nil && !atlas.Match("*", action) {
			t.Fatalf("* does not match %q", action)
		}
	})
}

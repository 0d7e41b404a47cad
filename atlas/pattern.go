package atlas

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Action patterns: the one matcher of every action pattern in wacpd (policy
// rules, capabilities, checkpoint triggers, CARP scopes). A pattern is an
// action id whose dot-separated segments may be "*", and "*" stands for
// one or more whole segments:
//
//	ticket.delete   ticket.delete only
//	ticket.*        ticket.get, ticket.delete, ticket.comment.add
//	*.delete        ticket.delete, user.delete, admin.user.delete
//	admin.*.delete  admin.user.delete, admin.org.user.delete
//	*               every action
//
// A "*" inside a segment (delete_*) is not a pattern: wildcards stop at dot
// boundaries, so that a rule never covers an action by a coincidence of
// spelling. A "*" covers as much on the left of a deny as on the right of
// an allow: "*.delete" denies every delete however deep.

// ErrPattern is wrapped by the errors of ParsePattern and CheckActionID.
var ErrPattern = errors.New("atlas: bad action pattern")

// Pattern is a parsed action pattern.
type Pattern struct {
	src  string
	segs []string // "*" or a literal segment
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.src }

// ParsePattern parses s: non-empty segments separated by single dots, each
// "*" or a literal without "*", whitespace or control characters.
func ParsePattern(s string) (Pattern, error) {
	segs := strings.Split(s, ".")
	for _, seg := range segs {
		if err := checkSegment(s, seg, true); err != nil {
			return Pattern{}, err
		}
	}
	return Pattern{src: s, segs: segs}, nil
}

// CheckActionID checks that id is an action id: a pattern without "*".
func CheckActionID(id string) error {
	for _, seg := range strings.Split(id, ".") {
		if err := checkSegment(id, seg, false); err != nil {
			return err
		}
	}
	return nil
}

func checkSegment(s, seg string, star bool) error {
	switch {
	case seg == "":
		return fmt.Errorf("%w: %q has an empty segment", ErrPattern, s)
	case seg == "*" && star:
		return nil
	case strings.Contains(seg, "*"):
		if star {
			return fmt.Errorf("%w: %q: a wildcard is a whole segment (%q is not)", ErrPattern, s, seg)
		}
		return fmt.Errorf("%w: action id %q has a wildcard", ErrPattern, s)
	}
	for _, r := range seg {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%w: %q has whitespace or a control character", ErrPattern, s)
		}
	}
	return nil
}

// Match reports whether action (an action id) is covered by p.
func (p Pattern) Match(action string) bool {
	return match(p.segs, strings.Split(action, "."))
}

// match reports whether pat covers act, in O(len(pat)×len(act)) (patterns
// may come from a request: no backtracking). ok[j] is whether the pattern
// so far covers act[:j].
func match(pat, act []string) bool {
	ok := make([]bool, len(act)+1)
	ok[0] = true
	next := make([]bool, len(act)+1)
	for _, seg := range pat {
		clear(next)
		if seg == "*" {
			// One or more segments: next[j] if ok[i] for some i < j.
			any := false
			for j := 1; j <= len(act); j++ {
				any = any || ok[j-1]
				next[j] = any
			}
		} else {
			for j := 1; j <= len(act); j++ {
				next[j] = ok[j-1] && act[j-1] == seg
			}
		}
		ok, next = next, ok
	}
	return ok[len(act)]
}

// Match parses pattern and matches action; a bad pattern matches nothing.
func Match(pattern, action string) bool {
	p, err := ParsePattern(pattern)
	return err == nil && p.Match(action)
}

package atlas

import (
	"fmt"
	"path"
	"strings"
)

// Path patterns name the paths an approval covers (issue 16): an exact
// path (src/a.go), a path.Match glob of one directory level (src/*.go),
// or a directory and everything below it (src/**). Paths are compared in
// their cleaned form (path.Clean), so ./src/a.go is src/a.go.

// CheckPathPattern reports why p is not a path pattern: empty, a bad
// glob, or a ** that is not the whole last element.
func CheckPathPattern(p string) error {
	if p == "" {
		return fmt.Errorf("a path pattern is empty")
	}
	base := p
	if strings.HasSuffix(p, "/**") || p == "**" {
		base = strings.TrimSuffix(strings.TrimSuffix(p, "**"), "/")
	}
	if strings.Contains(base, "**") {
		return fmt.Errorf("path pattern %q: ** stands only as the last element (dir/**)", p)
	}
	if _, err := path.Match(base, ""); err != nil {
		return fmt.Errorf("path pattern %q: %v", p, err)
	}
	return nil
}

// MatchPath reports whether path p (cleaned first) is covered by pattern
// pat.
func MatchPath(pat, p string) bool {
	p = path.Clean(p)
	if pat == "**" {
		return true
	}
	if dir, ok := strings.CutSuffix(pat, "/**"); ok {
		dir = path.Clean(dir)
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	if ok, err := path.Match(path.Clean(pat), p); err == nil && ok {
		return true
	}
	return path.Clean(pat) == p
}

package runtime

import (
	"slices"

	"github.com/wacpd/wacpd/user"
)

// User returns user id's committed record (its state and capabilities),
// and false when there is none. The web console reads it to show a user
// only the decisions its capabilities allow; every operation still
// authorizes on its own.
func (e *Engine) User(id string) (user.User, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	u, ok := find(nil, id, usersOf, e.gov.users)
	u.Capabilities = slices.Clone(u.Capabilities)
	return u, ok
}

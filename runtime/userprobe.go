package runtime

import (
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
)

// What a person learns of workspace ids (User spec §6.4; docs/security.md,
// known gaps). A person's action on a workspace is authorized before the
// id is looked up: an id that names no workspace is the target {id, no
// owner}, which no _own capability covers. So a person who may act only
// on its own workspaces (or not at all, or who is not active) is refused
// capability_denied for a random id with the reason, message and
// capability_denied entry (naming the id, in the person's own trail scope)
// it gets for a workspace of someone else's: the answer does not tell
// whether the id exists. A person holding the action's _any capability
// may act on every workspace, and is told not_found.

// authorizeOn authorizes person uid's action on workspace ws
// (authorizeUser, a denial written in t) and then requires ws to exist.
func (t *tx) authorizeOn(uid, action, ws, ts string) error {
	w := t.peek(ws)
	target := user.Target{ID: ws}
	if w != nil {
		target.Owner = w.Owner
	}
	if err := t.authorizeUser(uid, action, target, ts); err != nil {
		return err
	}
	if w == nil {
		return Refuse(wire.CodeNotFound, "workspace %s does not exist", ws)
	}
	return nil
}

// userMay is authorizeOn in a commit of its own: a denial is committed
// and returned (capability_denied); an id that names no workspace, which
// the person may act on, is not_found. Caller runs in the committer.
func (e *Engine) userMay(uid, action, id string) error {
	return e.userCommit(func(t *tx) error {
		return t.authorizeOn(uid, action, id, clock.Format(t.next()))
	})
}

// userParent authorizes person uid's creation under parent pid (not the
// root): a person with create_workspace creates under its own workspaces,
// one with create_workspace_any under any; a parent that does not exist
// is answered as one of someone else's, capability_denied, unless the
// person may create under any (not_found). Caller runs in the committer.
func (e *Engine) userParent(uid, pid string) error {
	return e.userMay(uid, "workspace.create", pid)
}

package runtime

import (
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Authority and existence (docs/security.md §1 and "Known gaps").
//
// A workspace a principal may not see answers exactly as one that does not
// exist: the same code (not_found) and the same message, so that no
// operation that takes a workspace id tells its caller whether an id it
// may not see exists. What a principal may see is canSee's rule.
//
// A delegate's authority over its subtree follows its state: while it is
// suspended or migrating its agent creates, aborts, suspends, resumes,
// migrates, integrates and resolves nothing in its subtree and works with
// no tasks (workspace_not_active); resumed, it has its authority again. A
// terminal delegate has none at all (permission_denied, as before).

// lookupFor returns workspace id's record if the agent of actor may see
// it. A workspace that does not exist and one actor may not see give the
// same refusal (hiddenWorkspace). Caller holds e.mu.
func (e *Engine) lookupFor(actor, id string) (*workspace.Workspace, error) {
	w := e.get(id)
	if w == nil || !e.canSee(actor, id) {
		return nil, hiddenWorkspace(id)
	}
	return w, nil
}

// hiddenWorkspace is the refusal for a workspace id that does not exist or
// that the caller may not see: one code and one message for both.
func hiddenWorkspace(id string) error {
	return Refuse(wire.CodeNotFound, "workspace %s does not exist or is not visible to the caller", id)
}

// hiddenCheckpoint is hiddenWorkspace for a checkpoint id.
func hiddenCheckpoint(id string) error {
	return Refuse(wire.CodeNotFound, "checkpoint %s does not exist or is not visible to the caller", id)
}

// activeAuthority refuses a delegate that is suspended or migrating: its
// authority over its subtree waits until it is resumed. The root always
// has its authority (it is never suspended).
func activeAuthority(a *workspace.Workspace) error {
	if a.IsRoot() {
		return nil
	}
	switch a.State {
	case workspace.Suspended, workspace.Migrating:
		return Refuse(wire.CodeWorkspaceNotActive,
			"workspace %s is %s: a delegate has no authority over its subtree until it is resumed", a.ID, a.State)
	}
	return nil
}

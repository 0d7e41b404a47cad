package runtime

import (
	"strings"
	"testing"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// TestUsers_InvisibleIsNotRevealed: a person's highway operation that
// takes a workspace id answers a workspace it may not act on (another's)
// exactly as an id of no workspace: same code, same message, and a
// capability_denied entry naming the id either way (the person reads its
// own entries). A person holding the action's _any capability acts on
// the real one and is told not_found of the other.
func TestUsers_InvisibleIsNotRevealed(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "bob")
	mkUser(t, e, "own", user.CreateWorkspace, user.SuspendOwn, user.AbortOwn, user.InjectDirective, user.ModifyBudget)
	mkUser(t, e, "none")
	mkUser(t, e, "off", user.SuspendOwn)
	if _, err := setState(e, "off", user.Suspended); err != nil {
		t.Fatal(err)
	}
	mkUser(t, e, "any", user.CreateWorkspaceAny, user.SuspendAny, user.AbortAny, user.InjectDirectiveAny, user.ModifyBudgetAny, user.TransferOwnership)
	const ghost = "01M8ZZZZZZZZZZZZZZZZZZZZZZ" // no such workspace

	// Each op is given a fresh real workspace of bob's, so that one
	// person's success does not change the next one's answer.
	budget := &workspace.Budget{ComputeBudget: &workspace.ComputeBudget{TokenLimit: 10}}
	ops := []struct {
		name string
		call func(uid, id string) error
	}{
		{"highway.workspace.abort", func(u, id string) error { _, err := e.UserAbort(ctx, u, wire.IDRequest{ID: id}); return err }},
		{"highway.workspace.suspend", func(u, id string) error { _, err := e.UserSuspend(ctx, u, wire.IDRequest{ID: id}); return err }},
		{"highway.workspace.resume", func(u, id string) error { _, err := e.UserResume(ctx, u, wire.IDRequest{ID: id}); return err }},
		{"highway.workspace.transfer", func(u, id string) error {
			_, err := e.UserTransfer(ctx, u, wire.TransferRequest{ID: id, Owner: "none"})
			return err
		}},
		{"highway.workspace.budget", func(u, id string) error {
			_, err := e.UserModifyBudget(ctx, u, wire.BudgetRequest{ID: id, Budget: budget})
			return err
		}},
		{"highway.workspace.create parent", func(u, id string) error {
			_, err := userCreate(e, u, `{"role":"worker","parent":"`+id+`"}`)
			return err
		}},
		{"highway.inject", func(u, id string) error { _, err := e.Inject(ctx, u, envBody(id, "feedback", "")); return err }},
		{"highway.approval.mode", func(u, id string) error {
			_, err := e.SetApprovalMode(ctx, u, wire.ApprovalModeRequest{Workspace: id, Mode: "always"})
			return err
		}},
		{"highway.trust.restore", func(u, id string) error {
			_, err := e.RestoreTrust(ctx, u, wire.TrustRestoreRequest{Workspace: id, Boundary: "tool:file.delete"})
			return err
		}},
		{"audit.trail.read workspace", func(u, id string) error { _, err := e.UserTrailScope(ctx, u, id, false); return err }},
	}
	answer := func(err error, id string) string {
		if err == nil {
			return "ok"
		}
		return Code(err) + ": " + strings.ReplaceAll(Message(err), id, "<id>")
	}
	denied := func(uid, target string) int {
		return len(trailWhere(t, e, trail.EventCapabilityDenied, map[string]string{"user_id": uid, "target": target}))
	}
	for _, op := range ops {
		for _, uid := range []string{"own", "none", "off"} {
			w := newWorker(t, e, map[string]any{"owner": "bob"})
			g0 := denied(uid, ghost)
			real := answer(op.call(uid, w.ID), w.ID)
			random := answer(op.call(uid, ghost), ghost)
			if real != random {
				t.Errorf("%s by %s: another's workspace answers %q, an unknown id %q", op.name, uid, real, random)
			}
			if !strings.HasPrefix(real, wire.CodeCapabilityDenied) {
				t.Errorf("%s by %s on another's workspace = %q, want capability_denied", op.name, uid, real)
			}
			if r, g := denied(uid, w.ID), denied(uid, ghost)-g0; r != 1 || g != r {
				t.Errorf("%s by %s: capability_denied entries naming the real id %d, the unknown id %d; want 1 each", op.name, uid, r, g)
			}
		}
		// The _any holder is told: an unknown id is not_found.
		if op.name == "audit.trail.read workspace" {
			continue // view_trail_any reads everything: an unknown workspace has no entries
		}
		if got := Code(op.call("any", ghost)); got != wire.CodeNotFound && got != wire.CodeTargetNotFound {
			t.Errorf("%s by a person with the _any capability on an unknown id = %s, want not_found", op.name, got)
		}
	}
}

package client_test

import (
	"errors"
	"testing"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/workspace"
)

// TestResolveConflict: an integration that reports a conflict leaves the
// workspace conflicted; the coordinator's ResolveConflict ends it (the
// resolution strategy decides the state that follows), and a second call
// finds nothing to resolve.
func TestResolveConflict(t *testing.T) {
	ctx := testCtx(t)
	dir, url := startDaemon(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	w := newWorker(t, ctx, coord, url, true)
	cp, err := w.CreateCheckpoint(ctx, artifact(nil, "final"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.EmitSignal(ctx, client.SignalRequest{Type: string(taxonomy.SignalComplete)}); err != nil {
		t.Fatal(err)
	}
	res, err := coord.Integrate(ctx, client.IntegrateRequest{Workspace: w.Workspace(), Decision: "accept", Strategy: "layered",
		Conflicts: []workspace.Conflict{{ConflictType: "content_overlap", Resources: []string{"a.go"}, Description: "both edit a.go"}}})
	if err != nil || res.Outcome != "conflicted" || res.Checkpoint != cp.ID {
		t.Fatalf("Integrate with a conflict = %+v, %v; want conflicted", res, err)
	}
	ws, err := coord.ResolveConflict(ctx, client.ResolveRequest{Workspace: w.Workspace(), ResolutionStrategy: "agent_rework", Resolution: "rework a.go"})
	if err != nil || ws.State != workspace.Failed || ws.Reason != "revision_required" {
		t.Fatalf("ResolveConflict(agent_rework) = %+v, %v; want the workspace failed with revision_required (the agent reworks in a new one)", ws, err)
	}
	_, err = coord.ResolveConflict(ctx, client.ResolveRequest{Workspace: w.Workspace(), ResolutionStrategy: "agent_rework"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "invalid_transition" {
		t.Fatalf("ResolveConflict of a workspace not conflicted = %v, want invalid_transition", err)
	}
}

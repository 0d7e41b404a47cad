package daemon_test

import (
	"testing"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/workspace"
)

// TestMigrationUnbindsTheOldAgent checks WACP migration's "unbind the old
// agent, bind the new one" (Workspace §13): workspace.migrate.complete gives
// the workspace a new token for the new agent, the old token stops
// authenticating (new connections are refused, the old agent's open
// connection is closed), the new one works, and both stay so after a
// restart. A failed migration mints no token.
func TestMigrationUnbindsTheOldAgent(t *testing.T) {
	ctx := clientCtx(t)
	dir := t.TempDir()
	d := daemontest.Start(t, daemon.Config{DataDir: dir})
	dial := func(url, token, ws string) (*client.Client, error) {
		return dialClient(t, ctx, client.Options{URL: url, Token: token, Workspace: ws})
	}
	coord, err := dial(d.URL, d.AdminToken, "")
	if err != nil {
		t.Fatal(err)
	}
	worker := func() client.Created { return directedWorker(t, ctx, coord) }
	checkpoint := func(c *client.Client, parent *string) (checkpointchain.Checkpoint, error) {
		return artifact(ctx, c, parent)
	}

	w := worker()
	id := w.Workspace.ID
	old, err := dial(d.URL, w.Token, id)
	if err != nil {
		t.Fatal(err)
	}
	first, err := checkpoint(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.Migrate(ctx, id, "agent-b", "host drain"); err != nil {
		t.Fatal(err)
	}
	m, err := coord.CompleteMigration(ctx, id, "agent-b", "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Token == nil || *m.Token == "" || *m.Token == w.Token || m.Workspace == nil || m.Workspace.State != workspace.Active || m.Workspace.Agent != "agent-b" {
		t.Fatalf("CompleteMigration = %+v, want a new token and the workspace active with agent-b", m)
	}
	if _, err := checkpoint(old, &first.ID); err == nil {
		t.Error("the old agent's open connection still creates checkpoints after the migration")
	}

	unbound := func(url string) {
		t.Helper()
		if c, err := dial(url, w.Token, id); err == nil {
			if _, err := c.Info(ctx); err == nil {
				t.Error("the old token still authenticates after the migration")
			}
		}
		c, err := dial(url, *m.Token, id)
		if err != nil {
			t.Fatalf("dial with the new token: %v", err)
		}
		head, err := c.Head(ctx, id, false)
		if err != nil {
			t.Fatalf("checkpoint.head with the new token: %v", err)
		}
		if _, err := checkpoint(c, &head.ID); err != nil {
			t.Errorf("checkpoint with the new token: %v", err)
		}
	}
	unbound(d.URL)

	// A failed migration fails the workspace and mints nothing.
	f := worker()
	if _, err := coord.Migrate(ctx, f.Workspace.ID, "agent-c", ""); err != nil {
		t.Fatal(err)
	}
	fm, err := coord.CompleteMigration(ctx, f.Workspace.ID, "agent-c", "cannot bind")
	if err != nil || fm.Token != nil || fm.Workspace == nil || fm.Workspace.State != workspace.Failed {
		t.Errorf("failed CompleteMigration = %+v, %v; want the workspace failed and no token", fm, err)
	}

	d.Stop()
	d = daemontest.Start(t, daemon.Config{DataDir: dir})
	unbound(d.URL)
}

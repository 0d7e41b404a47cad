package daemon_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/workspace"
)

// Tests over the real daemon (embedded NATS, the client) of the endpoints
// issue 19 added: workspace.visibility.grant, workspace.priority,
// workspace.budget, highway.workspace.budget, group.priority, group.abort,
// and the liveness warning on the live trail feed.

// wantRefusal fails the test unless err is a daemon refusal with code.
func wantRefusal(t *testing.T, what string, err error, code string) {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("%s = %v, want %s", what, err, code)
	}
}

// groupWorker creates an active worker of group g under coord's workspace
// (a directive activates it), with req's other fields.
func groupWorker(t *testing.T, ctx context.Context, coord *client.Client, req client.CreateRequest) client.Created {
	t.Helper()
	req.Role = taxonomy.RoleWorker
	created, err := coord.CreateWorkspace(ctx, req)
	if err != nil {
		t.Fatalf("CreateWorkspace(%+v): %v", req, err)
	}
	if _, err := coord.SendEnvelope(ctx, client.EnvelopeRequest{
		To: created.Workspace.ID, Type: taxonomy.EnvelopeDirective, Payload: envelope.Payload{Content: "go"},
	}); err != nil {
		t.Fatal(err)
	}
	return created
}

// trailCount returns how many entries of type typ the trail holds.
func trailCount(t *testing.T, ctx context.Context, c *client.Client, typ trail.EventType) int {
	t.Helper()
	page, err := c.ReadTrail(ctx, client.TrailQuery{EventType: typ})
	if err != nil {
		t.Fatalf("ReadTrail(%s): %v", typ, err)
	}
	return len(page.Entries)
}

// TestIssue19EndpointsOverNATS calls each endpoint through the client and
// the daemon: its success (the reply and its trail entry) and a refusal
// (the code, and nothing written).
func TestIssue19EndpointsOverNATS(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	budget := func(tokens int64) *workspace.Budget {
		return &workspace.Budget{ComputeBudget: &workspace.ComputeBudget{TokenLimit: tokens}}
	}
	a := groupWorker(t, ctx, coord, client.CreateRequest{Group: "batch-1", Budget: budget(1000)})
	b := groupWorker(t, ctx, coord, client.CreateRequest{Group: "batch-1"})
	agentA, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: a.Token, Workspace: a.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("workspace.visibility.grant", func(t *testing.T) {
		_, err := agentA.GetWorkspace(ctx, b.Workspace.ID)
		wantRefusal(t, "GetWorkspace(b) by a before the grant", err, "not_found")
		w, err := coord.GrantVisibility(ctx, a.Workspace.ID, b.Workspace.ID, "review b's work")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(w.Visibility, b.Workspace.ID) {
			t.Fatalf("GrantVisibility: visibility %v, want it to hold %s", w.Visibility, b.Workspace.ID)
		}
		if _, err := agentA.GetWorkspace(ctx, b.Workspace.ID); err != nil {
			t.Fatalf("the grantee reads the target: %v", err)
		}
		n := trailCount(t, ctx, coord, trail.EventVisibilityGranted)
		_, err = coord.GrantVisibility(ctx, a.Workspace.ID, b.Workspace.ID, "again")
		wantRefusal(t, "GrantVisibility(already visible)", err, "invalid_structure")
		_, err = agentA.GrantVisibility(ctx, b.Workspace.ID, a.Workspace.ID, "a worker grants")
		if err == nil {
			t.Fatal("a worker granted visibility")
		}
		if got := trailCount(t, ctx, coord, trail.EventVisibilityGranted); got != n || n != 1 {
			t.Fatalf("visibility_granted entries %d, then %d after the refusals; want 1, 1", n, got)
		}
	})

	t.Run("workspace.priority", func(t *testing.T) {
		w, err := coord.SetPriority(ctx, a.Workspace.ID, workspace.PriorityCritical)
		if err != nil || w.Priority != workspace.PriorityCritical {
			t.Fatalf("SetPriority(critical) = %+v, %v", w, err)
		}
		n := trailCount(t, ctx, coord, trail.EventPriorityChanged)
		_, err = coord.SetPriority(ctx, a.Workspace.ID, "urgent")
		wantRefusal(t, "SetPriority(urgent)", err, "invalid_structure")
		if got := trailCount(t, ctx, coord, trail.EventPriorityChanged); got != n {
			t.Fatalf("priority_changed entries %d after a refusal, want %d", got, n)
		}
	})

	t.Run("workspace.budget", func(t *testing.T) {
		w, err := coord.ModifyBudget(ctx, a.Workspace.ID, budget(1500))
		if err != nil || w.Budget == nil || w.Budget.ComputeBudget.TokenLimit != 1500 {
			t.Fatalf("ModifyBudget(1500 tokens) = %+v, %v", w, err)
		}
		n := trailCount(t, ctx, coord, trail.EventBudgetModified)
		_, err = coord.ModifyBudget(ctx, a.Workspace.ID, budget(100))
		wantRefusal(t, "ModifyBudget(lower)", err, "invalid_structure")
		if got := trailCount(t, ctx, coord, trail.EventBudgetModified); got != n || n != 1 {
			t.Fatalf("budget_modified entries %d, then %d after a refusal; want 1, 1", n, got)
		}
	})

	t.Run("highway.workspace.budget", func(t *testing.T) {
		dial := func(name string, caps ...user.Capability) *client.Client {
			t.Helper()
			tok, err := coord.CreateToken(ctx, "user", name, caps...)
			if err != nil {
				t.Fatal(err)
			}
			c, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: tok})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		bob, eve := dial("bob", user.ModifyBudgetAny), dial("eve", user.ViewTrailAny)
		w, err := bob.PersonModifyBudget(ctx, a.Workspace.ID, budget(2000))
		if err != nil || w.Budget.ComputeBudget.TokenLimit != 2000 {
			t.Fatalf("PersonModifyBudget(bob, 2000 tokens) = %+v, %v", w, err)
		}
		n := trailCount(t, ctx, coord, trail.EventBudgetModified)
		_, err = eve.PersonModifyBudget(ctx, a.Workspace.ID, budget(3000))
		wantRefusal(t, "PersonModifyBudget(eve, without modify_budget)", err, "capability_denied")
		if got := trailCount(t, ctx, coord, trail.EventBudgetModified); got != n {
			t.Fatalf("budget_modified entries %d after a refusal, want %d", got, n)
		}
		w, err = coord.GetWorkspace(ctx, a.Workspace.ID)
		if err != nil || w.Budget.ComputeBudget.TokenLimit != 2000 {
			t.Fatalf("token_limit after the refusal = %+v, %v; want 2000", w, err)
		}
	})

	t.Run("group.priority", func(t *testing.T) {
		res, err := coord.SetGroupPriority(ctx, "batch-1", workspace.PriorityBackground)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{a.Workspace.ID, b.Workspace.ID}
		slices.Sort(want)
		if got := slices.Sorted(slices.Values(res.Affected)); !slices.Equal(got, want) || res.NewPriority != workspace.PriorityBackground {
			t.Fatalf("SetGroupPriority = %+v, want affected %v, background", res, want)
		}
		_, err = coord.SetGroupPriority(ctx, "", workspace.PriorityNormal)
		wantRefusal(t, "SetGroupPriority(no group)", err, "invalid_structure")
		if n := trailCount(t, ctx, coord, trail.EventBatchPriorityChanged); n != 1 {
			t.Fatalf("batch_priority_changed entries %d, want 1", n)
		}
	})

	t.Run("group.abort", func(t *testing.T) {
		_, err := agentA.AbortGroup(ctx, "batch-1", "a worker aborts")
		if err == nil {
			t.Fatal("a worker aborted a group")
		}
		if w, err := coord.GetWorkspace(ctx, b.Workspace.ID); err != nil || w.State != workspace.Active {
			t.Fatalf("after the refused group abort %s is %+v, %v; want active", b.Workspace.ID, w, err)
		}
		res, err := coord.AbortGroup(ctx, "batch-1", "batch cancelled")
		if err != nil || len(res.Affected) != 2 {
			t.Fatalf("AbortGroup = %+v, %v; want 2 affected", res, err)
		}
		for _, id := range []string{a.Workspace.ID, b.Workspace.ID} {
			if w, err := coord.GetWorkspace(ctx, id); err != nil || w.State != workspace.Failed {
				t.Fatalf("after the group abort %s is %+v, %v; want failed", id, w, err)
			}
		}
		res, err = coord.AbortGroup(ctx, "batch-1", "again")
		if err != nil || len(res.Affected) != 0 || len(res.Skipped) != 2 {
			t.Fatalf("AbortGroup(again) = %+v, %v; want nothing affected, both skipped", res, err)
		}
	})
}

// TestIssue19LivenessWarningOnTheFeed: a worker with a short
// liveness_interval that stays silent gets a liveness_warning from the
// daemon's own timer loop, and the coordinator sees it on the live trail
// feed (wacp.v1.trail.<ws>.liveness_warning).
func TestIssue19LivenessWarningOnTheFeed(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	// The feed is followed from before the workspace exists; a warning
	// comes again after each further interval of silence, so one that came
	// before the subscription took effect is followed by another.
	feedCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	got := make(chan trail.Entry, 1)
	tailDone := make(chan error, 1)
	var ws string
	wsSet := make(chan struct{})
	go func() {
		tailDone <- coord.TailTrail(feedCtx, "*."+string(trail.EventLivenessWarning), func(en trail.Entry) error {
			<-wsSet
			if en.Workspace != ws {
				return nil
			}
			got <- en
			return errStopTail
		})
	}()
	w := groupWorker(t, ctx, coord, client.CreateRequest{Liveness: "1s"})
	ws = w.Workspace.ID
	close(wsSet)
	select {
	case en := <-got:
		if en.Workspace != w.Workspace.ID || en.EventType != trail.EventLivenessWarning || en.Actor != trail.ActorProtocol {
			t.Fatalf("feed entry %+v, want a protocol liveness_warning of %s", en, w.Workspace.ID)
		}
	case err := <-tailDone:
		t.Fatalf("TailTrail ended before a liveness_warning: %v", err)
	case <-feedCtx.Done():
		t.Fatal("no liveness_warning on the live feed within 30s")
	}
	if st, err := coord.GetWorkspace(ctx, w.Workspace.ID); err != nil || st.State != workspace.Active {
		t.Fatalf("after the warning %+v, %v; want active (advisory)", st, err)
	}
}

var errStopTail = errors.New("stop")

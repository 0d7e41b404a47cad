package daemon_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/workspace"
)

// TestTrailAggregate_OverNATS: trail queries over the real daemon (WACP
// Trail §5). A run raises budgets — the coordinator on two workers, a
// person (alice) on her own workspace — and, while they are all active,
// the trail answers compound queries (workspace, event type, body field
// and time AND-combined), a query by a person's user_id, and aggregates:
// count, group and sum against values computed by hand from the limits
// the run set, integers summed exactly past 2^53. alice's aggregates cover
// only what she may read; bad requests are invalid_structure and write
// nothing.
func TestTrailAggregate_OverNATS(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	limits := func(tokens int64, cost float64) *workspace.Budget {
		b := &workspace.Budget{}
		if tokens != 0 {
			b.ComputeBudget = &workspace.ComputeBudget{TokenLimit: tokens}
		}
		if cost != 0 {
			b.CostLimit = &cost
		}
		return b
	}
	w1 := groupWorker(t, ctx, coord, client.CreateRequest{Budget: limits(1000, 1.5)})
	w2 := groupWorker(t, ctx, coord, client.CreateRequest{Budget: limits(500, 0.1)})
	tok, err := coord.CreateToken(ctx, "user", "alice", user.CreateWorkspace, user.ModifyBudget)
	if err != nil {
		t.Fatal(err)
	}
	alice, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	wa, err := alice.PersonCreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker, Budget: limits(50, 0)})
	if err != nil {
		t.Fatal(err)
	}
	// The raises: one budget_modified per limit raised, new_limit the
	// limit asked for. Six entries: token_limit 1201, 2^53, 700, 60;
	// cost_limit 2.25, 0.2.
	for _, r := range []struct {
		by   *client.Client
		ws   string
		b    *workspace.Budget
		user bool
	}{
		{coord, w1.Workspace.ID, limits(1201, 0), false},
		{coord, w1.Workspace.ID, limits(1<<53, 2.25), false},
		{coord, w2.Workspace.ID, limits(700, 0.2), false},
		{alice, wa.Workspace.ID, limits(60, 0), true},
	} {
		var err error
		if r.user {
			_, err = r.by.PersonModifyBudget(ctx, r.ws, r.b)
		} else {
			_, err = r.by.ModifyBudget(ctx, r.ws, r.b)
		}
		if err != nil {
			t.Fatalf("raise %s to %+v: %v", r.ws, r.b, err)
		}
	}
	agg := func(c *client.Client, q client.TrailAggregateRequest) client.TrailAggregate {
		t.Helper()
		res, err := c.AggregateTrail(ctx, q)
		if err != nil {
			t.Fatalf("AggregateTrail(%+v): %v", q, err)
		}
		return res
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	key := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	bm := trail.EventBudgetModified
	tokenDim := string(workspace.DimTokens)

	t.Run("count", func(t *testing.T) {
		if r := agg(coord, client.TrailAggregateRequest{EventType: bm}); r.Count != 6 || r.Sum != nil || r.Groups != nil {
			t.Errorf("count of budget_modified = %s, want 6", js(r))
		}
	})

	t.Run("sum", func(t *testing.T) {
		// 1201 + 2^53 + 700 + 60, exactly (float64 would give …952 or …954).
		r := agg(coord, client.TrailAggregateRequest{EventType: bm, Body: map[string]string{"budget_dimension": tokenDim}, Sum: "body.new_limit"})
		if r.Count != 4 || js(r.Sum) != `{"total":9007199254742953,"exact":true,"values":4,"skipped":0}` {
			t.Errorf("sum of token limits = %s, want 9007199254742953 exact over 4", js(r))
		}
		// A body field that is not a number: every entry skipped, counted.
		r = agg(coord, client.TrailAggregateRequest{EventType: bm, Sum: "body.budget_dimension"})
		if js(r.Sum) != `{"total":0,"exact":true,"values":0,"skipped":6}` {
			t.Errorf("sum of budget_dimension = %s, want 0 with 6 skipped", js(r.Sum))
		}
	})

	t.Run("group", func(t *testing.T) {
		r := agg(coord, client.TrailAggregateRequest{EventType: bm, GroupBy: "workspace", Sum: "body.new_limit"})
		want := map[string]string{
			// 1201 + 2^53 + 2.25 = 9007199254742195.25, whose nearest
			// float64 is …196 (adding in float64 gives …194).
			w1.Workspace.ID: `{"count":3,"sum":{"total":9.007199254742196e+15,"exact":false,"values":3,"skipped":0}}`,
			w2.Workspace.ID: `{"count":2,"sum":{"total":700.2,"exact":false,"values":2,"skipped":0}}`,
			wa.Workspace.ID: `{"count":1,"sum":{"total":60,"exact":true,"values":1,"skipped":0}}`,
		}
		if len(r.Groups) != len(want) {
			t.Fatalf("groups by workspace = %s, want 3", js(r))
		}
		for _, g := range r.Groups {
			var ws string
			json.Unmarshal(g.Key, &ws)
			got := js(struct {
				Count int64      `json:"count"`
				Sum   *trail.Sum `json:"sum"`
			}{g.Count, g.Sum})
			if got != want[ws] {
				t.Errorf("group %s = %s, want %s", ws, got, want[ws])
			}
		}
		r = agg(coord, client.TrailAggregateRequest{EventType: bm, GroupBy: "body.budget_dimension"})
		if js(r.Groups) != `[{"key":"compute_budget.token_limit","count":4},{"key":"cost_limit","count":2}]` {
			t.Errorf("groups by body.budget_dimension = %s", js(r.Groups))
		}
		r = agg(coord, client.TrailAggregateRequest{EventType: bm, GroupBy: "actor"})
		if js(r.Groups) != `[{"key":"alice","count":1},{"key":"system","count":5}]` {
			t.Errorf("groups by actor = %s", js(r.Groups))
		}
	})

	t.Run("compound", func(t *testing.T) {
		page, err := coord.ReadTrail(ctx, client.TrailQuery{Workspace: w1.Workspace.ID, EventType: bm})
		if err != nil || len(page.Entries) != 3 {
			t.Fatalf("w1's budget_modified = %d entries, %v; want 3", len(page.Entries), err)
		}
		t2 := page.Entries[1].Timestamp // the second raise
		for _, tt := range []struct {
			q    client.TrailQuery
			want int
		}{
			{client.TrailQuery{Workspace: w1.Workspace.ID, EventType: bm, Body: map[string]string{"budget_dimension": "cost_limit"}}, 1},
			{client.TrailQuery{Workspace: w1.Workspace.ID, EventType: bm, Since: t2}, 2},
			{client.TrailQuery{Workspace: w1.Workspace.ID, EventType: bm, Until: t2}, 1},
			{client.TrailQuery{Workspace: w1.Workspace.ID, EventType: bm, Since: t2, Body: map[string]string{"budget_dimension": tokenDim}}, 1},
			{client.TrailQuery{Workspace: w2.Workspace.ID, EventType: bm, Until: t2}, 0},
			{client.TrailQuery{EventType: bm, Actor: "system", Body: map[string]string{"new_limit": "60"}}, 0},
			{client.TrailQuery{EventType: bm, Actor: "alice", Body: map[string]string{"new_limit": "60"}}, 1},
		} {
			page, err := coord.ReadTrail(ctx, tt.q)
			if err != nil || len(page.Entries) != tt.want {
				t.Errorf("ReadTrail(%+v) = %d entries, %v; want %d", tt.q, len(page.Entries), err, tt.want)
			}
			for _, e := range page.Entries {
				if (tt.q.Workspace != "" && e.Workspace != tt.q.Workspace) || (tt.q.Actor != "" && e.Actor != tt.q.Actor) || e.EventType != bm || (tt.q.Since != "" && e.Timestamp < tt.q.Since) || (tt.q.Until != "" && e.Timestamp >= tt.q.Until) {
					t.Errorf("ReadTrail(%+v) returned %+v", tt.q, e)
				}
			}
			r := agg(coord, client.TrailAggregateRequest{Workspace: tt.q.Workspace, EventType: tt.q.EventType, Actor: tt.q.Actor, Since: tt.q.Since, Until: tt.q.Until, Body: tt.q.Body})
			if r.Count != int64(tt.want) {
				t.Errorf("AggregateTrail(%+v).Count = %d, want %d", tt.q, r.Count, tt.want)
			}
		}
	})

	t.Run("user attribution", func(t *testing.T) {
		page, err := coord.ReadTrail(ctx, client.TrailQuery{Actor: "alice", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var types []trail.EventType
		for _, e := range page.Entries {
			if e.Actor != "alice" {
				t.Errorf("actor alice read %+v", e)
			}
			types = append(types, e.EventType)
		}
		if !slices.Contains(types, trail.EventWorkspaceCreated) || !slices.Contains(types, bm) {
			t.Errorf("alice's entries are %v, want her workspace_created and budget_modified", types)
		}
		r := agg(coord, client.TrailAggregateRequest{Actor: "alice"})
		if r.Count != int64(len(page.Entries)) {
			t.Errorf("count by actor alice = %d, read %d", r.Count, len(page.Entries))
		}
	})

	t.Run("scope", func(t *testing.T) {
		// alice reads her own workspace's entries only.
		r := agg(alice, client.TrailAggregateRequest{EventType: bm, GroupBy: "workspace", Sum: "body.new_limit"})
		if r.Count != 1 || js(r.Sum) != `{"total":60,"exact":true,"values":1,"skipped":0}` ||
			len(r.Groups) != 1 || string(r.Groups[0].Key) != string(key(wa.Workspace.ID)) {
			t.Errorf("alice's aggregate = %s, want her one raise", js(r))
		}
		all := agg(alice, client.TrailAggregateRequest{GroupBy: "workspace"})
		for _, g := range all.Groups {
			if string(g.Key) != string(key(wa.Workspace.ID)) && string(g.Key) != "null" {
				t.Errorf("alice sees a group of workspace %s", g.Key)
			}
		}
		_, err := alice.AggregateTrail(ctx, client.TrailAggregateRequest{Workspace: w1.Workspace.ID})
		wantRefusal(t, "alice's aggregate of w1", err, "capability_denied")
	})

	t.Run("bad requests", func(t *testing.T) {
		before := agg(coord, client.TrailAggregateRequest{})
		for _, q := range []client.TrailAggregateRequest{
			{GroupBy: "timestamp"},
			{GroupBy: "body."},
			{Sum: "actor"},
			{Sum: "new_limit"},
			{EventType: "no_such_event"},
			{Since: "yesterday"},
		} {
			_, err := coord.AggregateTrail(ctx, q)
			wantRefusal(t, js(q), err, "invalid_structure")
		}
		if after := agg(coord, client.TrailAggregateRequest{}); after.Count != before.Count {
			t.Errorf("the trail went from %d to %d entries over refused aggregates", before.Count, after.Count)
		}
	})
}

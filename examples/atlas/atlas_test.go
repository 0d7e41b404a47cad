package atlas_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/atlas/atlasfile"
	"github.com/wacpd/wacpd/carp"
)

const file = "acme-support.json"

// TestLoads: the sample atlas loads and validates, and holds what the
// README says: the five actions, the four policies, two context blocks,
// no checkpoints.
func TestLoads(t *testing.T) {
	l, err := atlasfile.Load(file)
	if err != nil {
		t.Fatalf("Load(%s): %v", file, err)
	}
	m := l.Manifest
	if m.Ref() != "com.acme.support@1.0.0" {
		t.Errorf("Ref() = %s, want com.acme.support@1.0.0", m.Ref())
	}
	var ids []string
	for _, a := range m.Actions {
		ids = append(ids, a.ActionID)
	}
	if want := []string{"ticket.get", "ticket.list", "ticket.comment", "ticket.delete", "billing.refund"}; !slices.Equal(ids, want) {
		t.Errorf("actions = %v, want %v", ids, want)
	}
	var policies []string
	for _, p := range m.Policies {
		policies = append(policies, fmt.Sprintf("%s %s %v", p.PolicyID, p.Type, p.Actions))
	}
	if want := []string{"allow-support allow [ticket.* billing.*]", "approve-deletes requires_approval [ticket.delete]",
		"comment-rate rate_limit [ticket.comment]", "no-purges deny [*.purge]"}; !slices.Equal(policies, want) {
		t.Errorf("policies = %q, want %q", policies, want)
	}
	if len(m.ContextBlocks) != 2 || len(m.Checkpoints) != 5 {
		t.Errorf("%d context blocks and %d checkpoints, want 2 and 5", len(m.ContextBlocks), len(m.Checkpoints))
	}
}

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// resolve resolves goal against the sample atlas.
func resolve(t *testing.T, goal string) carp.Output {
	t.Helper()
	l, err := atlasfile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	req := carp.Request{CARPVersion: "1.0", RequestID: "req-1", Timestamp: now.Format(time.RFC3339), Operation: carp.OpResolve,
		Requester: carp.Requester{AgentID: "agent-1", SessionID: "session-1"}, Task: &carp.Task{Goal: goal}}
	out, cerr := carp.Resolve(carp.Input{Request: req, Atlases: []*atlas.Manifest{l.Manifest}, Now: now,
		NewID: func() string { n++; return fmt.Sprint("id-", n) }, TraceID: "trace-1", SpanID: "span-1"})
	if cerr != nil {
		t.Fatalf("Resolve(%q): %v", goal, cerr)
	}
	return out
}

// TestResolve: what the sample's policies decide. Every action is
// allowed; ticket.delete needs a person's approval; ticket.comment is
// rate limited per session; a purge is denied by policy, not by default.
func TestResolve(t *testing.T) {
	out := resolve(t, "answer the customer on T-1")
	res := out.Resolution
	var allowed []string
	for _, a := range res.AllowedActions {
		allowed = append(allowed, a.ActionID)
		if got, want := a.RequiresApproval, a.ActionID == "ticket.delete"; got != want {
			t.Errorf("%s: requires_approval = %v, want %v", a.ActionID, got, want)
		}
		want := (*carp.RateLimit)(nil)
		if a.ActionID == "ticket.comment" {
			want = &carp.RateLimit{Requests: 2, WindowSeconds: 60, Scope: "session"}
		}
		if !reflect.DeepEqual(a.RateLimit, want) {
			t.Errorf("%s: rate limit %+v, want %+v", a.ActionID, a.RateLimit, want)
		}
	}
	if len(allowed) != 5 || len(res.DeniedActions) != 0 {
		t.Errorf("allowed %v, denied %+v; want all five, none denied", allowed, res.DeniedActions)
	}
	if res.Decision.Type != carp.DecisionAllowWithConstraints {
		t.Errorf("decision = %s, want %s", res.Decision.Type, carp.DecisionAllowWithConstraints)
	}

	// The deny policy on *.purge covers no action of this version (it
	// holds for any a later one adds): applied, it matches nothing.
	i := slices.IndexFunc(res.PoliciesApplied, func(p carp.PolicyApplication) bool { return p.PolicyID == "no-purges" })
	if i < 0 || res.PoliciesApplied[i].RulesMatched != 0 {
		t.Errorf("policies applied = %+v, want no-purges, matching nothing", res.PoliciesApplied)
	}
}

// TestContext: the always block comes with every resolution, the refunds
// block only when the goal mentions a refund.
func TestContext(t *testing.T) {
	for _, tt := range []struct {
		goal string
		want []string
	}{
		{"answer the customer on T-1", []string{"support-basics"}},
		{"refund the customer of T-1", []string{"support-basics", "refunds"}},
	} {
		var got []string
		for _, b := range resolve(t, tt.goal).Resolution.ContextBlocks {
			got = append(got, b.BlockID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("context of %q = %v, want %v", tt.goal, got, tt.want)
		}
	}
}

// TestParameters: the schemas and parameter constraints an execute is
// checked with.
func TestParameters(t *testing.T) {
	grants := map[string]carp.GrantedAction{}
	for _, ga := range resolve(t, "work the queue").Grant.Actions {
		grants[ga.ActionID] = ga
	}
	for _, tt := range []struct {
		action string
		params map[string]any
		ok     bool
	}{
		{"ticket.get", map[string]any{"ticket_id": "T-1"}, true},
		{"ticket.get", map[string]any{}, false},
		{"ticket.list", map[string]any{}, true},
		{"ticket.comment", map[string]any{"ticket_id": "T-1", "body": strings.Repeat("x", 500)}, true},
		{"ticket.comment", map[string]any{"ticket_id": "T-1", "body": strings.Repeat("x", 501)}, false},  // the constraint
		{"ticket.comment", map[string]any{"ticket_id": "T-1", "body": strings.Repeat("x", 2001)}, false}, // the schema
		{"ticket.delete", map[string]any{"ticket_id": "T-2"}, true},
		{"billing.refund", map[string]any{"ticket_id": "T-1", "amount": 500.0}, true},
		{"billing.refund", map[string]any{"ticket_id": "T-1", "amount": 500.5}, false},
		{"billing.refund", map[string]any{"ticket_id": "T-1", "amount": -1.0}, false},
		{"billing.refund", map[string]any{"ticket_id": "T-1", "amount": "10"}, false},
		{"ticket.get", map[string]any{"ticket_id": "T-1", "delay_ms": 50.0}, true}, // the tool service's test parameter passes
	} {
		ga, ok := grants[tt.action]
		if !ok {
			t.Fatalf("no grant of %s", tt.action)
		}
		if v := carp.Parameters(ga, tt.params); (len(v) == 0) != tt.ok {
			t.Errorf("Parameters(%s, %v) = %+v, want ok %v", tt.action, tt.params, v, tt.ok)
		}
	}
}

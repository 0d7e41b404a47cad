package carp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// manifest parses a small atlas: id a.test, the given policies, actions
// and context blocks (JSON arrays).
func manifest(t testing.TB, id, policies, actions, contexts, extra string) *atlas.Manifest {
	t.Helper()
	if contexts == "" {
		contexts = "[]"
	}
	doc := fmt.Sprintf(`{"atlas_version":"1.0","atlas_id":%q,"version":"1.0.0","name":"test"%s,"policies":%s,"actions":%s,"context_blocks":%s}`,
		id, extra, policies, actions, contexts)
	m, err := atlas.Parse("test.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func request(goal string, mutate ...func(*carp.Request)) carp.Request {
	r := carp.Request{CARPVersion: "1.0", RequestID: uuid.Must(uuid.NewV7()).String(), Timestamp: now.Format(time.RFC3339),
		Operation: carp.OpResolve, Requester: carp.Requester{AgentID: "agent-1", SessionID: "session-1"},
		Task: &carp.Task{Goal: goal}}
	for _, m := range mutate {
		m(&r)
	}
	return r
}

func resolve(t testing.TB, req carp.Request, usage func(carp.Limit) (int, time.Time), ms ...*atlas.Manifest) carp.Output {
	t.Helper()
	out, err := carp.Resolve(carp.Input{Request: req, Atlases: ms, Now: now, NewID: func() string { return uuid.Must(uuid.NewV7()).String() },
		TraceID: "trace-1", SpanID: "span-1", Usage: usage, Checksum: func(id string) string { return "sum-" + id }})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return out
}

func ids(ps []carp.ActionPermission) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ActionID)
	}
	return out
}

const dataActions = `[{"action_id":"data.get"},{"action_id":"data.list"},{"action_id":"data.delete"},{"action_id":"data.update"}]`

// TestDenyPrecedence: allow * and deny *.delete: data.delete is denied
// (whatever the priorities), data.get allowed.
func TestDenyPrecedence(t *testing.T) {
	m := manifest(t, "a.test", `[{"policy_id":"all","type":"allow","actions":["*"],"priority":1000},{"policy_id":"no-deletes","type":"deny","actions":["*.delete"],"priority":1,"reason":"deletes are not for agents"}]`, dataActions, "", "")
	out := resolve(t, request("tidy the data"), nil, m)
	got := ids(out.Resolution.AllowedActions)
	if !slices.Contains(got, "data.get") || slices.Contains(got, "data.delete") {
		t.Fatalf("allowed = %v", got)
	}
	d := out.Resolution.DeniedActions
	if len(d) != 1 || d[0].ActionType != "data.delete" || !slices.Equal(d[0].PolicyRefs, []string{"no-deletes"}) || !d[0].Permanent {
		t.Fatalf("denied = %+v", d)
	}
}

// TestDefaultDeny: what no allow policy covers is denied, and with nothing
// allowed and no context the decision is deny.
func TestDefaultDeny(t *testing.T) {
	m := manifest(t, "a.test", `[{"policy_id":"reads","type":"allow","actions":["data.get"]}]`, dataActions, "", "")
	out := resolve(t, request("x"), nil, m)
	if got := ids(out.Resolution.AllowedActions); !slices.Equal(got, []string{"data.get"}) {
		t.Fatalf("allowed = %v", got)
	}
	m = manifest(t, "a.test", `[]`, dataActions, "", "")
	out = resolve(t, request("x"), nil, m)
	if out.Resolution.Decision.Type != carp.DecisionDeny || len(out.Resolution.AllowedActions) != 0 || len(out.Resolution.DeniedActions) != 4 {
		t.Fatalf("no policy: decision %s, %d allowed, %d denied", out.Resolution.Decision.Type, len(out.Resolution.AllowedActions), len(out.Resolution.DeniedActions))
	}
}

// TestCapabilityFilter: an allow policy limited to capability read (get and
// list) allows only those.
func TestCapabilityFilter(t *testing.T) {
	m := manifest(t, "a.test", `[{"policy_id":"readers","type":"allow","capabilities":["read"]}]`, dataActions, "",
		`,"capabilities":[{"capability_id":"read","actions":["data.get","data.list"]},{"capability_id":"write","actions":["data.update","data.delete"]}]`)
	out := resolve(t, request("read the data"), nil, m)
	if got := ids(out.Resolution.AllowedActions); !slices.Equal(got, []string{"data.get", "data.list"}) {
		t.Fatalf("allowed = %v, want get and list", got)
	}
}

// TestRiskTierRequiresApproval: a requires_approval policy for tiers high
// and critical, and a request declaring high risk: requires_approval, with
// the policy's approvers; a low-risk request is allowed.
func TestRiskTierRequiresApproval(t *testing.T) {
	m := manifest(t, "a.test", `[{"policy_id":"all","type":"allow","actions":["*"]},{"policy_id":"risky","type":"requires_approval","risk_tiers":["high","critical"],"actions":["*"],"approvers":[{"id":"operator","type":"user"}],"approval_timeout_seconds":600}]`, dataActions, "", "")
	out := resolve(t, request("drop the table", func(r *carp.Request) { r.Task.RiskTier = "high" }), nil, m)
	d := out.Resolution.Decision
	if d.Type != carp.DecisionRequiresApproval || len(d.Approvers) != 1 || d.Approvers[0].ID != "operator" || d.ApprovalTimeoutSeconds != 600 {
		t.Fatalf("decision = %+v", d)
	}
	out = resolve(t, request("read", func(r *carp.Request) { r.Task.RiskTier = "low" }), nil, m)
	if out.Resolution.Decision.Type != carp.DecisionAllow {
		t.Fatalf("a low-risk request: %+v", out.Resolution.Decision)
	}
	b, err := json.Marshal(out.Resolution.Decision)
	if err != nil || string(b) != `{"type":"allow"}` {
		t.Fatalf("allow decision JSON = %s, %v", b, err)
	}
}

// TestContextPriorityOrder: blocks come highest priority first (100, 50,
// 10), each with the SHA-256 of its content and evidence.
func TestContextPriorityOrder(t *testing.T) {
	m := manifest(t, "a.test", `[]`, `[]`, `[
		{"context_id":"low","content":"low","inject_mode":"always","priority":10},
		{"context_id":"high","content":"high","inject_mode":"always","priority":100},
		{"context_id":"mid","content":"mid","inject_mode":"always","priority":50}]`, "")
	out := resolve(t, request("x"), nil, m)
	var got []string
	for _, b := range out.Resolution.ContextBlocks {
		got = append(got, b.BlockID)
		if b.ContentHash != carp.ContentHash([]byte(b.Content)) || len(b.EvidenceRefs) == 0 {
			t.Errorf("block %s: hash %s, evidence %v", b.BlockID, b.ContentHash, b.EvidenceRefs)
		}
	}
	if !slices.Equal(got, []string{"high", "mid", "low"}) {
		t.Fatalf("order = %v", got)
	}
}

// TestInjectModes: always; on_match by keyword or hinted domain; on_demand
// only when named; risk_based by the declared tier.
func TestInjectModes(t *testing.T) {
	m := manifest(t, "a.test", `[]`, `[]`, `[
		{"context_id":"always","content":"a","inject_mode":"always"},
		{"context_id":"refunds","content":"r","inject_mode":"on_match","keywords":["refund"]},
		{"context_id":"billing","content":"b","inject_mode":"on_match","domain":"billing"},
		{"context_id":"manual","content":"m","inject_mode":"on_demand"},
		{"context_id":"danger","content":"d","inject_mode":"risk_based","min_risk_tier":"high"}]`, "")
	blocks := func(req carp.Request) []string {
		var out []string
		for _, b := range resolve(t, req, nil, m).Resolution.ContextBlocks {
			out = append(out, b.BlockID)
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		name string
		req  carp.Request
		want []string
	}{
		{"plain", request("say hello"), []string{"always"}},
		{"keyword", request("Process the REFUNDS for March"), []string{"always", "refunds"}},
		{"on demand", request("x", func(r *carp.Request) { r.Task.ContextHints = []string{"manual"} }), []string{"always", "manual"}},
		{"risk", request("x", func(r *carp.Request) { r.Task.RiskTier = "critical" }), []string{"always", "danger"}},
		{"risk below", request("x", func(r *carp.Request) { r.Task.RiskTier = "medium" }), []string{"always"}},
	} {
		if got := blocks(tt.req); !slices.Equal(got, tt.want) {
			t.Errorf("%s: blocks %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRedaction: a block's redaction is applied, recorded with the hash of
// the original, and the content hash is of what is handed out.
func TestRedaction(t *testing.T) {
	b, err := os.ReadFile("../atlas/testdata/acme.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := atlas.Parse("acme.json", b)
	if err != nil {
		t.Fatal(err)
	}
	out := resolve(t, request("handle a refund"), nil, m)
	i := slices.IndexFunc(out.Resolution.ContextBlocks, func(b carp.ContextBlock) bool { return b.BlockID == "refunds" })
	if i < 0 {
		t.Fatal("no refunds block")
	}
	blk := out.Resolution.ContextBlocks[i]
	if blk.Content != "Refunds go through billing.refund; card numbers are never quoted: [REDACTED]." || len(blk.Redactions) != 1 {
		t.Fatalf("block = %q, redactions %+v", blk.Content, blk.Redactions)
	}
	orig := m.ContextBlocks[2].Content
	if blk.Redactions[0].OriginalHash != carp.ContentHash([]byte(orig)) || blk.ContentHash != carp.ContentHash([]byte(blk.Content)) {
		t.Errorf("hashes: original %s, content %s", blk.Redactions[0].OriginalHash, blk.ContentHash)
	}
	for _, s := range out.Steps {
		if b, _ := json.Marshal(s.Payload); strings.Contains(string(b), "4111") || strings.Contains(string(b), "never quoted") {
			t.Errorf("TRACE step %s carries content: %s", s.Type, b)
		}
	}
}

// TestAtlasScope: an unknown atlas in scope is ATLAS_NOT_FOUND; hints no
// atlas covers give insufficient_context with the missing domains.
func TestAtlasScope(t *testing.T) {
	m := manifest(t, "a.test", `[]`, `[]`, "", `,"domains":["support"]`)
	_, err := carp.Resolve(carp.Input{Request: request("x", func(r *carp.Request) { r.Scope = &carp.Scope{Atlases: []string{"com.nowhere"}} }),
		Atlases: []*atlas.Manifest{m}, Now: now, NewID: uuid.NewString})
	if err == nil || err.Code != carp.CodeAtlasNotFound {
		t.Fatalf("unknown atlas: %v, want ATLAS_NOT_FOUND", err)
	}
	_, err = carp.Resolve(carp.Input{Request: request("x"), Now: now, NewID: uuid.NewString})
	if err == nil || err.Code != carp.CodeAtlasNotFound {
		t.Fatalf("no atlas loaded: %v, want ATLAS_NOT_FOUND", err)
	}
	out := resolve(t, request("x", func(r *carp.Request) { r.Task.ContextHints = []string{"geology"} }), nil, m)
	if d := out.Resolution.Decision; d.Type != carp.DecisionInsufficientContext || !slices.Equal(d.MissingDomains, []string{"geology"}) {
		t.Fatalf("decision = %+v", d)
	}
}

// TestPartial: scope.actions asks for some actions; some are denied.
func TestPartial(t *testing.T) {
	m := manifest(t, "a.test", `[{"policy_id":"all","type":"allow","actions":["*"]},{"policy_id":"nd","type":"deny","actions":["*.delete"]}]`, dataActions, "", "")
	out := resolve(t, request("x", func(r *carp.Request) { r.Scope = &carp.Scope{Actions: []string{"data.get", "data.delete"}} }), nil, m)
	d := out.Resolution.Decision
	if d.Type != carp.DecisionPartial || !slices.Equal(d.AllowedSubset, []string{"data.get"}) || !slices.Equal(d.DeniedSubset, []string{"data.delete"}) {
		t.Fatalf("decision = %+v", d)
	}
}

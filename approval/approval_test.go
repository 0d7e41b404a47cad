package approval_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/atlas"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func ctx() approval.Context {
	return approval.Context{Session: "ws-1", Agent: "agent-1", Atlas: "com.acme.code", PolicyVersion: "com.acme.code@1.0.0#sha256:aa"}
}

func args(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func canon(t *testing.T, tool, a string) approval.Canonical {
	t.Helper()
	c, err := approval.Canonicalize(tool, args(t, a), ctx())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func policy() approval.Policy {
	return approval.Policy{Atlas: "com.acme.code", Version: ctx().PolicyVersion, BaselineTier: atlas.RiskMedium,
		OnViolation: atlas.OnViolationPerStep, PermitTTL: time.Hour, MaxPermitUses: 10}
}

var write = approval.Action{ID: "file.write", RiskTier: "medium", SideEffectClass: "reversible", PathParameters: []string{"path", "paths"}}

// TestCanonicalBinding: key order and whitespace do not change the
// digest; any changed argument, tool or context does.
func TestCanonicalBinding(t *testing.T) {
	a := canon(t, "file.write", `{"path":"src/a.go","body":"x","opts":{"mode":1,"force":false}}`)
	b := canon(t, "file.write", "{ \"opts\" : {\"force\":false, \"mode\":1.0},\n \"body\":\"x\", \"path\":\"src/a.go\" }")
	if a.Digest != b.Digest || string(a.Form) != string(b.Form) {
		t.Fatalf("reordered keys / whitespace changed the canonical form:\n%s\n%s", a.Form, b.Form)
	}
	if !strings.HasPrefix(a.Digest, "sha256:") || !strings.Contains(string(a.Form), approval.CanonicalizationVersion) {
		t.Fatalf("digest %s form %s", a.Digest, a.Form)
	}
	for _, other := range []approval.Canonical{
		canon(t, "file.write", `{"path":"src/a.go","body":"y","opts":{"mode":1,"force":false}}`),
		canon(t, "file.write", `{"path":"src/a.go","body":"x","opts":{"mode":1,"force":true}}`),
		canon(t, "file.delete", `{"path":"src/a.go","body":"x","opts":{"mode":1,"force":false}}`),
	} {
		if other.Digest == a.Digest {
			t.Fatalf("a changed request kept the digest: %s", other.Form)
		}
	}
	c2 := ctx()
	c2.Session = "ws-2"
	o, _ := approval.Canonicalize("file.write", args(t, `{"path":"src/a.go","body":"x","opts":{"mode":1,"force":false}}`), c2)
	if o.Digest == a.Digest {
		t.Fatal("another session's request has the same digest")
	}
	if _, err := approval.Canonicalize("", nil, ctx()); !errors.Is(err, approval.ErrRequest) {
		t.Fatalf("no tool: %v", err)
	}
}

func kinds(d approval.Decision) []string {
	var out []string
	for _, t := range d.Triggers {
		out = append(out, t.Kind)
	}
	return out
}

// TestTriggers: each trigger fires from its data, and only then.
func TestTriggers(t *testing.T) {
	ok := canon(t, "file.write", `{"path":"src/a.go"}`)
	baseEnv := approval.Envelope{Providers: []string{"local"},
		PolicyVersions: map[string]string{"com.acme.code": ctx().PolicyVersion}}
	untrusted := approval.Fold([]approval.TrustEvent{{Seq: 1, Boundary: "tool:file.write", Kind: approval.TrustViolation, Reason: "arguments_mutated", At: "t1"}})
	for _, tc := range []struct {
		name  string
		req   approval.Canonical
		act   func(a approval.Action) approval.Action
		pol   func(p approval.Policy) approval.Policy
		env   func(e approval.Envelope) approval.Envelope
		trust approval.Trust
		want  string // "" for no checkpoint
		delta string // a substring of the scope delta
	}{
		{name: "within the envelope", req: ok},
		{name: "high risk by requires_approval", req: ok, act: func(a approval.Action) approval.Action {
			a.RequiresApproval, a.ApprovalPolicies = true, []string{"approve-writes"}
			return a
		}, want: approval.TriggerHighRisk},
		{name: "high risk by tier", req: ok, pol: func(p approval.Policy) approval.Policy { p.HighRiskTier = "medium"; return p },
			want: approval.TriggerHighRisk},
		{name: "capability transition", req: ok, act: func(a approval.Action) approval.Action { a.RiskTier = "high"; return a },
			want: approval.TriggerCapability, delta: "risk tier medium -> high"},
		{name: "path scope expansion", req: canon(t, "file.write", `{"paths":["src/a.go","./src/b.go"]}`),
			want: approval.TriggerPathScope, delta: "+path src/b.go"},
		{name: "path approved by policy", req: canon(t, "file.write", `{"path":"docs/x.md"}`),
			pol: func(p approval.Policy) approval.Policy { p.ApprovedPaths = []string{"docs/**"}; return p }},
		{name: "delegation", req: ok, act: func(a approval.Action) approval.Action { a.Delegation = true; return a },
			want: approval.TriggerDelegation},
		{name: "provider class change", req: ok, act: func(a approval.Action) approval.Action { a.ProviderClass = "external_api"; return a },
			want: approval.TriggerProvider, delta: "provider class local -> external_api"},
		{name: "first provider class is adopted", req: ok, act: func(a approval.Action) approval.Action { a.ProviderClass = "local"; return a },
			env: func(e approval.Envelope) approval.Envelope { e.Providers = nil; return e }},
		{name: "policy boundary change", req: ok,
			env: func(e approval.Envelope) approval.Envelope {
				e.PolicyVersions = map[string]string{"com.acme.code": "com.acme.code@0.9.0#sha256:00"}
				return e
			}, want: approval.TriggerPolicyBoundary, delta: "policy version"},
		{name: "untrusted boundary", req: ok, trust: untrusted, want: approval.TriggerTrust},
		{name: "untrusted other boundary", req: ok, trust: approval.Fold([]approval.TrustEvent{{Seq: 1, Boundary: "tool:file.delete", Kind: approval.TrustViolation}})},
		{name: "per step", req: ok, env: func(e approval.Envelope) approval.Envelope { e.PerStep = true; return e }, want: approval.TriggerPerStep},
		{name: "policy checkpoint", req: ok, pol: func(p approval.Policy) approval.Policy { p.CheckpointActions = []string{"file.*"}; return p },
			want: approval.TriggerPolicyCheckpoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := approval.Input{Request: tc.req, Action: write, Policy: policy(), Envelope: baseEnv, Trust: tc.trust, Now: t0}
			in.Policy.ApprovedPaths = []string{"src/a.go"}
			if tc.act != nil {
				in.Action = tc.act(in.Action)
			}
			if tc.pol != nil {
				in.Policy = tc.pol(in.Policy)
			}
			if tc.env != nil {
				in.Envelope = tc.env(in.Envelope)
			}
			d := approval.Evaluate(in)
			got := ""
			if d.Checkpoint() {
				got = d.Triggers[0].Kind
			}
			if got != tc.want || len(kinds(d)) > 1 {
				t.Fatalf("triggers %v, want [%s]", kinds(d), tc.want)
			}
			if !strings.Contains(d.Delta.String(), tc.delta) || (tc.delta != "" && d.Delta.Empty()) {
				t.Fatalf("scope delta %q, want %q in it", d.Delta.String(), tc.delta)
			}
		})
	}
}

// TestModes: always checkpoints every invocation; never waives the
// policy's checkpoints only, and only when the policy allows it.
func TestModes(t *testing.T) {
	env := approval.Envelope{Providers: []string{"local"}}
	req := canon(t, "file.write", `{"path":"src/a.go"}`)
	pol := policy()
	pol.ApprovedPaths = []string{"src/**"}
	pol.CheckpointActions = []string{"file.write"}
	eval := func(m approval.Mode, p approval.Policy, a approval.Action) approval.Decision {
		e := env
		e.Mode = m
		return approval.Evaluate(approval.Input{Request: req, Action: a, Policy: p, Envelope: e, Now: t0})
	}
	if d := eval(approval.ModePolicy, pol, write); strings.Join(kinds(d), ",") != approval.TriggerPolicyCheckpoint {
		t.Fatalf("policy: %v", kinds(d))
	}
	if d := eval(approval.ModeNever, pol, write); strings.Join(kinds(d), ",") != approval.TriggerPolicyCheckpoint || d.Mode != approval.ModePolicy {
		t.Fatalf("never refused by the policy must fall back to policy: %v %s", kinds(d), d.Mode)
	}
	pol.AllowNever = true
	if d := eval(approval.ModeNever, pol, write); d.Checkpoint() {
		t.Fatalf("never allowed: %v", kinds(d))
	}
	ext := write
	ext.ProviderClass = "external_api"
	if d := eval(approval.ModeNever, pol, ext); strings.Join(kinds(d), ",") != approval.TriggerProvider {
		t.Fatalf("never + provider change: the mandatory checkpoint must fire: %v", kinds(d))
	}
	plain := policy()
	plain.ApprovedPaths = []string{"src/**"}
	if d := eval(approval.ModePolicy, plain, write); d.Checkpoint() {
		t.Fatalf("policy mode, nothing to check: %v", kinds(d))
	}
	if d := eval(approval.ModeAlways, plain, write); strings.Join(kinds(d), ",") != approval.TriggerAlways {
		t.Fatalf("always: %v", kinds(d))
	}
	for _, s := range []string{"", "always", "policy", "never"} {
		if _, err := approval.ParseMode(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := approval.ParseMode("sometimes"); !errors.Is(err, approval.ErrMode) {
		t.Fatalf("bad mode: %v", err)
	}
}

// checkpointFor evaluates req and returns its checkpoint.
func checkpointFor(t *testing.T, in approval.Input) approval.Checkpoint {
	t.Helper()
	d := approval.Evaluate(in)
	if !d.Checkpoint() {
		t.Fatalf("no checkpoint: %v", kinds(d))
	}
	cp := approval.NewCheckpoint(in, d, "x-1", "agent-1")
	cp.ApprovalID = "gate-1"
	return cp
}

// TestPendingFields: the nine fields are all there, none empty, in the
// seed's order.
func TestPendingFields(t *testing.T) {
	del := approval.Action{ID: "ticket.delete", RiskTier: "high", RequiresApproval: true, ApprovalPolicies: []string{"approve-deletes"}}
	cp := checkpointFor(t, approval.Input{Request: canon(t, "ticket.delete", `{"ticket_id":"T-1"}`), Action: del, Policy: policy(), Now: t0})
	fs := cp.Pending.Fields()
	want := []string{"checkpoint_type", "trigger_description", "canonical_request_summary", "scope_delta", "risk_classification",
		"side_effect_class", "policy_basis", "authorization_statement", "trust_state"}
	if len(fs) != 9 {
		t.Fatalf("%d fields", len(fs))
	}
	for i, f := range fs {
		if f[0] != want[i] || strings.TrimSpace(f[1]) == "" {
			t.Fatalf("field %d: %q = %q", i, f[0], f[1])
		}
	}
	b, _ := json.Marshal(cp.Pending)
	var m map[string]string
	_ = json.Unmarshal(b, &m)
	if len(m) != 9 {
		t.Fatalf("json has %d fields: %s", len(m), b)
	}
	if !cp.Irreversible() || !strings.Contains(cp.Pending.SideEffectClass, "irreversible") {
		t.Fatalf("an undeclared side-effect class is irreversible: %q", cp.Pending.SideEffectClass)
	}
	if !strings.Contains(cp.Pending.CanonicalRequestSummary, cp.Digest) || !strings.Contains(cp.Pending.CanonicalRequestSummary, `"ticket_id":"T-1"`) {
		t.Fatalf("summary %q", cp.Pending.CanonicalRequestSummary)
	}
}

// TestOutcomes: each outcome's permit, envelope and halt.
func TestOutcomes(t *testing.T) {
	in := approval.Input{Request: canon(t, "file.write", `{"path":"src/a.go"}`), Action: write, Policy: policy(), Now: t0}
	cp := checkpointFor(t, in)
	for _, tc := range []struct {
		action, outcome string
		want            approval.Outcome
		permit, halt    bool
		perStep         bool
		envelope        bool
	}{
		{action: "approve", want: approval.OutcomeContinue, permit: true},
		{action: "approve", outcome: "per_step", want: approval.OutcomePerStep, permit: true, perStep: true},
		{action: "modify", want: approval.OutcomeModified, permit: true, envelope: true},
		{action: "reject", want: approval.OutcomeDeny},
		{action: "reject", outcome: "halt", want: approval.OutcomeHalt, halt: true},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			o, err := approval.OutcomeOf(tc.action, tc.outcome)
			if err != nil || o != tc.want {
				t.Fatalf("%s/%s: %v %v", tc.action, tc.outcome, o, err)
			}
			pr := approval.Proposal{Paths: []string{"src/**"}, Uses: 3, TTLSeconds: 60}
			s, err := approval.Decide(cp, o, pr, in.Envelope, "permit-1", t0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if (s.Permit != nil) != tc.permit || s.Halt != tc.halt || s.Envelope.PerStep != tc.perStep {
				t.Fatalf("settlement %+v", s)
			}
			if s.Permit == nil {
				if len(s.Envelope.Providers) != 0 || s.Envelope.PerStep || len(s.Envelope.PolicyVersions) != 0 {
					t.Fatalf("a denial widened the envelope: %+v", s.Envelope)
				}
				return
			}
			if (s.Permit.Digest == "") != tc.envelope {
				t.Fatalf("permit %+v", s.Permit)
			}
			if tc.envelope && (s.Permit.MaxUses != 3 || !s.Permit.ExpiresAt.Equal(t0.Add(time.Minute))) {
				t.Fatalf("modified envelope permit %+v", s.Permit)
			}
			if !tc.envelope && (s.Permit.MaxUses != 1 || s.Permit.Digest != cp.Digest) {
				t.Fatalf("exact permit %+v", s.Permit)
			}
		})
	}
	for _, bad := range [][2]string{{"approve", "halt"}, {"reject", "continue"}, {"modify", "deny"}, {"deny", ""}} {
		if _, err := approval.OutcomeOf(bad[0], bad[1]); !errors.Is(err, approval.ErrOutcome) {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	for _, bad := range []string{`{"paths":["lib/**"],"uses":1,"ttl_seconds":5}`, `{"paths":["src/**"],"uses":0,"ttl_seconds":5}`,
		`{"paths":["src/**"],"uses":11,"ttl_seconds":5}`, `{"paths":["src/**"],"uses":1,"ttl_seconds":0}`,
		`{"paths":["src/**"],"uses":1,"ttl_seconds":5,"extra":1}`, `{"paths":["a/**/b"],"uses":1,"ttl_seconds":5}`, `[]`} {
		if _, err := approval.DecodeProposal(json.RawMessage(bad), cp, policy()); !errors.Is(err, approval.ErrEnvelope) {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	if _, err := approval.DecodeProposal(json.RawMessage(`{"paths":["src/*.go"],"uses":2,"ttl_seconds":5}`), cp, policy()); err != nil {
		t.Fatal(err)
	}
}

// approve settles cp as continue and returns the permit and envelope.
func approve(t *testing.T, cp approval.Checkpoint, o approval.Outcome, pr approval.Proposal, env approval.Envelope) (approval.Permit, approval.Envelope) {
	t.Helper()
	s, err := approval.Decide(cp, o, pr, env, "permit-"+cp.ApprovalID, t0, 0)
	if err != nil || s.Permit == nil {
		t.Fatalf("%v %+v", err, s)
	}
	return *s.Permit, s.Envelope
}

// TestPermitBinding: the permit covers the approved request (in any key
// order), not a changed one (Bind: arguments mutated), and a path outside
// the approved set opens a new checkpoint naming the difference.
func TestPermitBinding(t *testing.T) {
	pol := policy()
	pol.HighRiskTier = "medium" // every write is checkpointed: the permit is what lets it run
	first := canon(t, "file.write", `{"path":"src/a.go","body":"one"}`)
	in := approval.Input{Request: first, Action: write, Policy: pol, Now: t0}
	cp := checkpointFor(t, in)
	if cp.Delta.String() != "+path src/a.go" {
		t.Fatalf("delta %q", cp.Delta.String())
	}
	pm, env := approve(t, cp, approval.OutcomeContinue, approval.Proposal{}, in.Envelope)

	again := canon(t, "file.write", `{"body":"one","path":"src/a.go"}`)
	d := approval.Evaluate(approval.Input{Request: again, Action: write, Policy: pol, Envelope: env, Permits: []approval.Permit{pm}, Now: t0})
	if d.Checkpoint() || d.Permit == nil || d.Permit.ID != pm.ID {
		t.Fatalf("the approved request (keys reordered) is not covered: %v", kinds(d))
	}
	if err := approval.Bind(pm, again, t0); err != nil {
		t.Fatal(err)
	}
	changed := canon(t, "file.write", `{"path":"src/a.go","body":"two"}`)
	if err := approval.Bind(pm, changed, t0); !errors.Is(err, approval.ErrMutated) {
		t.Fatalf("changed argument: %v", err)
	}
	if d := approval.Evaluate(approval.Input{Request: changed, Action: write, Policy: pol, Envelope: env, Permits: []approval.Permit{pm}, Now: t0}); !d.Checkpoint() {
		t.Fatal("a changed argument was covered by the permit")
	}
	// Scope growth: approve src/a.go, then write src/b.go.
	b := canon(t, "file.write", `{"path":"src/b.go","body":"one"}`)
	d = approval.Evaluate(approval.Input{Request: b, Action: write, Policy: pol, Envelope: env, Permits: []approval.Permit{pm}, Now: t0})
	if !d.Checkpoint() || d.Delta.Empty() || d.Delta.String() != "+path src/b.go" {
		t.Fatalf("scope growth: %v %q", kinds(d), d.Delta.String())
	}
	// Used once, it is spent.
	used := pm.Use("x-1")
	if err := used.Usable(t0); !errors.Is(err, approval.ErrPermitVoid) || used.Status(t0) != approval.PermitUsed {
		t.Fatalf("a used single-use permit: %v", err)
	}
}

// TestPermitExpiryAndRevocation: a permit covers nothing after it expires
// or is revoked; an envelope permit covers several requests within its
// scope, each use counted, and none outside it.
func TestPermitExpiryAndRevocation(t *testing.T) {
	pol := policy()
	pol.HighRiskTier = "medium"
	in := approval.Input{Request: canon(t, "file.write", `{"path":"src/a.go"}`), Action: write, Policy: pol, Now: t0}
	cp := checkpointFor(t, in)
	pm, env := approve(t, cp, approval.OutcomeModified, approval.Proposal{Paths: []string{"src/**"}, Uses: 2, TTLSeconds: 60}, in.Envelope)
	eval := func(req approval.Canonical, p approval.Permit, now time.Time) approval.Decision {
		return approval.Evaluate(approval.Input{Request: req, Action: write, Policy: pol, Envelope: env, Permits: []approval.Permit{p}, Now: now})
	}
	other := canon(t, "file.write", `{"path":"src/deep/c.go"}`)
	if d := eval(other, pm, t0); d.Permit == nil || d.Permit.ID != pm.ID {
		t.Fatalf("envelope permit does not cover a path within its scope: %v", kinds(d))
	}
	if d := eval(canon(t, "file.write", `{"path":"lib/c.go"}`), pm, t0); d.Permit != nil {
		t.Fatal("envelope permit covered a path outside its scope")
	}
	if d := eval(other, pm, t0.Add(time.Minute)); d.Permit != nil || !d.Checkpoint() || pm.Status(t0.Add(time.Minute)) != approval.PermitExpired {
		t.Fatal("an expired permit still covers")
	}
	rv := pm.Revoke("alice", t0, "operator")
	if d := eval(other, rv, t0); d.Permit != nil || !d.Checkpoint() || rv.Status(t0) != approval.PermitRevoked {
		t.Fatal("a revoked permit still covers")
	}
	if st := pm.Revoke("protocol", t0, approval.ReasonArgumentsMutated).Status(t0); st != approval.PermitCancelled {
		t.Fatalf("cancelled: %s", st)
	}
	twice := pm.Use("x-1").Use("x-2")
	if d := eval(other, twice, t0); d.Permit != nil {
		t.Fatal("a permit used up still covers")
	}
	moved := pol
	moved.Version = "com.acme.code@1.1.0#sha256:bb"
	if d := approval.Evaluate(approval.Input{Request: other, Action: write, Policy: moved, Envelope: env, Permits: []approval.Permit{pm}, Now: t0}); d.Permit != nil {
		t.Fatal("a permit of another policy version still covers")
	}
	// always: an envelope permit covers no invocation; per step neither.
	envAlways := env
	envAlways.Mode = approval.ModeAlways
	if d := approval.Evaluate(approval.Input{Request: other, Action: write, Policy: pol, Envelope: envAlways, Permits: []approval.Permit{pm}, Now: t0}); d.Permit != nil {
		t.Fatal("always: an envelope permit covered an invocation")
	}
}

// TestTrustReset: the first violation on a boundary makes it untrusted at
// once; another boundary stays trusted; a permit issued before the
// violation no longer covers; a restore trusts it again.
func TestTrustReset(t *testing.T) {
	ev := []approval.TrustEvent{{Seq: 1, Boundary: "path:src/a.go", Kind: approval.TrustViolation, Reason: "side_effect_outside_scope", At: "t1"}}
	tr := approval.Fold(ev)
	if tr.Of("path:src/a.go").State != approval.Untrusted || tr.Of("tool:file.write").State != approval.Trusted || tr.Of("path:src/b.go").State != approval.Trusted {
		t.Fatalf("fold: %+v", tr)
	}
	ev = append(ev, approval.TrustEvent{Seq: 2, Boundary: "path:src/a.go", Kind: approval.TrustViolation, At: "t2"})
	if b := approval.Fold(ev).Of("path:src/a.go"); b.Violations != 2 || b.Since != "t1" {
		t.Fatalf("second violation: %+v", b)
	}
	restored := approval.Fold(append(ev, approval.TrustEvent{Seq: 3, Boundary: "path:src/a.go", Kind: approval.TrustRestored, At: "t3"}))
	if restored.Of("path:src/a.go").State != approval.Trusted {
		t.Fatal("restore")
	}

	pol := policy()
	req := canon(t, "file.write", `{"path":"src/a.go"}`)
	env := approval.Envelope{}
	pol.ApprovedPaths = []string{"src/a.go"}
	pm := approval.Permit{ID: "p", Session: "ws-1", Tool: "file.write", Digest: req.Digest, Paths: []string{"src/a.go"},
		PolicyVersion: pol.Version, IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), MaxUses: 5, TrustSeq: 0}
	d := approval.Evaluate(approval.Input{Request: req, Action: write, Policy: pol, Envelope: env, Trust: tr, Permits: []approval.Permit{pm}, TrustSeq: 1, Now: t0})
	if !d.Checkpoint() || d.Triggers[0].Kind != approval.TriggerTrust {
		t.Fatalf("a permit from before the violation covered the untrusted boundary: %v", kinds(d))
	}
	pm.TrustSeq = 1
	if d := approval.Evaluate(approval.Input{Request: req, Action: write, Policy: pol, Envelope: env, Trust: tr, Permits: []approval.Permit{pm}, TrustSeq: 1, Now: t0}); d.Checkpoint() {
		t.Fatalf("a per-step approval after the violation: %v", kinds(d))
	}
	if _, _, err := approval.ParseBoundary("disk:x"); !errors.Is(err, approval.ErrBoundary) {
		t.Fatal(err)
	}
	if k, n, err := approval.ParseBoundary("path:src/a.go"); err != nil || k != "path" || n != "src/a.go" {
		t.Fatal(k, n, err)
	}
}

// TestFromAtlas: the policy's defaults, and what an atlas sets.
func TestFromAtlas(t *testing.T) {
	m := &atlas.Manifest{AtlasID: "com.acme.code", Version: "1.0.0"}
	p := approval.FromAtlas(m, "sha256:aa")
	if p.BaselineTier != atlas.RiskCritical || p.OnViolation != atlas.OnViolationPerStep || p.PermitTTL != time.Hour || p.Version != "com.acme.code@1.0.0#sha256:aa" {
		t.Fatalf("defaults %+v", p)
	}
	m.Approvals = &atlas.Approvals{BaselineRiskTier: "medium", HighRiskTier: "critical", OnViolation: "halt", PermitTTLSeconds: 60, MaxPermitUses: 5, AllowNever: true}
	p = approval.FromAtlas(m, "sha256:aa")
	if p.BaselineTier != "medium" || p.HighRiskTier != "critical" || p.OnViolation != "halt" || p.PermitTTL != time.Minute || p.MaxPermitUses != 5 || !p.AllowNever {
		t.Fatalf("set %+v", p)
	}
}

// TestNoHiddenWidening: an approval lets run what its permit covers and
// nothing after it: the same path with other arguments, or anything
// after the permit is used, revoked or expired, opens a new checkpoint.
func TestNoHiddenWidening(t *testing.T) {
	pol := policy() // src/ is not approved: writing there is a path-scope expansion
	req := canon(t, "file.write", `{"path":"src/a.go","body":"1"}`)
	in := approval.Input{Request: req, Action: write, Policy: pol, Now: t0}
	cp := checkpointFor(t, in)
	for _, o := range []approval.Outcome{approval.OutcomeContinue, approval.OutcomePerStep, approval.OutcomeModified} {
		pm, env := approve(t, cp, o, approval.Proposal{Paths: []string{"src/**"}, Uses: 1, TTLSeconds: 60}, in.Envelope)
		used := pm.Use("x-1")
		for _, r := range []approval.Canonical{req, canon(t, "file.write", `{"path":"src/a.go","body":"2"}`)} {
			d := approval.Evaluate(approval.Input{Request: r, Action: write, Policy: pol, Envelope: env, Permits: []approval.Permit{used}, Now: t0})
			if !d.Checkpoint() {
				t.Fatalf("%s: after its permit was used, %s ran without a checkpoint", o, r.Form)
			}
		}
	}
}

// TestAdoption: a session's first provider class and first policy version
// are adopted without a checkpoint, and Evaluate says so; nothing is
// adopted when the envelope already holds them.
func TestAdoption(t *testing.T) {
	pol := policy()
	pol.ApprovedPaths = []string{"src/**"}
	a := write
	a.ProviderClass = "local"
	req := canon(t, "file.write", `{"path":"src/a.go"}`)
	d := approval.Evaluate(approval.Input{Request: req, Action: a, Policy: pol, Now: t0})
	if d.Checkpoint() || !d.Adopted || d.Envelope.Providers[0] != "local" || d.Envelope.PolicyVersions[pol.Atlas] != pol.Version {
		t.Fatalf("first use: %+v", d)
	}
	again := approval.Evaluate(approval.Input{Request: req, Action: a, Policy: pol, Envelope: d.Envelope, Now: t0})
	if again.Checkpoint() || again.Adopted {
		t.Fatalf("second use adopted again: %+v", again)
	}
}

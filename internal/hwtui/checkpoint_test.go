package hwtui

import (
	"slices"
	"testing"

	"github.com/wacpd/wacpd/highway"
)

// checkpointSubject is a control-plane checkpoint's subject as the daemon
// sends it (keys in canonical order).
const checkpointSubject = `{"canonical_request":{"arguments":{"ticket_id":"T-1"},"canonicalization_version":"wacp-approval/jcs-sha256/1","tool":"ticket.delete"},
"checkpoint_pending":{"authorization_statement":"AUTH-STATEMENT","canonical_request_summary":"SUMMARY ticket.delete","checkpoint_type":"high_risk_operation",
"policy_basis":"POLICY-BASIS","risk_classification":"RISK-HIGH","scope_delta":"SCOPE-NONE","side_effect_class":"irreversible: cannot be undone",
"trigger_description":"TRIGGER-DESC","trust_state":"TRUST-OK"},"digest":"sha256:abc","payload":{"paths":[],"ttl_seconds":3600,"uses":1},
"scope_delta":{"paths_added":["src/b.go"]},"trust_snapshot":[{"boundary":"tool:ticket.delete","state":"trusted","violations":0}]}`

// TestCheckpointShowsNineFields: a checkpoint gate shows the nine fields of
// checkpoint_pending, labelled, in the seed's order, verbatim; d shows the
// canonical form, scope delta and trust snapshot.
func TestCheckpointShowsNineFields(t *testing.T) {
	src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.EnvelopeDelivery, checkpointSubject, true)}}
	h := newHarness(t, src, 120, 80)
	h.mustShow("control-plane checkpoint G1", "checkpoint_type:", "high_risk_operation", "trigger_description:", "TRIGGER-DESC",
		"canonical_request_summary:", "SUMMARY ticket.delete", "scope_delta:", "SCOPE-NONE", "risk_classification:", "RISK-HIGH",
		"side_effect_class:", "irreversible: cannot be undone", "policy_basis:", "POLICY-BASIS", "authorization_statement:",
		"AUTH-STATEMENT", "trust_state:", "TRUST-OK", "p approve, then per-step", "h deny and halt")
	h.keys("d")
	h.mustShow("canonical form:", `"tool": "ticket.delete"`, "scope delta:", `"src/b.go"`, "trust snapshot:", `"tool:ticket.delete"`)
}

// TestCheckpointMissingFieldIsNotDerived: a subject without one of the
// nine fields is shown as a plain gate, nothing filled in.
func TestCheckpointMissingFieldIsNotDerived(t *testing.T) {
	src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.EnvelopeDelivery, `{"checkpoint_pending":{"checkpoint_type":"x"},"payload":{}}`, false)}}
	h := newHarness(t, src, 120, 40)
	h.mustShow("envelope_delivery gate G1")
	h.mustNotShow("control-plane checkpoint", "trigger_description:")
	h.keys("p")
	if got := src.calls(); len(got) != 0 {
		t.Fatalf("p on a gate that is not a checkpoint sent %v", got)
	}
	h.mustShow("is not one")
}

// TestCheckpointOutcomes: y (with Y for an irreversible action) sends
// approve with confirm; p per_step; h reject halt; n reject; the second
// key is what sets confirm.
func TestCheckpointOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		irreversible bool
		keys         []string
		want         []highway.ResolveRequest
	}{
		{"y alone asks", true, []string{"y"}, nil},
		{"y Y", true, []string{"y", "Y"}, []highway.ResolveRequest{{GateID: "G1", Action: highway.Approve, Confirm: true}}},
		{"p Y", true, []string{"p", "Y"}, []highway.ResolveRequest{{GateID: "G1", Action: highway.Approve, Outcome: "per_step", Confirm: true}}},
		{"p reversible", false, []string{"p"}, []highway.ResolveRequest{{GateID: "G1", Action: highway.Approve, Outcome: "per_step"}}},
		{"h", true, []string{"h"}, []highway.ResolveRequest{{GateID: "G1", Action: highway.Reject, Outcome: "halt"}}},
		{"n", true, []string{"n"}, []highway.ResolveRequest{{GateID: "G1", Action: highway.Reject}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.EnvelopeDelivery, checkpointSubject, tc.irreversible)}}
			h := newHarness(t, src, 120, 40)
			h.keys(tc.keys...)
			src.mu.Lock()
			got := slices.Clone(src.requests)
			src.mu.Unlock()
			if len(got) != len(tc.want) {
				t.Fatalf("keys %q sent %+v, want %+v", tc.keys, got, tc.want)
			}
			for i := range got {
				if got[i].GateID != tc.want[i].GateID || got[i].Action != tc.want[i].Action || got[i].Outcome != tc.want[i].Outcome || got[i].Confirm != tc.want[i].Confirm {
					t.Fatalf("keys %q sent %+v, want %+v", tc.keys, got[i], tc.want[i])
				}
			}
		})
	}
}

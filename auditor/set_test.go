package auditor_test

import (
	"encoding/json"
	"testing"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/trail"
)

func TestGenesisOf(t *testing.T) {
	root := trail.Entry{
		ID: "01J0000000000000000000000A", Workspace: "01J0000000000000000000ROOT", EventType: trail.EventWorkspaceCreated,
		Body:      json.RawMessage(`{"hash_algorithm":"blake3-256","taxonomy_id":"base","taxonomy_checksum":"blake3:aa","workspace_id":"01J0000000000000000000ROOT"}`),
		Integrity: trail.Integrity{EntryHash: "blake3:e1"},
	}
	other := root
	other.EventType = trail.EventEnvelopeCreated
	tests := []struct {
		name string
		in   trail.Entry
		want auditor.Genesis
	}{
		{"root created", root, auditor.Genesis{Root: root.Workspace, EntryHash: "blake3:e1", HashAlgorithm: "blake3-256", TaxonomyID: "base", TaxonomyChecksum: "blake3:aa"}},
		{"another event", other, auditor.Genesis{EntryHash: "blake3:e1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auditor.GenesisOf(tt.in); got != tt.want {
				t.Errorf("GenesisOf(%s) = %+v, want %+v", tt.in.EventType, got, tt.want)
			}
		})
	}
}

// member is a verified daemon named name of the deployment of root ROOT,
// with public key k, entry #1 hash h and the workspaces it created.
func member(name, k, h string, created ...string) auditor.Member {
	return auditor.Member{
		Name:    name,
		Report:  auditor.Report{OK: true, PublicKey: k},
		Genesis: auditor.Genesis{Root: "ROOT", EntryHash: h, HashAlgorithm: trail.Algorithm, TaxonomyID: "base", TaxonomyChecksum: "blake3:aa"},
		Created: created,
	}
}

// TestVerifySet: each check of VerifySet fails the set it covers, naming
// the member (and the other member), and the checks run in their
// documented order.
func TestVerifySet(t *testing.T) {
	a, b, c := member("a", "ka", "ha", "w1", "w2"), member("b", "kb", "hb", "w3"), member("c", "kc", "hc")
	with := func(m auditor.Member, fn func(*auditor.Member)) auditor.Member { fn(&m); return m }
	tests := []struct {
		name          string
		in            []auditor.Member
		want          auditor.SetViolation
		member, other string
	}{
		{"one deployment", []auditor.Member{a, b, c}, "", "", ""},
		{"one member", []auditor.Member{a}, "", "", ""},
		{"a workspace created twice in one member", []auditor.Member{with(a, func(m *auditor.Member) { m.Created = []string{"w1", "w1"} }), b}, "", "", ""},
		{"no members", nil, auditor.SetNoMembers, "", ""},
		{"a member broken", []auditor.Member{a, with(b, func(m *auditor.Member) { m.Report.OK, m.Report.Violation = false, auditor.ViolationHashMismatch })}, auditor.SetMemberBroken, "b", ""},
		{"no root", []auditor.Member{a, with(b, func(m *auditor.Member) { m.Genesis.Root = "" })}, auditor.SetNoRoot, "b", ""},
		{"the same key", []auditor.Member{a, b, with(c, func(m *auditor.Member) { m.Report.PublicKey = "ka" })}, auditor.SetSameDaemon, "c", "a"},
		{"the same entry #1", []auditor.Member{a, b, with(c, func(m *auditor.Member) { m.Genesis.EntryHash = "hb" })}, auditor.SetSameDaemon, "c", "b"},
		{"a member given twice", []auditor.Member{a, b, a}, auditor.SetSameDaemon, "a", "a"},
		{"another root", []auditor.Member{a, with(b, func(m *auditor.Member) { m.Genesis.Root = "OTHER" })}, auditor.SetRootDiffers, "b", "a"},
		{"another hash algorithm", []auditor.Member{a, b, with(c, func(m *auditor.Member) { m.Genesis.HashAlgorithm = "sha256" })}, auditor.SetHashAlgorithmDiffers, "c", "a"},
		{"another taxonomy id", []auditor.Member{a, with(b, func(m *auditor.Member) { m.Genesis.TaxonomyID = "custom" })}, auditor.SetTaxonomyDiffers, "b", "a"},
		{"another taxonomy checksum", []auditor.Member{a, with(b, func(m *auditor.Member) { m.Genesis.TaxonomyChecksum = "blake3:bb" })}, auditor.SetTaxonomyDiffers, "b", "a"},
		{"a workspace in two", []auditor.Member{a, b, with(c, func(m *auditor.Member) { m.Created = []string{"w9", "w2"} })}, auditor.SetWorkspaceInTwo, "c", "a"},
		// Order: a broken member before everything; one daemon twice
		// before the roots.
		{"broken and given twice", []auditor.Member{a, a, with(b, func(m *auditor.Member) { m.Report.OK = false })}, auditor.SetMemberBroken, "b", ""},
		{"given twice with another root", []auditor.Member{a, with(b, func(m *auditor.Member) { m.Genesis.Root = "OTHER" }), a}, auditor.SetSameDaemon, "a", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := auditor.VerifySet(tt.in)
			if got.OK != (tt.want == "") || got.Violation != tt.want || got.Member != tt.member || got.Other != tt.other {
				t.Errorf("VerifySet = ok %v, %q, member %q, other %q (%s); want %q, member %q, other %q",
					got.OK, got.Violation, got.Member, got.Other, got.Detail, tt.want, tt.member, tt.other)
			}
			if got.OK && got.Root != "ROOT" || !got.OK && got.Detail == "" {
				t.Errorf("VerifySet = %+v; want the root when ok, a detail when not", got)
			}
			if len(got.Members) != len(tt.in) {
				t.Errorf("VerifySet returned %d members, want the %d given", len(got.Members), len(tt.in))
			}
		})
	}
}

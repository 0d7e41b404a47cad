package taxfile

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/taxonomy"
)

// The tests in this file are named after the conformance rows of TAXONOMY §10.

// doc returns a YAML taxonomy with a valid header and body (indented two
// spaces, under taxonomy:).
func doc(body string) []byte {
	return []byte("taxonomy:\n  id: t\n  version: \"1\"\n  protocol_version: \"0.1\"\n" + body)
}

// wantRule parses data and checks that it is refused with rule.
func wantRule(t *testing.T, name string, data []byte, rule string) {
	t.Helper()
	tax, err := Parse(name, data)
	var ve *taxonomy.ValidationError
	if !errors.As(err, &ve) {
		t.Errorf("Parse(%s) = %v, %v; want *ValidationError with rule %s", name, tax != nil, err, rule)
		return
	}
	if tax != nil {
		t.Errorf("Parse(%s) returned a taxonomy with its error", name)
	}
	if ve.Rule != rule {
		t.Errorf("Parse(%s) rule = %s, want %s (%v)", name, ve.Rule, rule, err)
	}
	if ve.File != name || !strings.Contains(err.Error(), name) {
		t.Errorf("Parse(%s) error %q does not name the file", name, err)
	}
}

func mustParse(t *testing.T, name string, data []byte) *taxonomy.Taxonomy {
	t.Helper()
	tax, err := Parse(name, data)
	if err != nil {
		t.Fatalf("Parse(%s) = %v", name, err)
	}
	return tax
}

func TestTaxonomy_SignalTypesNotExtensible(t *testing.T) {
	tests := []struct{ name, data string }{
		{"top.yaml", string(doc("  signal_types: [ping]\n"))},
		{"signals.yaml", string(doc("  signals:\n    - name: ping\n"))},
		{"beside-wrapper.yaml", "taxonomy: {}\nsignal_types: [ping]\n"},
		{"bare.json", `{"id":"t","version":"1","protocol_version":"0.1","signal_types":["ping"]}`},
		{"in-role.yaml", string(doc("  roles:\n    r:\n      extends: worker\n      signals: [ping]\n"))},
		{"emit-unknown.yaml", string(doc("  roles:\n    r:\n      extends: worker\n      add: [\"emit: ping\"]\n"))},
	}
	for _, tt := range tests {
		wantRule(t, tt.name, []byte(tt.data), taxonomy.RuleSignalNotExtensible)
	}
	if n := len(taxonomy.SignalTypes()); n != 11 {
		t.Errorf("len(SignalTypes()) = %d, want 11", n)
	}
}

func TestTaxonomy_DerivedRoleResolution_BaseRemoveAdd(t *testing.T) {
	tax := mustParse(t, "resolution.yaml", doc(`  roles:
    readd:
      extends: worker
      remove: ["send: query → coordinator", "create: artifact", "read: peer_workspace"]
      add: ["send: query → coordinator", "create: artifact", "read: peer_workspace"]
    narrowed:
      extends: worker
      override: {checkpoint_types: [artifact, review]}
      remove: ["create: review"]
    replaced:
      extends: worker
      override: {checkpoint_types: [review]}
    regranted:
      extends: worker
      override: {checkpoint_types: []}
      remove: ["create: artifact"]
      add: ["create: artifact"]
  checkpoint_types:
    - {name: review, permitted_roles: [worker]}
`))
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"add after remove restores send", tax.CanSend("readd", taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator), true},
		{"add after remove restores create", tax.CanCreateCheckpoint("readd", taxonomy.CheckpointArtifact), true},
		{"remove applies after override", tax.CanCreateCheckpoint("narrowed", "review"), false},
		{"override kept what remove spared", tax.CanCreateCheckpoint("narrowed", taxonomy.CheckpointArtifact), true},
		{"override replaces the base create set", tax.CanCreateCheckpoint("replaced", taxonomy.CheckpointArtifact), false},
		{"override grants", tax.CanCreateCheckpoint("replaced", "review"), true},
		{"add applies after override and remove", tax.CanCreateCheckpoint("regranted", taxonomy.CheckpointArtifact), true},
		{"permitted_roles naming the base role do not pass to derived roles", tax.CanCreateCheckpoint("regranted", "review"), false},
		{"base role keeps its permitted custom type", tax.CanCreateCheckpoint(taxonomy.RoleWorker, "review"), true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if got := tax.ReadScopes("readd"); len(got) != 1 || got[0] != "peer_workspace" {
		t.Errorf("ReadScopes(readd) = %v, want [peer_workspace]", got)
	}
	reviewer := mustLoad(t, validFile("reviewer.yaml"))
	if reviewer.CanSend("reviewer", taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator) || reviewer.CanCreateCheckpoint("reviewer", taxonomy.CheckpointArtifact) {
		t.Errorf("reviewer kept a capability its remove list revokes")
	}
}

func TestTaxonomy_SingleLevelInheritance(t *testing.T) {
	for _, extends := range []string{"senior", "coordinator", "", "Worker", "reviewer"} {
		data := doc("  roles:\n    senior: {extends: worker}\n    r: {extends: \"" + extends + "\"}\n")
		wantRule(t, "extends-"+extends+".yaml", data, taxonomy.RuleExtendsBase)
	}
	tax := mustParse(t, "ok.yaml", doc("  roles:\n    w: {extends: worker}\n    o: {extends: observer}\n"))
	if tax.BaseOf("w") != taxonomy.RoleWorker || tax.BaseOf("o") != taxonomy.RoleObserver {
		t.Errorf("BaseOf(w), BaseOf(o) = %q, %q, want worker, observer", tax.BaseOf("w"), tax.BaseOf("o"))
	}
}

func TestTaxonomy_NoPrivilegeEscalation(t *testing.T) {
	refused := []struct{ extends, capability string }{
		{"worker", `create_workspace`},
		{"worker", `"perform_integration: all"`},
		{"observer", `{action: manage_budgets}`},
		{"observer", `{manage_budgets: true}`},
		{"worker", `Create-Workspace`},
		{"worker", `"read: manage_budgets"`},
		{"worker", `"create: perform_integration"`},
		{"worker", `"send: create_workspace → coordinator"`},
		{"worker", `delegate`},
		{"worker", `"abort_workspace: any"`},
		{"worker", `"send: directive → worker"`},
		{"worker", `"send: feedback -> worker"`},
		{"observer", `{action: send, target: "directive → observer"}`},
		{"worker", `"emit: integrate"`},
		{"worker", `"emit: acknowledged"`},
		{"observer", `"emit: blocked"`},
		{"observer", `"emit: checkpoint"`},
	}
	for i, tt := range refused {
		data := doc("  roles:\n    r:\n      extends: " + tt.extends + "\n      add:\n        - " + tt.capability + "\n")
		wantRule(t, "escalation-"+string(rune('a'+i))+".yaml", data, taxonomy.RuleNoPrivilegeEscalation)
	}
	allowed := []struct{ extends, capability string }{
		{"worker", `"emit: blocked"`},
		{"observer", `"send: query → coordinator"`},
		{"observer", `"create: artifact"`},
		{"worker", `"receive: directive → coordinator"`},
		{"worker", `"read: peer_workspace"`},
	}
	for _, tt := range allowed {
		data := doc("  roles:\n    r:\n      extends: " + tt.extends + "\n      add:\n        - " + tt.capability + "\n")
		mustParse(t, "allowed.yaml", data)
	}
	// A removed coordinator-level name is not an escalation, but it is not a capability either.
	wantRule(t, "remove.yaml", doc("  roles:\n    r:\n      extends: worker\n      remove: [create_workspace]\n"), taxonomy.RuleCapabilitySyntax)
}

func TestTaxonomy_NameUniqueness(t *testing.T) {
	tests := []struct{ name, body, rule string }{
		{"roles-list.yaml", "  roles:\n    - {name: r, extends: worker}\n    - {name: r, extends: worker}\n", taxonomy.RuleNameUnique},
		{"envelopes-map.yaml", "  envelope_types:\n    e: {permissions: [{sender_role: worker, receiver_role: coordinator}]}\n    e: {permissions: [{sender_role: worker, receiver_role: coordinator}]}\n", taxonomy.RuleNameUnique},
		{"checkpoints-list.yaml", "  checkpoint_types:\n    - {name: c, permitted_roles: [worker]}\n    - {name: c, permitted_roles: [worker]}\n", taxonomy.RuleNameUnique},
		{"role-coordinator.yaml", "  roles:\n    coordinator: {extends: worker}\n", taxonomy.RuleNameCollidesBase},
		{"role-observer.yaml", "  roles:\n    - {name: observer, extends: observer}\n", taxonomy.RuleNameCollidesBase},
		{"envelope-directive.yaml", "  envelope_types:\n    - {name: directive, permissions: [{sender_role: worker, receiver_role: coordinator}]}\n", taxonomy.RuleNameCollidesBase},
		{"envelope-feedback.yaml", "  envelope_types:\n    - {name: feedback, permissions: [{sender_role: worker, receiver_role: coordinator}]}\n", taxonomy.RuleNameCollidesBase},
		{"checkpoint-artifact.yaml", "  checkpoint_types:\n    - {name: artifact, permitted_roles: [worker]}\n", taxonomy.RuleNameCollidesBase},
		{"checkpoint-observation.yaml", "  checkpoint_types:\n    observation: {permitted_roles: [observer]}\n", taxonomy.RuleNameCollidesBase},
	}
	for _, tt := range tests {
		wantRule(t, tt.name, doc(tt.body), tt.rule)
	}
	// The same name in different registries is allowed: registries are separate namespaces.
	mustParse(t, "across.yaml", doc(`  roles:
    report: {extends: worker}
  envelope_types:
    - {name: report, permissions: [{sender_role: report, receiver_role: coordinator}]}
  checkpoint_types:
    - {name: report, permitted_roles: [report]}
`))
}

func TestTaxonomy_BaseTypesAlwaysValid(t *testing.T) {
	taxes := map[string]*taxonomy.Taxonomy{"Base()": taxonomy.Base()}
	files, _ := filepath.Glob(filepath.Join("testdata", "valid", "*"))
	for _, f := range files {
		taxes[f] = mustLoad(t, f)
	}
	for name, tax := range taxes {
		for _, r := range taxonomy.BaseRoles() {
			if !tax.HasRole(r) || tax.BaseOf(r) != r {
				t.Errorf("%s: HasRole(%s), BaseOf(%s) = %v, %q", name, r, r, tax.HasRole(r), tax.BaseOf(r))
			}
		}
		for _, e := range baseEnvelopeTypes {
			if !tax.HasEnvelopeType(e) {
				t.Errorf("%s: HasEnvelopeType(%s) = false", name, e)
			}
		}
		for _, c := range []string{taxonomy.CheckpointArtifact, taxonomy.CheckpointObservation} {
			if !tax.HasCheckpointType(c) {
				t.Errorf("%s: HasCheckpointType(%s) = false", name, c)
			}
		}
		if !tax.CanSend(taxonomy.RoleCoordinator, taxonomy.EnvelopeDirective, taxonomy.RoleWorker) || !tax.CanCreateCheckpoint(taxonomy.RoleObserver, taxonomy.CheckpointObservation) {
			t.Errorf("%s: base permissions missing", name)
		}
	}
}

func TestTaxonomy_CrossRegistryConsistency(t *testing.T) {
	tests := []struct{ name, body, rule string }{
		{"no-report.yaml", "  roles:\n    reviewer: {extends: worker, add: [\"send: report → coordinator\"]}\n", taxonomy.RuleCrossRegistry},
		{"no-review.yaml", "  roles:\n    reviewer: {extends: worker, add: [\"create: review\"]}\n", taxonomy.RuleCrossRegistry},
		{"no-override-type.yaml", "  roles:\n    reviewer: {extends: worker, override: {checkpoint_types: [review]}}\n", taxonomy.RuleCrossRegistry},
		{"remove-unknown.yaml", "  roles:\n    reviewer: {extends: worker, remove: [\"create: review\"]}\n", taxonomy.RuleCrossRegistry},
		{"receive-unknown.yaml", "  roles:\n    reviewer: {extends: worker, add: [\"receive: memo → coordinator\"]}\n", taxonomy.RuleCrossRegistry},
		{"send-unknown-role.yaml", "  roles:\n    reviewer: {extends: worker, add: [\"send: query → boss\"]}\n", taxonomy.RuleRoleReference},
	}
	for _, tt := range tests {
		wantRule(t, tt.name, doc(tt.body), tt.rule)
	}
	// Registrations may appear in any order: references resolve over the whole file.
	mustParse(t, "forward.yaml", doc(`  checkpoint_types:
    - {name: review, permitted_roles: [reviewer]}
  envelope_types:
    - {name: report, permissions: [{sender_role: reviewer, receiver_role: coordinator}]}
  roles:
    reviewer: {extends: worker, add: ["send: report → coordinator", "create: review"]}
`))
}

func TestTaxonomy_EnvelopePermissionMatrixExtension(t *testing.T) {
	tax := mustParse(t, "matrix.yaml", doc(`  roles:
    reviewer: {extends: worker}
    auditor: {extends: observer}
  envelope_types:
    - name: memo
      permissions:
        - {sender_role: worker, receiver_role: coordinator}
        - {sender_role: coordinator, receiver_role: auditor}
        - {sender_role: auditor, receiver_role: observer}
`))
	tests := []struct {
		from, typ, to string
		want          bool
	}{
		{taxonomy.RoleWorker, "memo", taxonomy.RoleCoordinator, true},
		{"reviewer", "memo", taxonomy.RoleCoordinator, true}, // sender's base row
		{taxonomy.RoleCoordinator, "memo", "auditor", true},
		{taxonomy.RoleCoordinator, "memo", taxonomy.RoleObserver, false}, // a derived receiver row does not widen to the base
		{"auditor", "memo", taxonomy.RoleObserver, true},
		{"auditor", "memo", "auditor", true}, // receiver's base row
		{taxonomy.RoleObserver, "memo", taxonomy.RoleObserver, false},
		{taxonomy.RoleCoordinator, "memo", taxonomy.RoleWorker, false},
		{taxonomy.RoleWorker, "memo", "reviewer", false},
	}
	for _, tt := range tests {
		if got := tax.CanSend(tt.from, tt.typ, tt.to); got != tt.want {
			t.Errorf("CanSend(%s, %s, %s) = %v, want %v", tt.from, tt.typ, tt.to, got, tt.want)
		}
	}
	// Base rows are unchanged by the extension.
	n := 0
	for _, from := range taxonomy.BaseRoles() {
		for _, typ := range baseEnvelopeTypes {
			for _, to := range taxonomy.BaseRoles() {
				if tax.CanSend(from, typ, to) {
					n++
				}
			}
		}
	}
	if n != 3 {
		t.Errorf("base matrix has %d rows after extension, want 3", n)
	}
	wantRule(t, "no-rows.yaml", doc("  envelope_types:\n    - {name: memo}\n"), taxonomy.RulePermissionsNonEmpty)
	wantRule(t, "bad-row.yaml", doc("  envelope_types:\n    - {name: memo, permissions: [{sender_role: ghost, receiver_role: coordinator}]}\n"), taxonomy.RuleRoleReference)
	wantRule(t, "half-row.yaml", doc("  envelope_types:\n    - {name: memo, permissions: [{sender_role: worker}]}\n"), taxonomy.RuleRequiredField)
}

func TestTaxonomy_CheckpointRoleValidation(t *testing.T) {
	tax := mustParse(t, "cp.yaml", doc(`  roles:
    reviewer: {extends: worker}
  checkpoint_types:
    - {name: review, permitted_roles: [reviewer], required_fields: [verdict]}
    - {name: note, permitted_roles: [observer, worker]}
`))
	tests := []struct {
		role, typ string
		want      bool
	}{
		{"reviewer", "review", true},
		{taxonomy.RoleWorker, "review", false},
		{taxonomy.RoleObserver, "note", true},
		{taxonomy.RoleWorker, "note", true},
		{"reviewer", "note", false},
		{"reviewer", taxonomy.CheckpointArtifact, true},
		{taxonomy.RoleCoordinator, "note", false},
		{"reviewer", "unregistered", false},
	}
	for _, tt := range tests {
		if got := tax.CanCreateCheckpoint(tt.role, tt.typ); got != tt.want {
			t.Errorf("CanCreateCheckpoint(%s, %s) = %v, want %v", tt.role, tt.typ, got, tt.want)
		}
	}
	if got := tax.RequiredFields("review"); len(got) != 1 || got[0] != "verdict" {
		t.Errorf(`RequiredFields("review") = %v, want [verdict]`, got)
	}
	wantRule(t, "empty-roles.yaml", doc("  checkpoint_types:\n    - {name: c, permitted_roles: []}\n"), taxonomy.RulePermittedRolesNonEmpty)
	wantRule(t, "ghost.yaml", doc("  checkpoint_types:\n    - {name: c, permitted_roles: [ghost]}\n"), taxonomy.RuleRoleReference)
	wantRule(t, "coordinator.yaml", doc("  checkpoint_types:\n    - {name: c, permitted_roles: [coordinator]}\n"), taxonomy.RuleCoordinatorCreatesNothing)
	wantRule(t, "blank-field.yaml", doc("  checkpoint_types:\n    - {name: c, permitted_roles: [worker], required_fields: [\" \"]}\n"), taxonomy.RuleRequiredFields)
}

func TestTaxonomy_EmptyTaxonomyValid(t *testing.T) {
	empty := mustLoad(t, validFile("empty.yaml"))
	base := taxonomy.Base()
	roles := append(taxonomy.BaseRoles(), "ghost")
	types := append(baseEnvelopeTypes, "memo")
	for _, from := range roles {
		for _, typ := range types {
			for _, to := range roles {
				if empty.CanSend(from, typ, to) != base.CanSend(from, typ, to) {
					t.Errorf("CanSend(%s, %s, %s) differs between empty file and Base()", from, typ, to)
				}
			}
		}
		for _, c := range []string{taxonomy.CheckpointArtifact, taxonomy.CheckpointObservation, "review"} {
			if empty.CanCreateCheckpoint(from, c) != base.CanCreateCheckpoint(from, c) {
				t.Errorf("CanCreateCheckpoint(%s, %s) differs between empty file and Base()", from, c)
			}
		}
		for _, s := range taxonomy.SignalTypes() {
			if empty.CanEmit(from, s) != base.CanEmit(from, s) {
				t.Errorf("CanEmit(%s, %s) differs between empty file and Base()", from, s)
			}
		}
	}
	// Only a non-empty file must declare protocol_version.
	wantRule(t, "no-pv.yaml", []byte("taxonomy:\n  id: x\n  version: \"1\"\n"), taxonomy.RuleProtocolVersion)
	mustParse(t, "registries-empty.yaml", doc("  roles: []\n  envelope_types: []\n  checkpoint_types: []\n"))
}

func TestTaxonomy_RegistrationBeforeUse(t *testing.T) {
	tax := mustLoad(t, validFile("reviewer.yaml"))
	if tax.HasRole("auditor") || tax.HasEnvelopeType("memo") || tax.HasCheckpointType("decision") {
		t.Errorf("unregistered names reported as registered")
	}
	if tax.CanSend("auditor", "report", taxonomy.RoleCoordinator) || tax.CanCreateCheckpoint("auditor", "review") || tax.CanEmit("auditor", taxonomy.SignalReady) {
		t.Errorf("an unregistered role was granted a permission")
	}
}

func TestTaxonomy_ValidationAllOrNothing(t *testing.T) {
	// One good role, one bad one: nothing is loaded.
	tax, err := Parse("mixed.yaml", doc("  roles:\n    good: {extends: worker}\n    bad: {extends: coordinator}\n"))
	if err == nil || tax != nil {
		t.Errorf("Parse(mixed) = %v, %v; want nil, error", tax, err)
	}
}

package taxfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/taxonomy"
)

// invalidTests lists every file under testdata/invalid with the rule it
// breaks, the entry the error must name, and the sentinel in its chain.
var invalidTests = []struct {
	file, rule, entry string
	kind              error
}{
	{"protocol_version_mismatch.yaml", taxonomy.RuleProtocolVersion, "protocol_version", taxonomy.ErrProtocolVersion},
	{"protocol_version_missing.yaml", taxonomy.RuleProtocolVersion, "protocol_version", taxonomy.ErrProtocolVersion},
	{"role_duplicate.yaml", taxonomy.RuleNameUnique, "roles[reviewer]", taxonomy.ErrDuplicateName},
	{"roles_map_duplicate.json", taxonomy.RuleNameUnique, "roles[reviewer]", taxonomy.ErrDuplicateName},
	{"checkpoint_duplicate.yaml", taxonomy.RuleNameUnique, "checkpoint_types[review]", taxonomy.ErrDuplicateName},
	{"role_collides_base.yaml", taxonomy.RuleNameCollidesBase, "roles[worker]", taxonomy.ErrDuplicateName},
	{"envelope_collides_base.yaml", taxonomy.RuleNameCollidesBase, "envelope_types[query]", taxonomy.ErrDuplicateName},
	{"extends_derived.yaml", taxonomy.RuleExtendsBase, "roles[reviewer]", taxonomy.ErrInheritance},
	{"extends_coordinator.yaml", taxonomy.RuleExtendsBase, "roles[deputy]", taxonomy.ErrInheritance},
	{"escalation_create_workspace.yaml", taxonomy.RuleNoPrivilegeEscalation, "roles[foreman].add[0]", taxonomy.ErrPrivilegeEscalation},
	{"escalation_manage_budgets.yaml", taxonomy.RuleNoPrivilegeEscalation, "roles[accountant].add[0]", taxonomy.ErrPrivilegeEscalation},
	{"escalation_send_directive.yaml", taxonomy.RuleNoPrivilegeEscalation, "roles[lead].add[0]", taxonomy.ErrPrivilegeEscalation},
	{"escalation_emit_integrate.yaml", taxonomy.RuleNoPrivilegeEscalation, "roles[merger].add[0]", taxonomy.ErrPrivilegeEscalation},
	{"emit_remove.yaml", taxonomy.RuleEmitNotRemovable, "roles[quiet].remove[0]", taxonomy.ErrPrivilegeEscalation},
	{"emit_unknown_signal.yaml", taxonomy.RuleSignalNotExtensible, "roles[pinger].add[0]", taxonomy.ErrSignalNotExtensible},
	{"coordinator_checkpoint.yaml", taxonomy.RuleCoordinatorCreatesNothing, "checkpoint_types[plan].permitted_roles[0]", taxonomy.ErrPrivilegeEscalation},
	{"cross_registry_override.yaml", taxonomy.RuleCrossRegistry, "roles[senior_worker].override.checkpoint_types[1]", taxonomy.ErrUnknownType},
	{"cross_registry_send.yaml", taxonomy.RuleCrossRegistry, "roles[reviewer].add[0]", taxonomy.ErrUnknownType},
	{"cross_registry_create.yaml", taxonomy.RuleCrossRegistry, "roles[reviewer].add[0]", taxonomy.ErrUnknownType},
	{"capability_role_reference.yaml", taxonomy.RuleRoleReference, "roles[reviewer].add[0]", taxonomy.ErrUnknownRole},
	{"envelope_role_reference.yaml", taxonomy.RuleRoleReference, "envelope_types[report].permissions[0]", taxonomy.ErrUnknownRole},
	{"checkpoint_role_reference.yaml", taxonomy.RuleRoleReference, "checkpoint_types[review].permitted_roles[1]", taxonomy.ErrUnknownRole},
	{"permissions_empty.yaml", taxonomy.RulePermissionsNonEmpty, "envelope_types[report]", nil},
	{"permitted_roles_empty.yaml", taxonomy.RulePermittedRolesNonEmpty, "checkpoint_types[review]", nil},
	{"required_fields_duplicate.yaml", taxonomy.RuleRequiredFields, "checkpoint_types[review].required_fields[1]", nil},
	{"signal_types.yaml", taxonomy.RuleSignalNotExtensible, "signal_types", taxonomy.ErrSignalNotExtensible},
	{"signals_top.json", taxonomy.RuleSignalNotExtensible, "signals", taxonomy.ErrSignalNotExtensible},
	{"unknown_field.yaml", taxonomy.RuleUnknownField, "roles[reviewer].description", taxonomy.ErrUnknownField},
	{"capability_syntax.yaml", taxonomy.RuleCapabilitySyntax, "roles[reviewer].add[0]", nil},
	{"name_syntax.yaml", taxonomy.RuleNameSyntax, "roles[senior worker]", nil},
	{"name_mismatch.yaml", taxonomy.RuleNameMismatch, "roles[reviewer]", nil},
	{"missing_id.yaml", taxonomy.RuleRequiredField, "id", nil},
	{"field_type.yaml", taxonomy.RuleFieldType, "roles", taxonomy.ErrSyntax},
	{"duplicate_key.yaml", taxonomy.RuleDuplicateKey, "envelope_types[report].name", taxonomy.ErrSyntax},
	{"syntax.yaml", taxonomy.RuleSyntax, "", taxonomy.ErrSyntax},
	{"syntax.json", taxonomy.RuleSyntax, "", taxonomy.ErrSyntax},
}

func TestLoad_Invalid(t *testing.T) {
	for _, tt := range invalidTests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "invalid", tt.file)
			tax, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%q) = %v, nil; want error with rule %s", path, tax.ID(), tt.rule)
			}
			if tax != nil {
				t.Errorf("Load(%q) returned a taxonomy with its error; want nil (all-or-nothing)", path)
			}
			var ve *taxonomy.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Load(%q) error = %T %v, want *ValidationError", path, err, err)
			}
			if ve.Rule != tt.rule {
				t.Errorf("Load(%q) rule = %q, want %q (error: %v)", path, ve.Rule, tt.rule, err)
			}
			if ve.File != path {
				t.Errorf("Load(%q) File = %q, want %q", path, ve.File, path)
			}
			if ve.Entry != tt.entry {
				t.Errorf("Load(%q) Entry = %q, want %q (error: %v)", path, ve.Entry, tt.entry, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "taxonomy: "+path+": ") || !strings.Contains(msg, tt.entry) {
				t.Errorf("Load(%q) error = %q, want it to start with the file and name entry %q", path, msg, tt.entry)
			}
			if !errors.Is(err, taxonomy.ErrInvalid) {
				t.Errorf("errors.Is(Load(%q), ErrInvalid) = false, want true", path)
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("errors.Is(Load(%q), %v) = false, want true (error: %v)", path, tt.kind, err)
			}
		})
	}
}

// TestLoad_InvalidFilesAllTested keeps the table and the directory in step.
func TestLoad_InvalidFilesAllTested(t *testing.T) {
	files, err := os.ReadDir(filepath.Join("testdata", "invalid"))
	if err != nil {
		t.Fatal(err)
	}
	listed := make(map[string]bool)
	for _, tt := range invalidTests {
		listed[tt.file] = true
	}
	rules := make(map[string]bool)
	for _, f := range files {
		if !listed[f.Name()] {
			t.Errorf("testdata/invalid/%s has no entry in invalidTests", f.Name())
		}
	}
	for _, tt := range invalidTests {
		rules[tt.rule] = true
	}
	if len(rules) < 14 {
		t.Errorf("invalid files cover %d rules, want at least 14", len(rules))
	}
}

func TestValidationError_Format(t *testing.T) {
	_, err := Parse("reviewers.yaml", []byte(`
taxonomy:
  id: x
  version: "1"
  protocol_version: "0.1"
  roles:
    senior: {extends: worker}
    reviewer: {extends: senior}
`))
	want := `taxonomy: reviewers.yaml: roles[reviewer]: extends must name a base role (worker|observer), got "senior"`
	if err == nil || err.Error() != want {
		t.Errorf("Parse(reviewers.yaml) error = %v, want %s", err, want)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "no-such-file.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want os.ErrNotExist in chain", err)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "taxonomy: ") {
		t.Errorf("Load(missing) error = %q, want prefix %q", err, "taxonomy: ")
	}
}

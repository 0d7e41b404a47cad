package taxonomy

import (
	"errors"
	"fmt"
	"strings"
)

// These errors describe why a taxonomy was refused. Every error returned by
// Parse or Load for a file that was read is a *ValidationError, and every
// *ValidationError matches ErrInvalid. The more specific sentinels below are
// in the chain of the validation rules named in their comments. Test with
// errors.Is.
var (
	// ErrInvalid matches every *ValidationError: the taxonomy was refused as a whole.
	ErrInvalid = errors.New("taxonomy: invalid taxonomy")
	// ErrSyntax is the cause for rules syntax, field_type and duplicate_key:
	// the file is not well-formed YAML or JSON, or a field has the wrong shape.
	ErrSyntax = errors.New("taxonomy: malformed taxonomy document")
	// ErrUnknownField is the cause for rule unknown_field.
	ErrUnknownField = errors.New("taxonomy: unknown field")
	// ErrSignalNotExtensible is the cause for rule signal_not_extensible.
	ErrSignalNotExtensible = errors.New("taxonomy: signal types are not extensible")
	// ErrProtocolVersion is the cause for rule protocol_version.
	ErrProtocolVersion = errors.New("taxonomy: protocol version mismatch")
	// ErrDuplicateName is the cause for rules name_unique and name_collides_base.
	ErrDuplicateName = errors.New("taxonomy: duplicate or reserved name")
	// ErrInheritance is the cause for rule extends_base.
	ErrInheritance = errors.New("taxonomy: invalid role inheritance")
	// ErrPrivilegeEscalation is the cause for rules no_privilege_escalation,
	// emit_not_removable and coordinator_creates_nothing.
	ErrPrivilegeEscalation = errors.New("taxonomy: privilege escalation")
	// ErrUnknownRole is the cause for rule role_reference. Callers outside this
	// package may also wrap it when refusing an unregistered role.
	ErrUnknownRole = errors.New("taxonomy: unknown role")
	// ErrUnknownType is the cause for rule cross_registry. Callers outside this
	// package may also wrap it when refusing an unregistered envelope or
	// checkpoint type.
	ErrUnknownType = errors.New("taxonomy: unknown type")
)

// The validation rule identifiers carried in ValidationError.Rule. They are
// stable; the package documentation describes each one.
const (
	RuleSyntax                    = "syntax"
	RuleFieldType                 = "field_type"
	RuleDuplicateKey              = "duplicate_key"
	RuleUnknownField              = "unknown_field"
	RuleSignalNotExtensible       = "signal_not_extensible"
	RuleProtocolVersion           = "protocol_version"
	RuleRequiredField             = "required_field"
	RuleNameSyntax                = "name_syntax"
	RuleNameMismatch              = "name_mismatch"
	RuleNameUnique                = "name_unique"
	RuleNameCollidesBase          = "name_collides_base"
	RuleExtendsBase               = "extends_base"
	RuleCapabilitySyntax          = "capability_syntax"
	RuleNoPrivilegeEscalation     = "no_privilege_escalation"
	RuleEmitNotRemovable          = "emit_not_removable"
	RuleCrossRegistry             = "cross_registry"
	RuleRoleReference             = "role_reference"
	RulePermissionsNonEmpty       = "permissions_nonempty"
	RulePermittedRolesNonEmpty    = "permitted_roles_nonempty"
	RuleCoordinatorCreatesNothing = "coordinator_creates_nothing"
	RuleRequiredFields            = "required_fields"
)

// A ValidationError reports why a taxonomy file was refused: the file, the
// entry in it (for example "roles[reviewer]" or "envelope_types[report].permissions[0]";
// empty for the document as a whole), the rule broken, and the cause.
//
// It prints as
//
//	taxonomy: reviewers.yaml: roles[reviewer]: extends must name a base role (worker|observer), got "senior"
type ValidationError struct {
	File  string // the name given to Parse, or the path given to Load
	Entry string // the offending entry; "" for the whole document
	Rule  string // one of the Rule… constants
	Err   error  // the cause; may wrap one of the sentinels above
}

// Error formats e as "taxonomy: <file>: <entry>: <cause>".
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("taxonomy: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Entry != "" {
		b.WriteString(e.Entry)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("rule " + e.Rule + " violated")
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *ValidationError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalid, which every ValidationError matches.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// cause is a ValidationError's Err: it prints only its message and unwraps
// to the rule's sentinel (nil when the rule has none).
type cause struct {
	msg  string
	kind error
}

func (c *cause) Error() string { return c.msg }
func (c *cause) Unwrap() error { return c.kind }

// ruleKinds maps a rule to the sentinel its cause wraps.
var ruleKinds = map[string]error{
	RuleSyntax:                    ErrSyntax,
	RuleFieldType:                 ErrSyntax,
	RuleDuplicateKey:              ErrSyntax,
	RuleUnknownField:              ErrUnknownField,
	RuleSignalNotExtensible:       ErrSignalNotExtensible,
	RuleProtocolVersion:           ErrProtocolVersion,
	RuleNameUnique:                ErrDuplicateName,
	RuleNameCollidesBase:          ErrDuplicateName,
	RuleExtendsBase:               ErrInheritance,
	RuleNoPrivilegeEscalation:     ErrPrivilegeEscalation,
	RuleEmitNotRemovable:          ErrPrivilegeEscalation,
	RuleCoordinatorCreatesNothing: ErrPrivilegeEscalation,
	RuleRoleReference:             ErrUnknownRole,
	RuleCrossRegistry:             ErrUnknownType,
}

// invalid returns a ValidationError without its File, which Parse fills in.
func invalid(entry, rule, format string, args ...any) *ValidationError {
	return &ValidationError{
		Entry: entry,
		Rule:  rule,
		Err:   &cause{msg: fmt.Sprintf(format, args...), kind: ruleKinds[rule]},
	}
}

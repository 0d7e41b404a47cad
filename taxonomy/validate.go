package taxonomy

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

const maxNameLen = 128

// validate runs every check of TAXONOMY §3–§7 on a decoded taxonomy and
// returns the first failure, or nil. The checks run in a fixed order
// (document, names, roles, envelope types, checkpoint types; entries in file
// order), so the same file always yields the same error.
func validate(raw *rawTaxonomy) *ValidationError {
	if raw.empty {
		return nil
	}
	if !raw.hasPV {
		return invalid("protocol_version", RuleProtocolVersion, "protocol_version is required (want %q)", ProtocolVersion)
	}
	if raw.protocolVersion != ProtocolVersion {
		return invalid("protocol_version", RuleProtocolVersion, "protocol version %q is not supported (want %q)", raw.protocolVersion, ProtocolVersion)
	}
	if raw.id == "" {
		return invalid("id", RuleRequiredField, "id is required in a non-empty taxonomy")
	}
	if raw.version == "" {
		return invalid("version", RuleRequiredField, "version is required in a non-empty taxonomy")
	}
	g, err := register(raw)
	if err != nil {
		return err
	}
	for i := range raw.roles {
		if err := g.checkRole(&raw.roles[i]); err != nil {
			return err
		}
	}
	for _, e := range raw.envelopes {
		if err := g.checkEnvelope(e); err != nil {
			return err
		}
	}
	for _, c := range raw.checkpoints {
		if err := g.checkCheckpoint(c); err != nil {
			return err
		}
	}
	return nil
}

// register checks the names of all three registries (syntax, uniqueness, no
// collision with base names) and indexes them.
func register(raw *rawTaxonomy) (*registry, *ValidationError) {
	g := &registry{
		roles:       make(map[string]*rawRole, len(raw.roles)),
		envelopes:   make(map[string]bool, len(raw.envelopes)),
		checkpoints: make(map[string]bool, len(raw.checkpoints)),
	}
	for i := range raw.roles {
		r := &raw.roles[i]
		if err := checkName(r.entry, "role", r.name, IsBaseRole, "coordinator, worker, observer", g.roles[r.name] != nil); err != nil {
			return nil, err
		}
		g.roles[r.name] = r
	}
	for _, e := range raw.envelopes {
		if err := checkName(e.entry, "envelope type", e.name, IsBaseEnvelopeType, "directive, feedback, query", g.envelopes[e.name]); err != nil {
			return nil, err
		}
		g.envelopes[e.name] = true
	}
	for _, c := range raw.checkpoints {
		if err := checkName(c.entry, "checkpoint type", c.name, IsBaseCheckpointType, "artifact, observation", g.checkpoints[c.name]); err != nil {
			return nil, err
		}
		g.checkpoints[c.name] = true
	}
	return g, nil
}

func checkName(entry, what, name string, isBase func(string) bool, baseNames string, seen bool) *ValidationError {
	switch {
	case len(name) > maxNameLen || !utf8.ValidString(name) || !isToken(name):
		return invalid(entry, RuleNameSyntax,
			"%s name %q must be 1 to %d bytes of UTF-8 with no white space, control characters, ':' or arrow", what, name, maxNameLen)
	case isBase(name):
		return invalid(entry, RuleNameCollidesBase, "%s name %q is a base name (%s) and cannot be redefined", what, name, baseNames)
	case seen:
		return invalid(entry, RuleNameUnique, "%s %q is defined more than once", what, name)
	}
	return nil
}

func (g *registry) checkRole(r *rawRole) *ValidationError {
	if r.extends != RoleWorker && r.extends != RoleObserver {
		return invalid(r.entry, RuleExtendsBase, "extends must name a base role (worker|observer), got %q", r.extends)
	}
	for _, c := range r.remove {
		if err := g.checkCapability(r, c, false); err != nil {
			return err
		}
	}
	for _, c := range r.add {
		if err := g.checkCapability(r, c, true); err != nil {
			return err
		}
	}
	for i, t := range r.overrideTypes {
		if !g.hasCheckpoint(t) {
			return invalid(r.entry+".override.checkpoint_types["+strconv.Itoa(i)+"]", RuleCrossRegistry,
				"checkpoint type %q is neither a base type nor registered in checkpoint_types", t)
		}
	}
	return nil
}

func (g *registry) checkEnvelope(e rawEnvelope) *ValidationError {
	if len(e.perms) == 0 {
		return invalid(e.entry, RulePermissionsNonEmpty, "permissions must list at least one sender_role/receiver_role row")
	}
	for _, p := range e.perms {
		for _, side := range []struct{ field, role string }{{"sender_role", p.sender}, {"receiver_role", p.receiver}} {
			if side.role == "" {
				return invalid(p.entry, RuleRequiredField, "%s is required", side.field)
			}
			if !g.hasRole(side.role) {
				return invalid(p.entry, RuleRoleReference, "%s %q is neither a base role nor registered in roles", side.field, side.role)
			}
		}
	}
	return nil
}

func (g *registry) checkCheckpoint(c rawCheckpoint) *ValidationError {
	if len(c.permitted) == 0 {
		return invalid(c.entry, RulePermittedRolesNonEmpty, "permitted_roles must name at least one role")
	}
	for i, role := range c.permitted {
		entry := c.entry + ".permitted_roles[" + strconv.Itoa(i) + "]"
		if role == RoleCoordinator {
			return invalid(entry, RuleCoordinatorCreatesNothing, "the coordinator creates no checkpoints and cannot be permitted one")
		}
		if !g.hasRole(role) {
			return invalid(entry, RuleRoleReference, "role %q is neither a base role nor registered in roles", role)
		}
	}
	seen := make(map[string]bool, len(c.required))
	for i, f := range c.required {
		entry := c.entry + ".required_fields[" + strconv.Itoa(i) + "]"
		if strings.TrimSpace(f) == "" {
			return invalid(entry, RuleRequiredFields, "required field names must be non-empty")
		}
		if seen[f] {
			return invalid(entry, RuleRequiredFields, "required field %q is listed more than once", f)
		}
		seen[f] = true
	}
	return nil
}

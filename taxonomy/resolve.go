package taxonomy

import (
	"maps"
	"slices"
)

// A role is one entry of the role lookup table: the effective permission set
// of a base or derived role, resolved once at load.
type role struct {
	base   string
	create map[string]bool  // checkpoint types the role may create
	send   map[sendKey]bool // (type, receiver role) pairs the role may send
	reads  []string         // read scopes added by the taxonomy, sorted
}

// A sendKey is the part of a matrix row that follows the sender.
type sendKey struct{ typ, receiver string }

// build turns a validated taxonomy into lookup tables. Resolution follows
// the package documentation ("Resolution").
func build(raw *rawTaxonomy, checksum string) *Taxonomy {
	t := &Taxonomy{
		id:              raw.id,
		version:         raw.version,
		checksum:        checksum,
		roles:           make(map[string]*role, 3+len(raw.roles)),
		envelopeTypes:   set(EnvelopeDirective, EnvelopeFeedback, EnvelopeQuery),
		checkpointTypes: map[string][]string{CheckpointArtifact: nil, CheckpointObservation: nil},
	}
	if raw.empty {
		t.id, t.version = BaseID, BaseVersion
	}
	rows := slices.Clone(baseRows)
	for _, e := range raw.envelopes {
		t.envelopeTypes[e.name] = true
		for _, p := range e.perms {
			rows = append(rows, row{p.sender, e.name, p.receiver})
		}
	}
	permittedTo := make(map[string][]string) // role → custom checkpoint types naming it
	for _, c := range raw.checkpoints {
		t.checkpointTypes[c.name] = slices.Clone(c.required)
		for _, r := range c.permitted {
			permittedTo[r] = append(permittedTo[r], c.name)
		}
	}
	for _, b := range BaseRoles() {
		r := &role{base: b, create: set(baseCreate[b]...), send: sendsFrom(rows, b, b)}
		if b != RoleCoordinator { // validation refuses coordinator in permitted_roles
			for _, c := range permittedTo[b] {
				r.create[c] = true
			}
		}
		t.roles[b] = r
	}
	for i := range raw.roles {
		rr := &raw.roles[i]
		t.roles[rr.name] = resolve(rr, rows, permittedTo[rr.name])
	}
	t.roleNames = slices.Sorted(maps.Keys(t.roles))
	return t
}

// sendsFrom collects the (type, receiver) pairs of the rows sent by name or
// by its base role.
func sendsFrom(rows []row, name, base string) map[sendKey]bool {
	m := make(map[sendKey]bool)
	for _, r := range rows {
		if r.sender == name || r.sender == base {
			m[sendKey{r.typ, r.receiver}] = true
		}
	}
	return m
}

// resolve computes a derived role's effective permissions: the base role's,
// then override.checkpoint_types, then remove, then add, then the custom
// checkpoint types whose permitted_roles name the role.
func resolve(rr *rawRole, rows []row, permitted []string) *role {
	r := &role{base: rr.extends, send: sendsFrom(rows, rr.name, rr.extends)}
	if rr.hasOverride {
		r.create = set(rr.overrideTypes...)
	} else {
		r.create = set(baseCreate[rr.extends]...)
	}
	reads := make(map[string]bool)
	apply := func(caps []rawCap, grant bool) {
		for _, c := range caps {
			switch c.action {
			case ActionCreate:
				setTo(r.create, c.target, grant)
			case ActionRead:
				setTo(reads, c.target, grant)
			case ActionSend:
				typ, recv, _ := splitArrow(c.target)
				setTo(r.send, sendKey{typ, recv}, grant)
			}
			// receive is informational (receive rights are inbox-level);
			// emit in add is within the base set by validation.
		}
	}
	apply(rr.remove, false)
	apply(rr.add, true)
	for _, c := range permitted {
		r.create[c] = true
	}
	r.reads = slices.Sorted(maps.Keys(reads))
	return r
}

func setTo[K comparable](m map[K]bool, k K, grant bool) {
	if grant {
		m[k] = true
	} else {
		delete(m, k)
	}
}

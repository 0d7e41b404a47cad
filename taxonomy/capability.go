package taxonomy

import (
	"strconv"
	"strings"
	"unicode"
)

// A rawCap is one capability of a role's add or remove list, as written.
type rawCap struct {
	entry          string // "roles[reviewer].add[0]"
	action, target string
}

func (c rawCap) String() string {
	if c.target == "" {
		return c.action
	}
	return c.action + ": " + c.target
}

// capList decodes a list of capabilities. Each item is a string
// "action: target", a one-key mapping {action: target} (how YAML reads the
// unquoted spec form "- send: report → coordinator"), or a mapping
// {action: ..., target: ...}.
func capList(n *Node, label string) ([]rawCap, *ValidationError) {
	if n == nil || n.Kind == NullNode {
		return nil, nil
	}
	if n.Kind != ListNode {
		return nil, invalid(label, RuleFieldType, "must be a list of capabilities, got %v", n.Kind)
	}
	out := make([]rawCap, 0, len(n.Items))
	for i, item := range n.Items {
		c, err := decodeCap(item, label+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func decodeCap(n *Node, label string) (rawCap, *ValidationError) {
	c := rawCap{entry: label}
	switch {
	case n.Kind == StringNode:
		a, t, _ := strings.Cut(n.Text, ":")
		c.action, c.target = strings.TrimSpace(a), strings.TrimSpace(t)
		return c, nil
	case n.Kind == MapNode && indexOf(n.Keys, "action") >= 0:
		f, err := fields(n, label, []string{"action", "target"})
		if err != nil {
			return c, err
		}
		if c.action, err = str(f["action"], label+".action"); err != nil {
			return c, err
		}
		c.action = strings.TrimSpace(c.action)
		if t := f["target"]; t != nil && isText(t) {
			c.target = strings.TrimSpace(t.Text)
		} else if t != nil && t.Kind != NullNode && !isCoordinatorAction(c.action) {
			return c, invalid(label+".target", RuleFieldType, "must be a string, got %v", t.Kind)
		}
		return c, nil
	case n.Kind == MapNode && len(n.Keys) == 1 && n.Keys[0] != "target":
		c.action = strings.TrimSpace(n.Keys[0])
		if v := n.Values[0]; isText(v) {
			c.target = strings.TrimSpace(v.Text)
		} else if v.Kind != NullNode && !isCoordinatorAction(c.action) {
			return c, invalid(label, RuleCapabilitySyntax, "target of %q must be a string, got %v", c.action, v.Kind)
		}
		return c, nil
	}
	return c, invalid(label, RuleCapabilitySyntax,
		`capability must be a string like "send: report → coordinator" or a mapping {action, target}, got %v`, n.Kind)
}

// splitArrow splits a send or receive target "<envelope_type> → <role>"
// (also written with "->") into its two names.
func splitArrow(target string) (typ, role string, ok bool) {
	arrow := "→"
	i := strings.Index(target, arrow)
	if i < 0 {
		arrow = "->"
		i = strings.Index(target, arrow)
	}
	if i < 0 {
		return "", "", false
	}
	typ = strings.TrimSpace(target[:i])
	role = strings.TrimSpace(target[i+len(arrow):])
	if !isToken(typ) || !isToken(role) {
		return "", "", false
	}
	return typ, role, true
}

// isToken reports whether s is a non-empty single word: no white space, no
// control characters, no ':' and no arrow. Names and capability targets are
// tokens so that capability strings parse unambiguously.
func isToken(s string) bool {
	if s == "" || strings.Contains(s, "->") {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == ':' || r == '→' || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// registry is what capability and reference checks consult: the names
// declared in the file being validated, plus the base names.
type registry struct {
	roles       map[string]*rawRole
	envelopes   map[string]bool
	checkpoints map[string]bool
}

func (g *registry) hasRole(name string) bool {
	return IsBaseRole(name) || g.roles[name] != nil
}

func (g *registry) hasEnvelope(name string) bool {
	return IsBaseEnvelopeType(name) || g.envelopes[name]
}

func (g *registry) hasCheckpoint(name string) bool {
	return IsBaseCheckpointType(name) || g.checkpoints[name]
}

// checkCapability validates one capability of role r's add list (adding is
// true) or remove list.
func (g *registry) checkCapability(r *rawRole, c rawCap, adding bool) *ValidationError {
	if adding {
		if err := checkEscalation(r, c); err != nil {
			return err
		}
	}
	switch c.action {
	case ActionSend, ActionReceive:
		typ, role, ok := splitArrow(c.target)
		if !ok {
			return invalid(c.entry, RuleCapabilitySyntax, "%s target must be \"<envelope_type> → <role>\", got %q", c.action, c.target)
		}
		if adding && c.action == ActionSend && (typ == EnvelopeDirective || typ == EnvelopeFeedback) {
			return invalid(c.entry, RuleNoPrivilegeEscalation,
				"%q grants a coordinator-only envelope right (directive and feedback are sent by the coordinator or a delegate)", c.String())
		}
		if !g.hasEnvelope(typ) {
			return invalid(c.entry, RuleCrossRegistry, "%q names envelope type %q, which is neither a base type nor registered in envelope_types", c.String(), typ)
		}
		if !g.hasRole(role) {
			return invalid(c.entry, RuleRoleReference, "%q names role %q, which is neither a base role nor registered in roles", c.String(), role)
		}
	case ActionRead:
		if !isToken(c.target) {
			return invalid(c.entry, RuleCapabilitySyntax, "read target must be a scope identifier such as assigned_workspace, got %q", c.target)
		}
	case ActionCreate:
		if !isToken(c.target) {
			return invalid(c.entry, RuleCapabilitySyntax, "create target must be a checkpoint type name, got %q", c.target)
		}
		if !g.hasCheckpoint(c.target) {
			return invalid(c.entry, RuleCrossRegistry, "%q names checkpoint type %q, which is neither a base type nor registered in checkpoint_types", c.String(), c.target)
		}
	case ActionEmit:
		s := SignalType(c.target)
		if !s.Valid() {
			return invalid(c.entry, RuleSignalNotExtensible, "%q names %q, which is not one of the protocol's signal types", c.String(), c.target)
		}
		if !adding {
			return invalid(c.entry, RuleEmitNotRemovable, "%q: a derived role emits exactly its base role's signals; emit cannot be removed", c.String())
		}
		if !baseEmit[r.extends][s] {
			return invalid(c.entry, RuleNoPrivilegeEscalation, "%q: %s is not in the %s signal set, so a derived %s cannot emit it", c.String(), c.target, r.extends, r.extends)
		}
	default:
		return invalid(c.entry, RuleCapabilitySyntax, "unknown capability action %q (want send, receive, read, create or emit)", c.action)
	}
	return nil
}

// checkEscalation refuses a capability that names a coordinator-level action
// anywhere: as its action, as its target, or as either side of an arrow.
func checkEscalation(r *rawRole, c rawCap) *ValidationError {
	names := []string{c.action, c.target}
	if typ, role, ok := splitArrow(c.target); ok {
		names = append(names, typ, role)
	}
	for _, n := range names {
		if isCoordinatorAction(n) {
			return invalid(c.entry, RuleNoPrivilegeEscalation,
				"%q is a coordinator-level capability; a derived %s cannot add it", c.String(), r.extends)
		}
	}
	return nil
}

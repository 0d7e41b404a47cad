package taxonomy

import (
	"fmt"
	"strconv"
	"strings"
)

// The raw* types hold a decoded but not yet validated taxonomy. Each keeps
// the label of its entry for error messages.
type rawTaxonomy struct {
	empty           bool // the document declares nothing at all
	id, version     string
	protocolVersion string
	hasPV           bool
	roles           []rawRole
	envelopes       []rawEnvelope
	checkpoints     []rawCheckpoint
}

type rawRole struct {
	entry         string // "roles[reviewer]"
	name, extends string
	add, remove   []rawCap
	hasOverride   bool // override.checkpoint_types is present
	overrideTypes []string
}

type rawEnvelope struct {
	entry, name string
	perms       []rawPerm
}

type rawPerm struct {
	entry            string
	sender, receiver string
}

type rawCheckpoint struct {
	entry, name string
	permitted   []string
	required    []string
}

// Allowed keys, per object.
var (
	topKeys        = []string{"id", "version", "protocol_version", "roles", "envelope_types", "checkpoint_types"}
	roleKeys       = []string{"name", "extends", "add", "remove", "override"}
	overrideKeys   = []string{"checkpoint_types"}
	envelopeKeys   = []string{"name", "description", "permissions"}
	permissionKeys = []string{"sender_role", "receiver_role"}
	checkpointKeys = []string{"name", "description", "permitted_roles", "required_fields"}
)

// signalKeys are the keys that would register signal types.
var signalKeys = map[string]bool{"signal_types": true, "signals": true}

func decodeTaxonomy(root *Node) (*rawTaxonomy, *ValidationError) {
	switch root.Kind {
	case NullNode:
		return &rawTaxonomy{empty: true}, nil
	case MapNode:
	default:
		return nil, invalid("", RuleFieldType, "top level must be a mapping, got %v", root.Kind)
	}
	body := root
	if i := indexOf(root.Keys, "taxonomy"); i >= 0 {
		for _, k := range root.Keys {
			if k != "taxonomy" {
				return nil, unknownField("", k, []string{"taxonomy"})
			}
		}
		if len(root.Keys) > 1 {
			return nil, invalid("taxonomy", RuleDuplicateKey, "key \"taxonomy\" appears more than once")
		}
		body = root.Values[i]
		switch body.Kind {
		case NullNode:
			return &rawTaxonomy{empty: true}, nil
		case MapNode:
		default:
			return nil, invalid("taxonomy", RuleFieldType, "must be a mapping, got %v", body.Kind)
		}
	}
	f, err := fields(body, "", topKeys)
	if err != nil {
		return nil, err
	}
	t := &rawTaxonomy{empty: len(body.Keys) == 0}
	if t.id, err = str(f["id"], "id"); err != nil {
		return nil, err
	}
	if t.version, err = str(f["version"], "version"); err != nil {
		return nil, err
	}
	if pv := f["protocol_version"]; pv != nil && pv.Kind != NullNode {
		t.hasPV = true
		if t.protocolVersion, err = str(pv, "protocol_version"); err != nil {
			return nil, err
		}
	}
	if t.roles, err = decodeEntries(f["roles"], "roles", decodeRole); err != nil {
		return nil, err
	}
	if t.envelopes, err = decodeEntries(f["envelope_types"], "envelope_types", decodeEnvelope); err != nil {
		return nil, err
	}
	if t.checkpoints, err = decodeEntries(f["checkpoint_types"], "checkpoint_types", decodeCheckpoint); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeEntries decodes each entry of the registry n (named name) with decode.
func decodeEntries[T any](n *Node, name string, decode func(entry) (T, *ValidationError)) ([]T, *ValidationError) {
	es, err := entries(n, name)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, e := range es {
		v, err := decode(e)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// An entry is one registry item, from a list (named by its name field) or
// from a mapping keyed by name.
type entry struct {
	label   string // "roles[reviewer]", or "roles[2]" for an unnamed list item
	key     string // the mapping key, for map-style registries
	fromMap bool
	body    *Node
}

func entries(n *Node, registry string) ([]entry, *ValidationError) {
	if n == nil {
		return nil, nil
	}
	var out []entry
	switch n.Kind {
	case NullNode:
	case ListNode:
		for i, item := range n.Items {
			label := registry + "[" + strconv.Itoa(i) + "]"
			if item.Kind == MapNode {
				if j := indexOf(item.Keys, "name"); j >= 0 && isText(item.Values[j]) && item.Values[j].Text != "" {
					label = registry + "[" + item.Values[j].Text + "]"
				}
			}
			out = append(out, entry{label: label, body: item})
		}
	case MapNode:
		for i, k := range n.Keys {
			body := n.Values[i]
			if body.Kind == NullNode { // "reviewer:" with nothing under it
				body = &Node{Kind: MapNode}
			}
			out = append(out, entry{label: registry + "[" + k + "]", key: k, fromMap: true, body: body})
		}
	default:
		return nil, invalid(registry, RuleFieldType, "must be a list or a mapping keyed by name, got %v", n.Kind)
	}
	return out, nil
}

// name returns the entry's name, checking a map-style entry's optional name
// field against its key.
func (e entry) name(f map[string]*Node) (string, *ValidationError) {
	v, err := str(f["name"], e.label+".name")
	if err != nil {
		return "", err
	}
	if e.fromMap {
		if f["name"] != nil && f["name"].Kind != NullNode && v != e.key {
			return "", invalid(e.label, RuleNameMismatch, "name %q does not match its key %q", v, e.key)
		}
		return e.key, nil
	}
	if v == "" {
		return "", invalid(e.label, RuleRequiredField, "name is required")
	}
	return v, nil
}

func decodeRole(e entry) (rawRole, *ValidationError) {
	r := rawRole{entry: e.label}
	f, err := fields(e.body, e.label, roleKeys)
	if err != nil {
		return r, err
	}
	if r.name, err = e.name(f); err != nil {
		return r, err
	}
	if r.extends, err = str(f["extends"], e.label+".extends"); err != nil {
		return r, err
	}
	if r.add, err = capList(f["add"], e.label+".add"); err != nil {
		return r, err
	}
	if r.remove, err = capList(f["remove"], e.label+".remove"); err != nil {
		return r, err
	}
	if o := f["override"]; o != nil && o.Kind != NullNode {
		of, err := fields(o, e.label+".override", overrideKeys)
		if err != nil {
			return r, err
		}
		if ct := of["checkpoint_types"]; ct != nil && ct.Kind != NullNode {
			r.hasOverride = true
			r.overrideTypes, err = strList(ct, e.label+".override.checkpoint_types")
			if err != nil {
				return r, err
			}
			if r.overrideTypes == nil {
				r.overrideTypes = []string{}
			}
		}
	}
	return r, nil
}

func decodeEnvelope(e entry) (rawEnvelope, *ValidationError) {
	r := rawEnvelope{entry: e.label}
	f, err := fields(e.body, e.label, envelopeKeys)
	if err != nil {
		return r, err
	}
	if r.name, err = e.name(f); err != nil {
		return r, err
	}
	if _, err = str(f["description"], e.label+".description"); err != nil {
		return r, err
	}
	p := f["permissions"]
	if p == nil || p.Kind == NullNode {
		return r, nil
	}
	if p.Kind != ListNode {
		return r, invalid(e.label+".permissions", RuleFieldType, "must be a list, got %v", p.Kind)
	}
	for i, item := range p.Items {
		label := e.label + ".permissions[" + strconv.Itoa(i) + "]"
		pf, err := fields(item, label, permissionKeys)
		if err != nil {
			return r, err
		}
		row := rawPerm{entry: label}
		if row.sender, err = str(pf["sender_role"], label+".sender_role"); err != nil {
			return r, err
		}
		if row.receiver, err = str(pf["receiver_role"], label+".receiver_role"); err != nil {
			return r, err
		}
		r.perms = append(r.perms, row)
	}
	return r, nil
}

func decodeCheckpoint(e entry) (rawCheckpoint, *ValidationError) {
	r := rawCheckpoint{entry: e.label}
	f, err := fields(e.body, e.label, checkpointKeys)
	if err != nil {
		return r, err
	}
	if r.name, err = e.name(f); err != nil {
		return r, err
	}
	if _, err = str(f["description"], e.label+".description"); err != nil {
		return r, err
	}
	if r.permitted, err = strList(f["permitted_roles"], e.label+".permitted_roles"); err != nil {
		return r, err
	}
	if r.required, err = strList(f["required_fields"], e.label+".required_fields"); err != nil {
		return r, err
	}
	return r, nil
}

// fields checks that n is a mapping whose keys are all in allowed, each at
// most once, and returns it as a map. A missing key maps to nil.
func fields(n *Node, label string, allowed []string) (map[string]*Node, *ValidationError) {
	if n == nil || n.Kind != MapNode {
		kind := NullNode
		if n != nil {
			kind = n.Kind
		}
		return nil, invalid(label, RuleFieldType, "must be a mapping, got %v", kind)
	}
	f := make(map[string]*Node, len(n.Keys))
	for i, k := range n.Keys {
		if indexOf(allowed, k) < 0 {
			return nil, unknownField(label, k, allowed)
		}
		if _, dup := f[k]; dup {
			return nil, invalid(join(label, k), RuleDuplicateKey, "key %q appears more than once", k)
		}
		f[k] = n.Values[i]
	}
	return f, nil
}

func unknownField(label, key string, allowed []string) *ValidationError {
	if signalKeys[key] {
		return invalid(join(label, key), RuleSignalNotExtensible,
			"signal types are fixed by the protocol (%d types) and cannot be registered in a taxonomy", len(SignalTypes()))
	}
	return invalid(join(label, key), RuleUnknownField, "unknown field (allowed: %s)", strings.Join(allowed, ", "))
}

func join(label, key string) string {
	if label == "" {
		return key
	}
	return label + "." + key
}

// isText reports whether n is a scalar read as a string: a string or a number
// (YAML reads protocol_version: 0.1 as a number).
func isText(n *Node) bool { return n.Kind == StringNode || n.Kind == NumberNode }

// str decodes an optional string field; absent and null read as "".
func str(n *Node, label string) (string, *ValidationError) {
	if n == nil || n.Kind == NullNode {
		return "", nil
	}
	if !isText(n) {
		return "", invalid(label, RuleFieldType, "must be a string, got %v", n.Kind)
	}
	return n.Text, nil
}

// strList decodes an optional list of strings; absent and null read as nil.
func strList(n *Node, label string) ([]string, *ValidationError) {
	if n == nil || n.Kind == NullNode {
		return nil, nil
	}
	if n.Kind != ListNode {
		return nil, invalid(label, RuleFieldType, "must be a list of strings, got %v", n.Kind)
	}
	out := make([]string, 0, len(n.Items))
	for i, item := range n.Items {
		if !isText(item) {
			return nil, invalid(fmt.Sprintf("%s[%d]", label, i), RuleFieldType, "must be a string, got %v", item.Kind)
		}
		out = append(out, item.Text)
	}
	return out, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

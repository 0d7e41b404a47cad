package taxonomy

import (
	"encoding/hex"
	"maps"
	"slices"

	"github.com/zeebo/blake3"
)

// A Taxonomy is a loaded, validated taxonomy reduced to lookup tables. It is
// immutable and safe for concurrent use. Every lookup is O(1) except the
// ones that return slices, which copy.
type Taxonomy struct {
	id, version, checksum string

	roles           map[string]*role    // every role, base and derived
	roleNames       []string            // sorted keys of roles
	envelopeTypes   map[string]bool     // base and registered
	checkpointTypes map[string][]string // base and registered → required_fields
}

// FromNode validates a decoded taxonomy document and reduces it to lookup
// tables. data is the document as read (the taxonomy's checksum is its
// BLAKE3-256) and name names it in errors. Validation is all-or-nothing:
// on any failure it returns a *ValidationError and no Taxonomy. Files are
// read by package taxfile (Load, Parse), which decodes YAML or JSON and
// calls it.
func FromNode(name string, data []byte, root *Node) (*Taxonomy, error) {
	t, err := fromNode(name, data, root)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func fromNode(name string, data []byte, root *Node) (*Taxonomy, *ValidationError) {
	raw, err := decodeTaxonomy(root)
	if err == nil {
		err = validate(raw)
	}
	if err != nil {
		err.File = name
		return nil, err
	}
	sum := blake3.Sum256(data)
	return build(raw, "blake3:"+hex.EncodeToString(sum[:])), nil
}

// ID returns the taxonomy's id. A file that declares nothing gets BaseID.
func (t *Taxonomy) ID() string { return t.id }

// Version returns the taxonomy's own version. A file that declares nothing
// gets BaseVersion.
func (t *Taxonomy) Version() string { return t.version }

// Checksum returns "blake3:" followed by the 64 lowercase hex digits of the
// BLAKE3-256 hash of the document bytes exactly as loaded.
func (t *Taxonomy) Checksum() string { return t.checksum }

// HasRole reports whether role is a base role or a derived role registered
// in t.
func (t *Taxonomy) HasRole(role string) bool { return t.roles[role] != nil }

// BaseOf returns the base role of role: role itself for a base role, the
// role it extends for a derived role, and "" for an unknown role.
func (t *Taxonomy) BaseOf(role string) string {
	if r := t.roles[role]; r != nil {
		return r.base
	}
	return ""
}

// Roles returns every role of t, base and derived, sorted.
func (t *Taxonomy) Roles() []string { return slices.Clone(t.roleNames) }

// HasEnvelopeType reports whether name is a base envelope type or one
// registered in t.
func (t *Taxonomy) HasEnvelopeType(name string) bool { return t.envelopeTypes[name] }

// EnvelopeTypes returns every envelope type of t, base and registered, sorted.
func (t *Taxonomy) EnvelopeTypes() []string { return slices.Sorted(maps.Keys(t.envelopeTypes)) }

// HasCheckpointType reports whether name is a base checkpoint type or one
// registered in t.
func (t *Taxonomy) HasCheckpointType(name string) bool {
	_, ok := t.checkpointTypes[name]
	return ok
}

// CheckpointTypes returns every checkpoint type of t, base and registered, sorted.
func (t *Taxonomy) CheckpointTypes() []string { return slices.Sorted(maps.Keys(t.checkpointTypes)) }

// RequiredFields returns the payload fields a checkpoint of type cpType must
// carry beyond the protocol's own: nil for base and unknown types. The caller
// owns the returned slice.
func (t *Taxonomy) RequiredFields(cpType string) []string {
	return slices.Clone(t.checkpointTypes[cpType])
}

// CanCreateCheckpoint reports whether a workspace of role may create a
// checkpoint of type cpType. The coordinator may create none.
func (t *Taxonomy) CanCreateCheckpoint(role, cpType string) bool {
	r := t.roles[role]
	return r != nil && r.create[cpType] && t.HasCheckpointType(cpType)
}

// CanSend reports whether a workspace of senderRole may send an envelope of
// envType to a workspace of receiverRole, by the permission matrix: base
// rows, the rows of t's envelope types, and the send capabilities of t's
// derived roles. A row naming a base role as receiver also admits that base
// role's derived roles. Delegation rows are not part of this matrix.
func (t *Taxonomy) CanSend(senderRole, envType, receiverRole string) bool {
	s, r := t.roles[senderRole], t.roles[receiverRole]
	if s == nil || r == nil || !t.envelopeTypes[envType] {
		return false
	}
	return s.send[sendKey{envType, receiverRole}] || s.send[sendKey{envType, r.base}]
}

// CanEmit reports whether a workspace of role may emit signal s. A derived
// role emits exactly its base role's signals.
func (t *Taxonomy) CanEmit(role string, s SignalType) bool {
	r := t.roles[role]
	return r != nil && baseEmit[r.base][s]
}

// ReadScopes returns the read scopes (for example "assigned_workspace") that
// role's add list grants beyond its base role's access, after remove; nil for
// base and unknown roles. The caller owns the returned slice.
func (t *Taxonomy) ReadScopes(role string) []string {
	if r := t.roles[role]; r != nil {
		return slices.Clone(r.reads)
	}
	return nil
}

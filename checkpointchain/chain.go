package checkpointchain

import (
	"encoding/json"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/taxonomy"
)

// Chain is the register of one workspace's checkpoints: its head, length and
// most recent final checkpoint.
type Chain struct {
	Head      string `json:"head,omitempty"`       // id of the last checkpoint, "" when empty
	Count     uint64 `json:"count"`                // checkpoints in the chain
	LastFinal string `json:"last_final,omitempty"` // id of the most recent final checkpoint
}

// Author is what Build needs to know of the workspace creating a checkpoint.
type Author struct {
	Workspace string
	Role      string
	Active    bool   // the workspace is in state active
	State     string // its state, for the rejection message
}

// Object is a checkpoint's canonical encoding and its content address,
// computed together by Build, so that storing it (chainstore.Put) needs no
// second hash: one cannot be made with bytes that are not its address's.
type Object struct {
	bytes []byte
	ref   casstore.Ref
}

// Bytes returns the canonical encoding; the caller must not modify it.
func (o Object) Bytes() []byte { return o.bytes }

// Ref returns the content address of Bytes.
func (o Object) Ref() casstore.Ref { return o.ref }

// Build checks req against the rules of WACP Checkpoint §4–§5 and returns
// the new checkpoint (sealed: Digest set) with its canonical encoding. It is
// pure. The checks run in this order, and the first failure is returned as a
// *Rejection:
//
//  1. workspace_not_active: the workspace is not active;
//  2. invalid_type: the type is not a base type nor registered in the taxonomy;
//  3. permission_denied: the role may not create this type;
//  4. invalid_structure: a field the type requires is missing or empty;
//  5. invalid_parent: parent is not the current chain head (null for the first).
//
// Shape errors (malformed JSON, missing intent, bad enums) are found earlier,
// by DecodeRequest.
func Build(req Request, a Author, chain Chain, tax *taxonomy.Taxonomy, id, timestamp string) (Checkpoint, Object, error) {
	if !a.Active {
		return Checkpoint{}, Object{}, reject(ReasonWorkspaceNotActive, "workspace %s is %s, not active", a.Workspace, a.State)
	}
	if !tax.HasCheckpointType(req.Type) {
		return Checkpoint{}, Object{}, reject(ReasonInvalidType, "checkpoint type %q is not registered in taxonomy %s", req.Type, tax.ID())
	}
	if !tax.CanCreateCheckpoint(a.Role, req.Type) {
		return Checkpoint{}, Object{}, reject(ReasonPermissionDenied, "role %s may not create %s checkpoints", a.Role, req.Type)
	}
	for _, f := range tax.RequiredFields(req.Type) {
		if !hasField(req.Payload, f) {
			return Checkpoint{}, Object{}, reject(ReasonInvalidStructure, "checkpoint type %s requires payload.%s", req.Type, f)
		}
	}
	if got := deref(req.Parent); got != chain.Head {
		if chain.Head == "" {
			return Checkpoint{}, Object{}, reject(ReasonInvalidParent, "parent must be null: the chain is empty, got %s", got)
		}
		return Checkpoint{}, Object{}, reject(ReasonInvalidParent, "parent %q is not the chain head %s", got, chain.Head)
	}
	c := Checkpoint{
		ID: id, Workspace: a.Workspace, Type: req.Type, Payload: req.Payload, Intent: req.Intent,
		Parent: req.Parent, Status: req.Status, Confidence: req.Confidence,
		ResourceUsage: req.ResourceUsage, Timestamp: timestamp,
	}
	b, err := Encode(c)
	if err != nil {
		return Checkpoint{}, Object{}, reject(ReasonInvalidStructure, "%v", err)
	}
	// Return the record as Get will read it back. Extra payload values may
	// change form (RFC 8785 reformats them and rounds numbers beyond a
	// double's precision), so with extras decode the canonical bytes. The
	// base fields round-trip unchanged (the request is valid UTF-8, tokens
	// are at most 2^53-1, floats print shortest round-trip) but for nil lists,
	// which read back empty; skipping the decode saves a second
	// canonicalization on the commit path.
	if len(c.Payload.Extra) > 0 {
		if c, err = Decode(b); err != nil {
			return Checkpoint{}, Object{}, reject(ReasonInvalidStructure, "%v", err)
		}
		return c, Object{b, c.Digest}, nil
	}
	c.Payload.FilesChanged, c.Payload.Artifacts = orEmpty(c.Payload.FilesChanged), orEmpty(c.Payload.Artifacts)
	c.Digest = casstore.RefOf(b)
	return c, Object{b, c.Digest}, nil
}

// Append returns the chain after c is appended.
func (ch Chain) Append(c Checkpoint) Chain {
	ch.Head = c.ID
	ch.Count++
	if c.Status == StatusFinal {
		ch.LastFinal = c.ID
	}
	return ch
}

func hasField(p Payload, f string) bool {
	switch f {
	case "content":
		return p.Content != ""
	case "files_changed":
		return len(p.FilesChanged) > 0
	case "artifacts":
		return len(p.Artifacts) > 0
	}
	// An extra field is empty when it is null, "", [] or {}.
	var v any
	if raw, ok := p.Extra[f]; !ok || json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

package checkpointchain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wacpd/wacpd/casstore"
)

// Statuses and confidences (WACP Checkpoint §3).
const (
	StatusProvisional = "provisional"
	StatusFinal       = "final"

	ConfidenceHigh   = "high"
	ConfidenceMedium = "medium"
	ConfidenceLow    = "low"
)

// Checkpoint is a checkpoint record: every field of WACP Checkpoint §3 plus
// Digest, the BLAKE3 address of its canonical encoding (Encode), which is
// the checkpoint's integrity proof.
type Checkpoint struct {
	ID            string         `json:"id"`
	Workspace     string         `json:"workspace"`
	Type          string         `json:"type"`
	Payload       Payload        `json:"payload"`
	Intent        string         `json:"intent"`
	Parent        *string        `json:"parent"`
	Status        string         `json:"status"`
	Confidence    string         `json:"confidence"`
	ResourceUsage *ResourceUsage `json:"resource_usage"`
	Timestamp     string         `json:"timestamp"`
	Digest        casstore.Ref   `json:"digest"`
}

// ParentID returns the parent's id, "" for the first checkpoint.
func (c *Checkpoint) ParentID() string {
	if c.Parent == nil {
		return ""
	}
	return *c.Parent
}

// Payload is a checkpoint's work product. Extra holds fields beyond the base
// three (taxonomy checkpoint types may require some, see
// taxonomy.RequiredFields); they are kept as JSON values.
type Payload struct {
	FilesChanged []string
	Content      string
	Artifacts    []string
	Extra        map[string]json.RawMessage
}

var baseFields = map[string]bool{"files_changed": true, "content": true, "artifacts": true}

// MarshalJSON writes the base fields and the extra fields in one object;
// nil lists are written as [].
func (p Payload) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, 3+len(p.Extra))
	for k, v := range p.Extra {
		m[k] = v
	}
	m["files_changed"] = orEmpty(p.FilesChanged)
	m["content"] = p.Content
	m["artifacts"] = orEmpty(p.Artifacts)
	return json.Marshal(m)
}

// MarshalJSONTo is MarshalJSON for go-json-experiment's encoders (the
// client library's codec): the same members in the same order (sorted, as
// encoding/json sorts a map's keys), written without building a map and
// marshaling it a second time. FuzzPayloadEncoders holds the two to the
// same bytes.
func (p Payload) MarshalJSONTo(enc *jsontext.Encoder) error {
	names := make([]string, 0, 3+len(p.Extra))
	names = append(names, "artifacts", "content", "files_changed")
	for k := range p.Extra {
		if !baseFields[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	for _, k := range names {
		if err := enc.WriteToken(jsontext.String(k)); err != nil {
			return err
		}
		var err error
		switch k {
		case "files_changed":
			err = writeStrings(enc, p.FilesChanged)
		case "content":
			err = enc.WriteToken(jsontext.String(p.Content))
		case "artifacts":
			err = writeStrings(enc, p.Artifacts)
		default:
			v := p.Extra[k]
			if v == nil {
				v = json.RawMessage("null") // as encoding/json writes a nil RawMessage
			}
			err = enc.WriteValue(jsontext.Value(v))
		}
		if err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndObject)
}

// writeStrings writes s as an array of strings, [] when nil.
func writeStrings(enc *jsontext.Encoder, s []string) error {
	if err := enc.WriteToken(jsontext.BeginArray); err != nil {
		return err
	}
	for _, v := range s {
		if err := enc.WriteToken(jsontext.String(v)); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndArray)
}

// UnmarshalJSON reads a payload object. The base fields must have their
// types; any other field is kept in Extra.
func (p *Payload) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		return fmt.Errorf("payload must be an object")
	}
	*p = Payload{}
	for k, v := range raw {
		if err := p.setMember(k, v); err != nil {
			return err
		}
	}
	return nil
}

// UnmarshalJSONFrom is UnmarshalJSON for the strict decoder (strictjson's,
// go-json-experiment's), which has read and checked the payload already: it
// takes the members from the decoder in that one pass, the content from its
// string token, instead of parsing a copy of the payload twice more
// (about 15 µs of a 1 KiB payload's 20). Whatever is not an object goes to
// UnmarshalJSON, for the same error. FuzzPayloadDecoders holds the two to
// the same results.
func (p *Payload) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '{' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		return p.UnmarshalJSON(v)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*p = Payload{}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		k := name.String()
		if k == "content" && dec.PeekKind() == '"' {
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			p.Content = tok.String()
			continue
		}
		v, err := dec.ReadValue() // valid until the next read: setMember copies what it keeps
		if err != nil {
			return err
		}
		if err := p.setMember(k, json.RawMessage(v)); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// setMember decodes the payload's member k, of value v.
func (p *Payload) setMember(k string, v json.RawMessage) error {
	var err error
	switch k {
	case "files_changed":
		err = strictUnmarshal(v, &p.FilesChanged)
	case "content":
		err = unmarshalString(v, &p.Content)
	case "artifacts":
		err = strictUnmarshal(v, &p.Artifacts)
	default:
		if p.Extra == nil {
			p.Extra = map[string]json.RawMessage{}
		}
		p.Extra[k] = bytes.Clone(v)
	}
	if err != nil {
		return fmt.Errorf("payload.%s: %w", k, err)
	}
	return nil
}

// ExtraFields returns the names of the extra fields, sorted.
func (p Payload) ExtraFields() []string {
	out := make([]string, 0, len(p.Extra))
	for k := range p.Extra {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ResourceUsage is agent-reported consumption since the previous checkpoint
// (a delta, WACP Checkpoint §6). Absent fields were not reported.
type ResourceUsage struct {
	TokensConsumed *int64   `json:"tokens_consumed,omitempty"`
	WallTime       *string  `json:"wall_time,omitempty"`
	Cost           *float64 `json:"cost,omitempty"`
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// unmarshalString is strictUnmarshal into a string. v is a value of an
// object already parsed, so when it is a string without escapes in valid
// UTF-8 its content is the bytes between the quotes, and a second parse (of
// what is usually the largest field of a checkpoint) is skipped; anything
// else goes through strictUnmarshal.
func unmarshalString(v json.RawMessage, s *string) error {
	if n := len(v); n >= 2 && v[0] == '"' && v[n-1] == '"' {
		if in := v[1 : n-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			*s = string(in)
			return nil
		}
	}
	return strictUnmarshal(v, s)
}

// strictUnmarshal decodes b into v, refusing a JSON null (which encoding/json
// would silently accept as "no change"). An empty array into a list of
// strings, what every payload without files or artifacts carries, is set
// without the decoder, to what it would set.
func strictUnmarshal(b json.RawMessage, v any) error {
	if s, ok := v.(*[]string); ok && string(b) == "[]" {
		*s = []string{}
		return nil
	}
	if string(bytes.TrimSpace(b)) == "null" {
		return fmt.Errorf("must not be null")
	}
	return json.Unmarshal(b, v)
}

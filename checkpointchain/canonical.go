package checkpointchain

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/wacpd/wacpd/internal/strictjson"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/internal/canon"
)

// record is the canonical object: the checkpoint without its digest.
type record struct {
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
}

// Encode returns the canonical encoding of c: the RFC 8785 (JCS) form of the
// JSON object of every checkpoint field except digest, with resource_usage
// and parent written as null when absent and empty lists as []. The BLAKE3
// address of these bytes is c's digest. The form is frozen by the golden
// files in testdata/.
func Encode(c Checkpoint) ([]byte, error) {
	if b, ok := appendRecord(make([]byte, 0, 512+len(c.Payload.Content)), c); ok {
		return b, nil
	}
	return encodeRef(c)
}

// encodeRef is Encode the reference way: encoding/json, then jcs.Transform.
func encodeRef(c Checkpoint) ([]byte, error) {
	b, err := json.Marshal(record{
		ID: c.ID, Workspace: c.Workspace, Type: c.Type, Payload: c.Payload, Intent: c.Intent,
		Parent: c.Parent, Status: c.Status, Confidence: c.Confidence,
		ResourceUsage: c.ResourceUsage, Timestamp: c.Timestamp,
	})
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint %s: %w", c.ID, err)
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("canonicalize checkpoint %s: %w", c.ID, err)
	}
	return out, nil
}

// Seal sets c.Digest from c's canonical encoding and returns the encoding.
func Seal(c *Checkpoint) ([]byte, error) {
	b, err := Encode(*c)
	if err != nil {
		return nil, err
	}
	c.Digest = casstore.RefOf(b)
	return b, nil
}

// Decode parses a canonical encoding back into a checkpoint and sets its
// Digest. It accepts only bytes that Encode would produce: anything else
// (other field order, whitespace, unknown fields) is an error wrapping
// ErrNotCanonical, so a stored object decodes to exactly one record.
func Decode(b []byte) (Checkpoint, error) {
	var r record
	if err := strictjson.Decode(b, &r); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	c := Checkpoint{
		ID: r.ID, Workspace: r.Workspace, Type: r.Type, Payload: r.Payload, Intent: r.Intent,
		Parent: r.Parent, Status: r.Status, Confidence: r.Confidence,
		ResourceUsage: r.ResourceUsage, Timestamp: r.Timestamp,
	}
	again, err := Encode(c)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	if !bytes.Equal(again, b) {
		return Checkpoint{}, fmt.Errorf("%w: bytes are not the canonical form", ErrNotCanonical)
	}
	c.Digest = casstore.RefOf(b)
	return c, nil
}

// Identity is what names a stored checkpoint: its id, workspace, type,
// status and parent ("" for none).
type Identity struct {
	ID, Workspace, Type, Status, Parent string
}

// DecodeIdentity reads the identity of the checkpoint object b without
// decoding the rest of it, for checks that hold b's digest already (so b
// is the object that was stored) and ask only which checkpoint it is.
// Decode reads and checks the whole object.
func DecodeIdentity(b []byte) (Identity, error) {
	if id, ok := identityFields(b); ok {
		return id, nil
	}
	return decodeIdentity(b)
}

// identityFields reads the identity from b in the form Encode writes it
// (strictjson.ScanObject), and reports false for any other form, which
// DecodeIdentity then decodes in full (FuzzDecodeIdentity holds the two
// to the same result). It saves most of the full decoder's time, which
// was a tenth of a full check's CPU.
func identityFields(b []byte) (id Identity, ok bool) {
	ok = true
	var vals [5][]byte // id, workspace, type, status, parent: slices of b
	if !strictjson.ScanObject(b, func(name, value []byte, kind strictjson.Kind) {
		var to *[]byte
		switch string(name) {
		case "id":
			to = &vals[0]
		case "workspace":
			to = &vals[1]
		case "type":
			to = &vals[2]
		case "status":
			to = &vals[3]
		case "parent":
			if kind == strictjson.KindNull {
				return
			}
			to = &vals[4]
		default:
			return
		}
		if kind != strictjson.KindString {
			ok = false
			return
		}
		*to = value
	}) || !ok {
		return Identity{}, false
	}
	strictjson.Strings([]*string{&id.ID, &id.Workspace, &id.Type, &id.Status, &id.Parent}, vals[:])
	return id, true
}

// decodeIdentity is DecodeIdentity with the full decoder.
func decodeIdentity(b []byte) (Identity, error) {
	var r struct {
		ID        string  `json:"id"`
		Workspace string  `json:"workspace"`
		Type      string  `json:"type"`
		Status    string  `json:"status"`
		Parent    *string `json:"parent"`
	}
	if err := strictjson.DecodeFields(b, &r); err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	id := Identity{ID: r.ID, Workspace: r.Workspace, Type: r.Type, Status: r.Status}
	if r.Parent != nil {
		id.Parent = *r.Parent
	}
	return id, nil
}

// appendRecord writes the canonical encoding directly, for checkpoints
// without extra payload fields (whose values would need canonicalizing) and
// with token counts a double holds exactly; it reports false for others.
// Keys are in RFC 8785 order. TestEncodeMatchesReference and FuzzEncode
// check it against encodeRef; it saves a commit the encoding/json and
// jcs.Transform passes over the whole object (docs/performance.md).
func appendRecord(b []byte, c Checkpoint) ([]byte, bool) {
	if len(c.Payload.Extra) > 0 {
		return b, false
	}
	str := func(key, v string) {
		b = append(b, key...)
		b = canon.AppendString(b, v)
	}
	str(`{"confidence":`, c.Confidence)
	str(`,"id":`, c.ID)
	str(`,"intent":`, c.Intent)
	b = append(b, `,"parent":`...)
	if c.Parent == nil {
		b = append(b, "null"...)
	} else {
		b = canon.AppendString(b, *c.Parent)
	}
	b = append(b, `,"payload":{"artifacts":`...)
	b = appendList(b, c.Payload.Artifacts)
	str(`,"content":`, c.Payload.Content)
	b = append(b, `,"files_changed":`...)
	b = appendList(b, c.Payload.FilesChanged)
	b = append(b, `},"resource_usage":`...)
	if u := c.ResourceUsage; u == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		sep := ""
		if u.Cost != nil {
			var ok bool
			b = append(b, `"cost":`...)
			if b, ok = canon.AppendFloat(b, *u.Cost); !ok {
				return b, false
			}
			sep = ","
		}
		if u.TokensConsumed != nil {
			var ok bool
			b = append(b, sep+`"tokens_consumed":`...)
			if b, ok = canon.AppendInt(b, *u.TokensConsumed); !ok {
				return b, false
			}
			sep = ","
		}
		if u.WallTime != nil {
			str(sep+`"wall_time":`, *u.WallTime)
		}
		b = append(b, '}')
	}
	str(`,"status":`, c.Status)
	str(`,"timestamp":`, c.Timestamp)
	str(`,"type":`, c.Type)
	str(`,"workspace":`, c.Workspace)
	return append(b, '}'), true
}

// appendList writes a list of strings; nil is written as [].
func appendList(b []byte, l []string) []byte {
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = canon.AppendString(b, s)
	}
	return append(b, ']')
}

// Wire returns c as the daemon sends it in a reply: its canonical encoding
// (Encode) with its digest added as the last member. A JSON decoder reads
// from it the values it reads from json.Marshal(c) (the same members, in
// RFC 8785's forms: sorted but for digest, strings escaped only where JSON
// needs it, numbers in their shortest form), without the reflection and
// the map json.Marshal takes to write the payload (about 8 µs of a 1 KiB
// checkpoint's reply). checkBuilt holds the two to the same values.
func Wire(c Checkpoint) ([]byte, error) {
	b, err := Encode(c)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"digest":"`...)
	b, err = c.Digest.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, `"}`...), nil
}

package checkpointchain

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/casstore"
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
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	if dec.More() {
		return Checkpoint{}, fmt.Errorf("%w: trailing data", ErrNotCanonical)
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

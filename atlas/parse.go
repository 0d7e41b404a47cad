package atlas

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/internal/strictjson"
)

// Parse decodes one manifest document (JSON) strictly — unknown fields,
// duplicate fields and wrong types are refused — and validates it; file
// names it in errors.
func Parse(file string, data []byte) (*Manifest, error) {
	var m Manifest
	if err := strictjson.Decode(data, &m); err != nil {
		return nil, &ValidationError{File: file, Rule: RuleStructure, Err: err}
	}
	if err := Validate(file, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func jsonString(raw json.RawMessage, s *string) error {
	if err := json.Unmarshal(raw, s); err != nil {
		return fmt.Errorf("not a string")
	}
	return nil
}

// Checksum returns the manifest's checksum, "sha256:" and the hex SHA-256
// of its canonical JSON (RFC 8785): the same manifest, however it was
// spread over files or formatted, has the same checksum.
func Checksum(m *Manifest) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	c, err := jcs.Transform(b)
	if err != nil {
		return "", err
	}
	return ContentHash(c), nil
}

// ContentHash is "sha256:" and the hex SHA-256 of content: the form of
// every content hash of atlases, CARP and steward checkpoints.
func ContentHash(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Ref is how CARP names an atlas in atlas_ref: its id and version.
func (m *Manifest) Ref() string { return m.AtlasID + "@" + m.Version }

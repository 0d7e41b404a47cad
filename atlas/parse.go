package atlas

import (
	"encoding/json"
	"fmt"

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

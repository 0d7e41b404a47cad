// Package strictjson is the one strict JSON decoder of requests (and of
// the daemon's own stored records that must decode exactly).
//
// Decode reads exactly one JSON object into a Go value and refuses, as an
// error wrapping ErrInvalid:
//
//   - anything but one JSON object: another kind of value, or trailing data;
//   - invalid UTF-8;
//   - a member whose name matches no field exactly (case included): Go's
//     encoding/json matches names case-insensitively, so {"TYPE":…} would
//     fill Type;
//   - a name that appears twice in one object, at any depth: encoding/json
//     keeps the last, so {"status":"provisional","status":"final"} would be
//     final;
//   - a value of the wrong type.
//
// It is github.com/go-json-experiment/json (the encoding/json/v2 design)
// with unknown members refused; its defaults already match names exactly
// and refuse duplicates and invalid UTF-8. Types with an UnmarshalJSON
// method are given the raw member, already checked for duplicates.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
)

// ErrInvalid is wrapped by every error Decode returns.
var ErrInvalid = errors.New("strictjson: invalid request")

// Decode reads data, one JSON object, into v (a pointer) strictly; see the
// package documentation.
func Decode(data []byte, v any) error {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrInvalid)
	}
	if err := json.Unmarshal(data, v, json.RejectUnknownMembers(true)); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, message(err))
	}
	return nil
}

// message shortens the decoder's error to what a client needs: the
// problem and where it is.
func message(err error) string {
	var se *json.SemanticError
	if errors.As(err, &se) && se.Err != nil {
		where := string(se.JSONPointer)
		if where == "" {
			return se.Err.Error()
		}
		return fmt.Sprintf("%s at %s", se.Err, where)
	}
	return err.Error()
}

// DecodeFields reads data, one JSON object, into v (a pointer) and ignores
// members v has no field for: for reading a few fields of a stored record
// that its owner wrote and checks in full elsewhere. Names still match
// exactly, a duplicated name and invalid UTF-8 are still refused.
func DecodeFields(data []byte, v any) error {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrInvalid)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, message(err))
	}
	return nil
}

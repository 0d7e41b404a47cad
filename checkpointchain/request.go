package checkpointchain

import (
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/taxonomy"
)

// MaxSafeInteger is the largest integer a canonical (RFC 8785) number holds
// exactly; larger token counts are refused.
const MaxSafeInteger = 1<<53 - 1

// Request is the body of a checkpoint call (wire contract §3.2).
type Request struct {
	Type          string         `json:"type"`
	Payload       Payload        `json:"payload"`
	Intent        string         `json:"intent"`
	Parent        *string        `json:"parent"`
	Status        string         `json:"status"`
	Confidence    string         `json:"confidence"`
	ResourceUsage *ResourceUsage `json:"resource_usage,omitempty"`
}

// DecodeRequest decodes a checkpoint request. Malformed JSON, invalid UTF-8,
// nesting deeper than taxonomy.MaxNesting, unknown fields, wrong types, a missing or empty
// type or intent, and status or confidence outside their enums are returned
// as a *Rejection with reason invalid_structure. It does not look at the
// taxonomy, the workspace or the chain: see Build.
func DecodeRequest(data []byte) (Request, error) {
	r, ok := requestFields(data)
	if !ok {
		var err error
		if r, err = decodeRequestStrict(data); err != nil {
			return Request{}, err
		}
	}
	if err := r.check(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// decodeRequestStrict is DecodeRequest's decoding of any form, with the
// strict decoder, before the checks of the values.
func decodeRequestStrict(data []byte) (Request, error) {
	bad := func(format string, args ...any) (Request, error) {
		return Request{}, reject(ReasonInvalidStructure, format, args...)
	}
	if !utf8.Valid(data) {
		return bad("request is not valid UTF-8")
	}
	if taxonomy.Nesting(data) > taxonomy.MaxNesting {
		return bad("request nests objects and arrays deeper than %d levels", taxonomy.MaxNesting)
	}
	var r Request
	if err := strictjson.Decode(data, &r); err != nil {
		return bad("malformed request: %v", err)
	}
	return r, nil
}

func (r Request) check() error {
	bad := func(format string, args ...any) error { return reject(ReasonInvalidStructure, format, args...) }
	switch {
	case r.Type == "":
		return bad("type is required")
	case strings.TrimSpace(r.Intent) == "":
		return bad("intent is required and must not be empty")
	case r.Parent != nil && *r.Parent == "":
		return bad("parent must be null or a checkpoint id")
	}
	switch r.Status {
	case StatusProvisional, StatusFinal:
	default:
		return bad("status %q is not provisional or final", r.Status)
	}
	switch r.Confidence {
	case ConfidenceHigh, ConfidenceMedium, ConfidenceLow:
	default:
		return bad("confidence %q is not high, medium or low", r.Confidence)
	}
	for _, f := range r.Payload.FilesChanged {
		if f == "" {
			return bad("payload.files_changed has an empty path")
		}
	}
	if u := r.ResourceUsage; u != nil {
		if u.TokensConsumed != nil && (*u.TokensConsumed < 0 || *u.TokensConsumed > MaxSafeInteger) {
			return bad("resource_usage.tokens_consumed must be between 0 and 2^53-1")
		}
		if u.WallTime != nil {
			if d, err := time.ParseDuration(*u.WallTime); err != nil || d < 0 {
				return bad("resource_usage.wall_time %q is not a non-negative duration", *u.WallTime)
			}
		}
		if u.Cost != nil && (*u.Cost < 0 || math.IsInf(*u.Cost, 0) || math.IsNaN(*u.Cost)) {
			return bad("resource_usage.cost must be a non-negative number")
		}
	}
	return nil
}

// PeekType returns the type field of a request body if it has a string one,
// for recording in checkpoint_rejected when the body is otherwise malformed.
func PeekType(data []byte) string {
	var v struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(data, &v) != nil || !utf8.ValidString(v.Type) || len(v.Type) > 256 {
		return ""
	}
	return v.Type
}

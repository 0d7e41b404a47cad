// Package trace is TRACE/1.0, the tamper-evident log of governed actions
// (CARP's telemetry, issue 15): events, the SHA-256 hash chain of one
// session's events, and its verification. It is a pure core: no storage,
// no transport; the engine stores the events with the effects they
// describe, and the auditor verifies an exported session offline.
//
// # The hash of an event
//
// event_hash is the lowercase hex SHA-256 of the concatenation, without
// separators, of trace_version, event_id, trace_id, span_id,
// parent_span_id (or "" when there is none), session_id, the decimal
// sequence, the timestamp as serialized (RFC 3339, UTC, microseconds,
// "Z"), event_type, the canonical JSON of the payload (RFC 8785: sorted
// keys, no insignificant whitespace) and previous_event_hash. A session's
// first event has sequence 0 and previous_event_hash "0"×64 (the
// genesis); every later one the sequence after its predecessor's and that
// event's hash.
package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
)

// Version is the trace_version of every event.
const Version = "1.0"

// Genesis is the previous_event_hash of a session's first event.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// TimeLayout is the form of an event's timestamp: RFC 3339 in UTC with
// microseconds.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Event is one TRACE event, as exported (one JSON object per line).
type Event struct {
	TraceVersion      string          `json:"trace_version"`
	EventID           string          `json:"event_id"`
	TraceID           string          `json:"trace_id"`
	SpanID            string          `json:"span_id"`
	ParentSpanID      *string         `json:"parent_span_id"`
	SessionID         string          `json:"session_id"`
	Sequence          uint64          `json:"sequence"`
	Timestamp         string          `json:"timestamp"`
	EventType         string          `json:"event_type"`
	Payload           json.RawMessage `json:"payload"`
	PreviousEventHash string          `json:"previous_event_hash"`
	EventHash         string          `json:"event_hash"`
}

// FormatTime returns t in the form of an event's timestamp.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ErrPayload is returned (wrapped) for a payload that is not a JSON object.
var ErrPayload = errors.New("trace: payload is not a JSON object")

// Hash returns e's event_hash, computed from its other fields (EventHash
// itself is not read). The payload must be a JSON object.
func Hash(e Event) (string, error) {
	canon, err := canonicalPayload(e.Payload)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	parent := ""
	if e.ParentSpanID != nil {
		parent = *e.ParentSpanID
	}
	for _, s := range []string{e.TraceVersion, e.EventID, e.TraceID, e.SpanID, parent, e.SessionID,
		strconv.FormatUint(e.Sequence, 10), e.Timestamp, e.EventType} {
		h.Write([]byte(s))
	}
	h.Write(canon)
	h.Write([]byte(e.PreviousEventHash))
	return hex.EncodeToString(h.Sum(nil)), nil
}

func canonicalPayload(p json.RawMessage) ([]byte, error) {
	if !strings.HasPrefix(strings.TrimLeft(string(p), " \t\r\n"), "{") {
		return nil, ErrPayload
	}
	c, err := jcs.Transform(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPayload, err)
	}
	return c, nil
}

// Seal sets e's trace_version, sequence, previous_event_hash and
// event_hash to follow prev, the session's previous event (nil for its
// first), and returns it.
func Seal(e Event, prev *Event) (Event, error) {
	e.TraceVersion = Version
	e.Sequence, e.PreviousEventHash = 0, Genesis
	if prev != nil {
		e.Sequence, e.PreviousEventHash = prev.Sequence+1, prev.EventHash
	}
	h, err := Hash(e)
	if err != nil {
		return Event{}, err
	}
	e.EventHash = h
	return e, nil
}

func marshalLine(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

package trail

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/casstore"
)

// Algorithm is the hash algorithm of every chain, recorded in trail entry #1.
const Algorithm = "blake3-256"

// Reserved actors (WACP Trail §3, User spec).
const (
	ActorProtocol = "protocol"
	ActorSystem   = "system"
)

// Entry is a trail entry in the WACP Trail schema. In the global view (what
// ReadGlobal returns) PrevHash is the previous global entry's hash and
// Integrity.LocalHash is the entry's hash in its workspace's chain; in the
// local view (ReadLocal) PrevHash and Integrity.EntryHash are the workspace
// chain's and LocalHash is empty.
type Entry struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Workspace string          `json:"-"` // "" = system-level, encoded as null
	Actor     string          `json:"actor"`
	EventType EventType       `json:"event_type"`
	Body      json.RawMessage `json:"body"` // canonical JSON object
	PrevHash  string          `json:"-"`    // "" = start of scope, encoded as null
	Integrity Integrity       `json:"integrity"`
}

// Integrity is an entry's integrity block (WACP Security §5).
type Integrity struct {
	EntryHash string `json:"entry_hash,omitempty"`
	Algorithm string `json:"algorithm"`
	LocalHash string `json:"local_hash,omitempty"`
	Signature string `json:"signature,omitempty"`
	Signer    string `json:"signer,omitempty"`
}

type entryJSON struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Workspace *string         `json:"workspace"`
	Actor     string          `json:"actor"`
	EventType EventType       `json:"event_type"`
	Body      json.RawMessage `json:"body"`
	PrevHash  *string         `json:"prev_hash"`
	Integrity Integrity       `json:"integrity"`
}

// MarshalJSON encodes e with null workspace and prev_hash when they are
// empty. It writes strings as RFC 8785 does and the body as it is.
// (encoding/json, when e is inside a larger value, escapes <, > and & in
// the result again; UnmarshalJSON undoes that.)
func (e Entry) MarshalJSON() ([]byte, error) {
	if len(e.Body) > 0 && !json.Valid(e.Body) {
		return nil, fmt.Errorf("entry %s: body is not JSON", e.ID)
	}
	return AppendJSON(make([]byte, 0, 320+len(e.Body)), e), nil
}

// AppendJSON writes e as MarshalJSON does; the stored form wraps it.
func AppendJSON(b []byte, e Entry) []byte {
	b = append(b, `{"id":`...)
	b = appendJCSString(b, e.ID)
	b = append(b, `,"timestamp":`...)
	b = appendJCSString(b, e.Timestamp)
	b = append(b, `,"workspace":`...)
	b = appendNullable(b, e.Workspace)
	b = append(b, `,"actor":`...)
	b = appendJCSString(b, e.Actor)
	b = append(b, `,"event_type":`...)
	b = appendJCSString(b, string(e.EventType))
	b = append(b, `,"body":`...)
	if len(e.Body) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Body...)
	}
	b = append(b, `,"prev_hash":`...)
	b = appendNullable(b, e.PrevHash)
	b = appendIntegrity(b, e.Integrity)
	return append(b, '}')
}

// UnmarshalJSON decodes an entry written by MarshalJSON. A body whose
// strings carry escapes RFC 8785 does not use (encoding/json writes <, > and
// & as \u003c, \u003e, \u0026) is brought back to canonical form, so that
// its hash can be checked.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Entry{ID: j.ID, Timestamp: j.Timestamp, Actor: j.Actor, EventType: j.EventType,
		Body: j.Body, Integrity: j.Integrity}
	if bytes.IndexByte(e.Body, '\\') >= 0 {
		if c, err := jcs.Transform(e.Body); err == nil {
			e.Body = c
		}
	}
	if j.Workspace != nil {
		e.Workspace = *j.Workspace
	}
	if j.PrevHash != nil {
		e.PrevHash = *j.PrevHash
	}
	return nil
}

// Canonical returns the RFC 8785 (JCS) form of v's JSON encoding: sorted keys,
// no whitespace, ES6 number formatting. Every hash in wacpd is over this form.
func Canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// Hash returns the entry hash of e as it stands: BLAKE3-256 over the canonical
// form of e without integrity.entry_hash, integrity.signature and
// integrity.signer. It prints as "blake3:<hex>".
func Hash(e Entry) (string, error) {
	e.Integrity.EntryHash, e.Integrity.Signature, e.Integrity.Signer = "", "", ""
	b, err := Canonical(e)
	if err != nil {
		return "", fmt.Errorf("canonicalize entry %s: %w", e.ID, err)
	}
	return hashBytes(b), nil
}

func hashBytes(b []byte) string {
	return casstore.RefOf(b).String()
}

func appendIntegrity(b []byte, in Integrity) []byte {
	b = append(b, `,"integrity":{`...)
	if in.EntryHash != "" {
		b = append(b, `"entry_hash":`...)
		b = appendJCSString(b, in.EntryHash)
		b = append(b, ',')
	}
	b = append(b, `"algorithm":`...)
	b = appendJCSString(b, in.Algorithm)
	for _, f := range []struct{ name, v string }{
		{"local_hash", in.LocalHash}, {"signature", in.Signature}, {"signer", in.Signer},
	} {
		if f.v != "" {
			b = append(b, `,"`...)
			b = append(b, f.name...)
			b = append(b, `":`...)
			b = appendJCSString(b, f.v)
		}
	}
	return append(b, '}')
}

// LocalView returns the local view of entry e, given in its global view,
// whose local chain's previous hash is localPrev: prev_hash is localPrev,
// entry_hash is the global view's integrity.local_hash, and it has no
// local_hash of its own.
func LocalView(e Entry, localPrev string) Entry {
	local := e
	local.PrevHash = localPrev
	local.Integrity.EntryHash, local.Integrity.LocalHash = e.Integrity.LocalHash, ""
	return local
}

package trail

import "github.com/wacpd/wacpd/internal/canon"

// HashCanonical returns Hash(e) for an entry whose Body is already in canonical
// form, which Append guarantees. It writes the RFC 8785 form of the entry
// directly instead of going through encoding/json and jcs.Transform, which
// re-parses what json.Marshal just produced: appends computed two such hashes
// per entry, and they were a large part of a commit's CPU time
// (docs/performance.md). TestFastHashMatchesHash and FuzzFastHash check it
// against Hash, the reference, on every kind of string.
func HashCanonical(e Entry) string {
	// Room for the names and punctuation (about 130 bytes), the fields
	// and the hashes (71 bytes each): a buffer that grows is copied.
	b := make([]byte, 0, 160+len(e.Actor)+len(e.Body)+len(e.EventType)+len(e.ID)+len(e.Integrity.Algorithm)+
		len(e.Integrity.LocalHash)+len(e.PrevHash)+len(e.Timestamp)+len(e.Workspace))
	b = append(b, `{"actor":`...)
	b = appendJCSString(b, e.Actor)
	b = append(b, `,"body":`...)
	b = append(b, e.Body...)
	b = append(b, `,"event_type":`...)
	b = appendJCSString(b, string(e.EventType))
	b = append(b, `,"id":`...)
	b = appendJCSString(b, e.ID)
	b = append(b, `,"integrity":{"algorithm":`...)
	b = appendJCSString(b, e.Integrity.Algorithm)
	if e.Integrity.LocalHash != "" {
		b = append(b, `,"local_hash":`...)
		b = appendJCSString(b, e.Integrity.LocalHash)
	}
	b = append(b, `},"prev_hash":`...)
	b = appendNullable(b, e.PrevHash)
	b = append(b, `,"timestamp":`...)
	b = appendJCSString(b, e.Timestamp)
	b = append(b, `,"workspace":`...)
	b = appendNullable(b, e.Workspace)
	b = append(b, '}')
	return hashBytes(b)
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendJCSString(b, s)
}

// appendJCSString appends s as RFC 8785 writes a string (canon.AppendString).
func appendJCSString(b []byte, s string) []byte { return canon.AppendString(b, s) }

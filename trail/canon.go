package trail

import (
	"sync"

	"github.com/wacpd/wacpd/internal/canon"
)

// HashCanonical returns Hash(e) for an entry whose Body is already in canonical
// form, which Append guarantees. It writes the RFC 8785 form of the entry
// directly instead of going through encoding/json and jcs.Transform, which
// re-parses what json.Marshal just produced: appends computed two such hashes
// per entry, and they were a large part of a commit's CPU time
// (docs/performance.md). TestFastHashMatchesHash and FuzzFastHash check it
// against Hash, the reference, on every kind of string.
func HashCanonical(e Entry) string {
	bp := canonBufs.Get().(*[]byte)
	b := (*bp)[:0]
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
	h := hashBytes(b)
	if cap(b) <= maxCanonBuf {
		*bp = b
		canonBufs.Put(bp)
	}
	return h
}

// canonBufs holds the buffers HashCanonical writes an entry into to hash
// it: every entry is hashed twice as it is appended, and again by each
// check, and a buffer of its own each time was a twentieth of the bytes
// the daemon allocated (docs/performance.md). One that grew past
// maxCanonBuf (an entry with a large body) is left to the collector.
var canonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

const maxCanonBuf = 64 << 10

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendJCSString(b, s)
}

// appendJCSString appends s as RFC 8785 writes a string (canon.AppendString).
func appendJCSString(b []byte, s string) []byte { return canon.AppendString(b, s) }

package trail

import (
	"unicode/utf8"
)

// fastHash returns Hash(e) for an entry whose Body is already in canonical
// form, which Append guarantees. It writes the RFC 8785 form of the entry
// directly instead of going through encoding/json and jcs.Transform, which
// re-parses what json.Marshal just produced: appends computed two such hashes
// per entry, and they were a large part of a commit's CPU time
// (docs/performance.md). TestFastHashMatchesHash and FuzzFastHash check it
// against Hash, the reference, on every kind of string.
func fastHash(e Entry) string {
	b := make([]byte, 0, 256+len(e.Body))
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

// appendJCSString appends s as RFC 8785 writes a string: '"' and '\' and the
// control characters escaped (\b \f \n \r \t by name, others as \u00xx),
// everything else as UTF-8, and each byte of invalid UTF-8 as U+FFFD (what
// encoding/json does before canonicalization).
func appendJCSString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Runs of printable ASCII, most strings whole, are copied at once.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
			j++
		}
		b = append(b, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

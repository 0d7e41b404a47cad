package trail

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"
	"github.com/gowebpki/jcs"
)

// The value under t/g/<seq> is the JSON of stored:
//
//	{"entry":{"id":…,"timestamp":…,"workspace":…|null,"actor":…,"event_type":…,
//	 "body":{…},"prev_hash":…|null,"integrity":{"entry_hash":…,"algorithm":…,
//	 "local_hash":…}},"local_prev_hash":…}
//
// (entry_hash, local_hash and local_prev_hash omitted when empty). Strings
// are written as RFC 8785 writes them and the body is stored as appended,
// already canonical, byte for byte. appendStored writes this form without
// encoding/json, and parseStored reads it back without reflection: verifying
// the trail decodes every stored entry, and encoding/json was most of its
// cost. Any other spelling of the same JSON (older data written by
// encoding/json, which escapes <, > and & in strings) is decoded by
// encoding/json instead.

// appendStored appends the stored form of s to b.
func appendStored(b []byte, s stored) []byte {
	b = append(b, `{"entry":`...)
	b = appendEntry(b, s.Entry)
	if s.LocalPrev != "" {
		b = append(b, `,"local_prev_hash":`...)
		b = appendJCSString(b, s.LocalPrev)
	}
	return append(b, '}')
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

// decodeStored decodes a stored entry. The body is a copy: v may be
// Badger's buffer.
func decodeStored(v []byte) (stored, error) {
	if s, ok := parseStored(v); ok && json.Valid(s.Entry.Body) {
		// Bodies are stored canonical, where \u escapes only control
		// characters; entries that encoding/json wrote escape <, > and &.
		if bytes.Contains(s.Entry.Body, []byte(`\u`)) {
			if c, err := jcs.Transform(s.Entry.Body); err == nil {
				s.Entry.Body = c
			}
		}
		return s, nil
	}
	var s stored
	if err := json.Unmarshal(v, &s); err != nil {
		return stored{}, err
	}
	if s.Entry.ID == "" && s.Entry.EventType == "" {
		return stored{}, errNotStored
	}
	return s, nil
}

var errNotStored = errors.New("not a stored trail entry")

// parseStored reads exactly the form appendStored writes. It reports false
// for anything else, including strings with escapes.
func parseStored(v []byte) (stored, bool) {
	p := parser{b: v}
	var s stored
	e := &s.Entry
	ok := p.lit(`{"entry":{"id":`) && p.str(&e.ID) &&
		p.lit(`,"timestamp":`) && p.str(&e.Timestamp) &&
		p.lit(`,"workspace":`) && p.nullable(&e.Workspace) &&
		p.lit(`,"actor":`) && p.str(&e.Actor) &&
		p.lit(`,"event_type":`) && p.str((*string)(&e.EventType)) &&
		p.lit(`,"body":`) && p.object(&e.Body) &&
		p.lit(`,"prev_hash":`) && p.nullable(&e.PrevHash) &&
		p.lit(`,"integrity":{`)
	if !ok {
		return stored{}, false
	}
	in := &e.Integrity
	if p.lit(`"entry_hash":`) && (!p.str(&in.EntryHash) || !p.lit(",")) {
		return stored{}, false
	}
	if !p.lit(`"algorithm":`) || !p.str(&in.Algorithm) {
		return stored{}, false
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{`,"local_hash":`, &in.LocalHash}, {`,"signature":`, &in.Signature}, {`,"signer":`, &in.Signer}} {
		if p.lit(f.name) && !p.str(f.v) {
			return stored{}, false
		}
	}
	if !p.lit("}}") {
		return stored{}, false
	}
	if p.lit(`,"local_prev_hash":`) && !p.str(&s.LocalPrev) {
		return stored{}, false
	}
	if !p.lit("}") || p.i != len(p.b) {
		return stored{}, false
	}
	return s, true
}

type parser struct {
	b []byte
	i int
}

// lit consumes s if the input continues with it.
func (p *parser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// str consumes a string of valid UTF-8 without escapes or control
// characters.
func (p *parser) str(out *string) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			if !utf8.Valid(p.b[p.i+1 : j]) {
				return false
			}
			*out = string(p.b[p.i+1 : j])
			p.i = j + 1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

func (p *parser) nullable(out *string) bool {
	if p.lit("null") {
		*out = ""
		return true
	}
	return p.str(out)
}

// object consumes a JSON object and copies its bytes. It only finds the
// object's end (strings and nesting); whether the body is JSON is checked
// by decodeStored, whether it is canonical by the hash check.
func (p *parser) object(out *json.RawMessage) bool {
	start := p.i
	if !p.scanObject() {
		return false
	}
	*out = bytes.Clone(p.b[start:p.i])
	return true
}

// scanObject consumes an object: up to the '}' that closes the '{' at the
// current position, skipping strings.
func (p *parser) scanObject() bool {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	depth, inStr := 0, false
	for j := p.i; j < len(p.b); j++ {
		c := p.b[j]
		if inStr {
			switch c {
			case '\\':
				j++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if c != '}' {
					return false
				}
				p.i = j + 1
				return true
			}
		}
	}
	return false
}

// getStored reads the stored entry of global seq into s.
func getStored(txn *badger.Txn, seq uint64, s *stored) error {
	item, err := txn.Get(globalKey(seq))
	if err != nil {
		return err
	}
	return item.Value(func(v []byte) (err error) { *s, err = decodeStored(v); return err })
}

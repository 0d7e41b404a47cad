package traillog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"
	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/internal/canon"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
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
	b = trail.AppendJSON(b, s.Entry)
	if s.LocalPrev != "" {
		b = append(b, `,"local_prev_hash":`...)
		b = canon.AppendString(b, s.LocalPrev)
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

// parseStored reads exactly the form appendStored writes (scanStored). It
// reports false for anything else, including strings with escapes.
func parseStored(v []byte) (stored, bool) {
	r, ok := scanStored(v)
	if !ok {
		return stored{}, false
	}
	return stored{
		Entry: trail.Entry{
			ID: string(r.id), Timestamp: string(r.ts), Workspace: string(r.ws), Actor: string(r.actor),
			EventType: trail.EventType(r.typ), Body: bytes.Clone(r.body), PrevHash: string(r.prev),
			Integrity: trail.Integrity{
				EntryHash: string(r.entryHash), Algorithm: string(r.alg), LocalHash: string(r.localHash),
				Signature: string(r.sig), Signer: string(r.signer),
			},
		},
		LocalPrev: string(r.localPrev),
	}, true
}

// rawStored is a stored entry as slices of the stored bytes. Strings are
// without their quotes; has* tell null from a string.
type rawStored struct {
	id, ts, ws, actor, typ, body, prev     []byte
	entryHash, alg, localHash, sig, signer []byte
	localPrev                              []byte
	hasWS, hasPrev, hasLocalPrev           bool
	nonASCII                               bool // some string holds a byte of 0x7f or more
}

// scanStored reads exactly the form appendStored writes, with strings of
// valid UTF-8 free of escapes and control characters, and a body object. It
// copies nothing: the slices point into v.
func scanStored(v []byte) (rawStored, bool) {
	p := parser{b: v}
	var r rawStored
	ok := p.lit(`{"entry":{"id":`) && p.raw(&r.id) &&
		p.lit(`,"timestamp":`) && p.raw(&r.ts) &&
		p.lit(`,"workspace":`) && p.rawNullable(&r.ws, &r.hasWS) &&
		p.lit(`,"actor":`) && p.raw(&r.actor) &&
		p.lit(`,"event_type":`) && p.raw(&r.typ) &&
		p.lit(`,"body":`) && p.rawObject(&r.body) &&
		p.lit(`,"prev_hash":`) && p.rawNullable(&r.prev, &r.hasPrev) &&
		p.lit(`,"integrity":{`)
	if !ok {
		return rawStored{}, false
	}
	if p.lit(`"entry_hash":`) && (!p.raw(&r.entryHash) || !p.lit(",")) {
		return rawStored{}, false
	}
	if !p.lit(`"algorithm":`) || !p.raw(&r.alg) {
		return rawStored{}, false
	}
	for _, f := range []struct {
		name string
		v    *[]byte
	}{{`,"local_hash":`, &r.localHash}, {`,"signature":`, &r.sig}, {`,"signer":`, &r.signer}} {
		if p.lit(f.name) && !p.raw(f.v) {
			return rawStored{}, false
		}
	}
	if !p.lit("}}") {
		return rawStored{}, false
	}
	if p.lit(`,"local_prev_hash":`) {
		if !p.raw(&r.localPrev) {
			return rawStored{}, false
		}
		r.hasLocalPrev = true
	}
	r.nonASCII = p.nonASCII
	return r, p.lit("}") && p.i == len(p.b)
}

type parser struct {
	b        []byte
	i        int
	nonASCII bool // a string read so far holds a byte of 0x7f or more
}

// lit consumes s if the input continues with it.
func (p *parser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// raw consumes a string of valid UTF-8 without escapes or control
// characters, and sets out to its bytes (without the quotes).
func (p *parser) raw(out *[]byte) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	high := false
	for j := p.i + 1; j < len(p.b); j++ {
		if j += canon.PlainRun(p.b[j:]); j >= len(p.b) {
			break // most of a string, a word at a time
		}
		switch c := p.b[j]; {
		case c == '"':
			if high && !utf8.Valid(p.b[p.i+1:j]) {
				return false
			}
			*out = p.b[p.i+1 : j]
			p.i = j + 1
			p.nonASCII = p.nonASCII || high
			return true
		case c == '\\' || c < 0x20:
			return false
		case c >= 0x7f:
			high = true
		}
	}
	return false
}

// rawNullable consumes null (setting *has false) or a raw string.
func (p *parser) rawNullable(out *[]byte, has *bool) bool {
	if p.lit("null") {
		*has = false
		return true
	}
	*has = p.raw(out)
	return *has
}

// rawObject consumes a body object without copying it. It only finds the
// object's end (strings and nesting, scanObject): whether the body is JSON
// is for decodeStored to check, whether it is the bytes that were hashed for
// the hash check.
func (p *parser) rawObject(out *[]byte) bool {
	start := p.i
	if !p.scanObject() {
		return false
	}
	*out = p.b[start:p.i]
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
			default:
				j += canon.PlainRun(p.b[j+1:])
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
			j += canon.PlainRun(p.b[j+1:]) // most of a string, a word at a time
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

// getStored reads the stored entry of global seq into s
// (badger.ErrKeyNotFound when it is not stored).
func getStored(txn *badger.Txn, seg *seglog.Log, seq uint64, s *stored) error {
	e, ok, err := entryAt(txn, seq)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("entry #%d: %w", seq, badger.ErrKeyNotFound)
	}
	return e.value(seg, func(v []byte) (err error) { *s, err = decodeStored(v); return err })
}

// entryExtra returns the entry hash and id kept beside the pointer of a
// stored entry in the segments (Batch.Append); ok is false for an entry
// stored in Badger itself.
func entryExtra(item *badger.Item) (hash []byte, id string, ok bool, err error) {
	ok, err = seglog.Extra(item, func(x []byte) error {
		if len(x) <= 32 {
			return &DamageError{Op: fmt.Sprintf("entry key %q", item.Key()), Err: fmt.Errorf("%d bytes beside its pointer, want the entry hash and id", len(x))}
		}
		hash, id = bytes.Clone(x[:32]), string(x[32:])
		return nil
	})
	return hash, id, ok, err
}

package strictjson

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/wacpd/wacpd/internal/canon"
)

// maxObjectDepth bounds the nesting of objects and arrays ScanObject
// accepts (it reads them recursively).
const maxObjectDepth = 32

// ScanObject reads data as one JSON object in the compact form a
// canonical encoder writes, calling fn with each member of the outer
// object in order, and reports whether data has that form. A member's
// value is a string of printable ASCII without escapes (KindString), null
// (KindNull), an unsigned integer of at most 19 digits without a leading
// zero (KindUint), or any other value (KindOther: an object, an array,
// true, false, another number, a string with escapes or with bytes beyond
// printable ASCII), whose value is its JSON text. The form, at every depth: no whitespace; strings of valid UTF-8
// without control characters, whose \u escapes spell characters other
// than surrogates (an escaped pair, or a half, is refused); names without
// escapes; numbers as JSON writes them; no name twice in one object; at
// most 32 members in an object and 32 levels of nesting. The slices
// point into data.
//
// It is the fast path of reading a few members of a stored record
// (DecodeFields reads any JSON): when it reports false, or a member has a
// kind the caller does not expect, the caller decodes with DecodeFields.
// On data ScanObject accepts, DecodeFields accepts it too and gives the
// members fn saw, with the values fn saw for those of kinds other than
// KindOther (FuzzScanObject). fn may be
// called before ScanObject finds data is not of that form.
func ScanObject(data []byte, fn func(name, value []byte, kind Kind)) bool {
	s := scanner{data: data}
	next, ok := s.object(0, 0, fn)
	return ok && next == len(data)
}

// scanner reads the values of ScanObject's form in data.
type scanner struct{ data []byte }

// value reads the value that starts at data[i] and returns the index after
// it and its kind.
func (s *scanner) value(i, depth int) (next int, kind Kind, ok bool) {
	if i >= len(s.data) {
		return 0, 0, false
	}
	switch c := s.data[i]; {
	case c == '"':
		_, next, plain, ok := s.str(i)
		if plain {
			return next, KindString, ok
		}
		return next, KindOther, ok
	case c == '{':
		next, ok = s.object(i, depth+1, nil)
		return next, KindOther, ok
	case c == '[':
		next, ok = s.array(i, depth+1)
		return next, KindOther, ok
	case c == 'n':
		return s.literal(i, "null", KindNull)
	case c == 't':
		return s.literal(i, "true", KindOther)
	case c == 'f':
		return s.literal(i, "false", KindOther)
	case c == '-' || c >= '0' && c <= '9':
		return s.number(i)
	}
	return 0, 0, false
}

// literal reads the literal lit at data[i].
func (s *scanner) literal(i int, lit string, kind Kind) (next int, k Kind, ok bool) {
	if len(s.data)-i < len(lit) || string(s.data[i:i+len(lit)]) != lit {
		return 0, 0, false
	}
	return i + len(lit), kind, true
}

// number reads the JSON number at data[i]; its kind is KindUint for an
// unsigned integer of at most maxDigits digits.
func (s *scanner) number(i int) (next int, kind Kind, ok bool) {
	d, j := s.data, i
	digits := func() int {
		start := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		return j - start
	}
	kind = KindUint
	if d[j] == '-' {
		j++
		kind = KindOther
	}
	switch {
	case j < len(d) && d[j] == '0':
		j++
	case j < len(d) && d[j] >= '1' && d[j] <= '9':
		if digits() > maxDigits {
			kind = KindOther
		}
	default:
		return 0, 0, false
	}
	if j < len(d) && d[j] == '.' {
		j++
		kind = KindOther
		if digits() == 0 {
			return 0, 0, false
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		kind = KindOther
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if digits() == 0 {
			return 0, 0, false
		}
	}
	return j, kind, true
}

// str reads the string at data[i] (a quote) and returns its bytes between
// the quotes and the index after its closing quote; plain reports that it
// is of printable ASCII without escapes.
func (s *scanner) str(i int) (b []byte, next int, plain, ok bool) {
	d := s.data
	if i >= len(d) || d[i] != '"' {
		return nil, 0, false, false
	}
	plain = true
	for j := i + 1; j < len(d); {
		// The common case, a word at a time: content is long.
		if j += canon.PlainRun(d[j:]); j >= len(d) {
			break
		}
		switch c := d[j]; {
		case c == '"':
			return d[i+1 : j], j + 1, plain, true
		case c == '\\':
			if j+1 >= len(d) {
				return nil, 0, false, false
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if !bmpEscape(d[j+2:]) {
					return nil, 0, false, false
				}
				j += 6
			default:
				return nil, 0, false, false
			}
			plain = false
		case c < 0x20:
			return nil, 0, false, false
		case c < utf8.RuneSelf:
			if c == 0x7f {
				plain = false
			}
			j++
		default:
			r, n := utf8.DecodeRune(d[j:])
			if r == utf8.RuneError && n == 1 {
				return nil, 0, false, false
			}
			plain = false
			j += n
		}
	}
	return nil, 0, false, false
}

// object reads the object at data[i] (depth levels deep) and, when fn is
// not nil, calls it with each member.
func (s *scanner) object(i, depth int, fn func(name, value []byte, kind Kind)) (next int, ok bool) {
	d := s.data
	if depth > maxObjectDepth || i >= len(d) || d[i] != '{' {
		return 0, false
	}
	i++
	if i < len(d) && d[i] == '}' {
		return i + 1, true
	}
	var names [maxMembers][]byte
	for n := 0; ; n++ {
		name, next, plain, ok := s.str(i)
		if !ok || !plain && bytes.IndexByte(name, '\\') >= 0 || next >= len(d) || d[next] != ':' || n == maxMembers {
			return 0, false
		}
		for _, prev := range names[:n] {
			if string(prev) == string(name) {
				return 0, false
			}
		}
		names[n] = name
		start := next + 1
		end, kind, ok := s.value(start, depth)
		if !ok || end >= len(d) {
			return 0, false
		}
		if fn != nil {
			value := d[start:end]
			if kind == KindString {
				value = value[1 : len(value)-1]
			} else if kind == KindNull {
				value = nil
			}
			fn(name, value, kind)
		}
		switch d[end] {
		case ',':
			i = end + 1
		case '}':
			return end + 1, true
		default:
			return 0, false
		}
	}
}

// array reads the array at data[i] (depth levels deep).
func (s *scanner) array(i, depth int) (next int, ok bool) {
	d := s.data
	if depth > maxObjectDepth {
		return 0, false
	}
	i++
	if i < len(d) && d[i] == ']' {
		return i + 1, true
	}
	for {
		end, _, ok := s.value(i, depth)
		if !ok || end >= len(d) {
			return 0, false
		}
		switch d[end] {
		case ',':
			i = end + 1
		case ']':
			return end + 1, true
		default:
			return 0, false
		}
	}
}

// bmpEscape reports whether b starts with the four hex digits of a \u
// escape that is not a surrogate, so spells a character on its own.
func bmpEscape(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return false
		}
	}
	return !utf16.IsSurrogate(r)
}

// Strings sets *dst[i] to the bytes of src[i] (values ScanObject gave),
// all of them parts of one new string: one allocation for the fields of a
// record that are kept, and dropped, together.
func Strings(dst []*string, src [][]byte) {
	n := 0
	for _, b := range src {
		n += len(b)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, b := range src {
		sb.Write(b)
	}
	all, at := sb.String(), 0
	for i, b := range src {
		*dst[i] = all[at : at+len(b)]
		at += len(b)
	}
}

// Package canon writes RFC 8785 (JSON Canonicalization Scheme) JSON
// directly, without encoding/json and a jcs.Transform pass over its output.
// Every hash in wacpd is over canonical JSON; the writers here are checked
// against that reference (encoding/json followed by
// github.com/gowebpki/jcs.Transform) by the tests and fuzz targets of this
// package and of its users.
package canon

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// MaxSafeInt is the largest integer a float64 holds exactly: integers up to
// it print the same in RFC 8785 as in Go's decimal form.
const MaxSafeInt = 1 << 53

// AppendValue appends the RFC 8785 form of v to b, for the values trail
// bodies are made of: nil, strings, booleans, integers up to 2^53, finite
// floats, *string, []string, []any, map[string]any and map[string]string
// with ASCII keys, and named string types. It reports false for anything
// else (structs, other pointers, big integers, non-ASCII keys), and the
// caller falls back to the reference: encoding/json followed by
// jcs.Transform. TestAppendValueMatchesReference and FuzzAppendValue check
// that both give the same bytes.
func AppendValue(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return AppendString(b, x), true
	case bool:
		return strconv.AppendBool(b, x), true
	case int:
		return AppendInt(b, int64(x))
	case int64:
		return AppendInt(b, x)
	case int32:
		return AppendInt(b, int64(x))
	case uint32:
		return AppendInt(b, int64(x))
	case uint64:
		if x > MaxSafeInt {
			return b, false
		}
		return AppendInt(b, int64(x))
	case float64:
		return AppendFloat(b, x)
	case *string:
		if x == nil {
			return append(b, "null"...), true
		}
		return AppendString(b, *x), true
	case []string:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, s)
		}
		return append(b, ']'), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = AppendValue(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendObject(b, x, func(b []byte, v any) ([]byte, bool) { return AppendValue(b, v) })
	case map[string]string:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendObject(b, x, func(b []byte, v string) ([]byte, bool) { return AppendString(b, v), true })
	}
	// Named string types (EventType, workspace.State, ...) encode as their
	// string; any other kind goes the reference way.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String && !implementsMarshaler(rv.Type()) {
		return AppendString(b, rv.String()), true
	}
	return b, false
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

func implementsMarshaler(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler)
}

// appendObject appends m with its keys in RFC 8785 order. Keys must be
// ASCII without characters JSON escapes, for which byte order is the
// standard's UTF-16 order; other keys report false.
func appendObject[V any](b []byte, m map[string]V, val func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	var arr [16]string
	keys := arr[:0]
	for k := range m {
		for i := 0; i < len(k); i++ {
			if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return b, false
			}
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
		var ok bool
		if b, ok = val(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func AppendInt(b []byte, n int64) ([]byte, bool) {
	if n > MaxSafeInt || n < -MaxSafeInt {
		return b, false
	}
	return strconv.AppendInt(b, n, 10), true
}

func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false // encoding/json refuses them; so does the reference
	}
	if f == math.Trunc(f) && math.Abs(f) <= MaxSafeInt {
		if f == 0 {
			return append(b, '0'), true // -0 too, as RFC 8785 says
		}
		return strconv.AppendInt(b, int64(f), 10), true
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return b, false
	}
	return append(b, s...), true
}

// IsNull reports whether v encodes as JSON null.
func IsNull(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// AppendString appends s as RFC 8785 writes a string: '"' and '\' and the
// control characters escaped (\b \f \n \r \t by name, others as \u00xx),
// everything else as UTF-8, and each byte of invalid UTF-8 as U+FFFD (what
// encoding/json does before canonicalization).
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Runs of plain bytes, most strings whole, are copied at once.
		j := i + PlainRunString(s[i:])
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

package trail

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/gowebpki/jcs"
)

// maxSafeInt is the largest integer a float64 holds exactly: integers up to
// it print the same in RFC 8785 as in Go's decimal form.
const maxSafeInt = 1 << 53

// appendCanonical appends the RFC 8785 form of v to b, for the values trail
// bodies are made of: nil, strings, booleans, integers up to 2^53, finite
// floats, *string, []string, []any, map[string]any and map[string]string
// with ASCII keys, and named string types. It reports false for anything
// else (structs, other pointers, big integers, non-ASCII keys), and the
// caller falls back to Canonical, the reference: encoding/json followed by
// jcs.Transform. TestAppendCanonicalMatchesCanonical and
// FuzzAppendCanonical check that both give the same bytes.
//
// Appends used to canonicalize every body by marshalling it with
// encoding/json and re-parsing the result with jcs.Transform; that was the
// largest single cost of a commit (docs/performance.md).
func appendCanonical(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendJCSString(b, x), true
	case bool:
		return strconv.AppendBool(b, x), true
	case int:
		return appendInt(b, int64(x))
	case int64:
		return appendInt(b, x)
	case int32:
		return appendInt(b, int64(x))
	case uint32:
		return appendInt(b, int64(x))
	case uint64:
		if x > maxSafeInt {
			return b, false
		}
		return appendInt(b, int64(x))
	case float64:
		return appendFloat(b, x)
	case *string:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendJCSString(b, *x), true
	case []string:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJCSString(b, s)
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
			if b, ok = appendCanonical(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendObject(b, x, func(b []byte, v any) ([]byte, bool) { return appendCanonical(b, v) })
	case map[string]string:
		if x == nil {
			return append(b, "null"...), true
		}
		return appendObject(b, x, func(b []byte, v string) ([]byte, bool) { return appendJCSString(b, v), true })
	}
	// Named string types (EventType, workspace.State, ...) encode as their
	// string; any other kind goes the reference way.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String && !implementsMarshaler(rv.Type()) {
		return appendJCSString(b, rv.String()), true
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

func appendInt(b []byte, n int64) ([]byte, bool) {
	if n > maxSafeInt || n < -maxSafeInt {
		return b, false
	}
	return strconv.AppendInt(b, n, 10), true
}

func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false // encoding/json refuses them; so does the reference
	}
	if f == math.Trunc(f) && math.Abs(f) <= maxSafeInt {
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

// isNull reports whether v encodes as JSON null.
func isNull(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

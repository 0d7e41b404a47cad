package strictjson

// Kind is the kind of a member's value ScanFlat reports.
type Kind byte

// The kinds of value ScanFlat accepts.
const (
	KindString Kind = 's' // a string: the value is its bytes, without quotes
	KindNull   Kind = 'n' // null: the value is empty
	KindUint   Kind = 'u' // an unsigned integer: the value is its digits
)

// maxFlatDigits bounds the digits of an integer ScanFlat accepts, so that
// every one it accepts fits in a uint64 (whose largest has 20 digits).
const maxFlatDigits = 19

// maxFlatMembers bounds the members ScanFlat accepts (it compares each
// name with those before to refuse a duplicate).
const maxFlatMembers = 32

// ScanFlat reads data as one flat JSON object in the compact form a
// canonical encoder writes, calling fn with each member in order, and
// reports whether data has that form: no whitespace; names and string
// values of printable ASCII without escapes; values that are such strings,
// null or unsigned integers of at most 19 digits without a leading zero;
// no name twice; at most 32 members. The slices point into data.
//
// It is the fast path of reading a few fields of a stored record (as
// DecodeFields does, which accepts all JSON): when it reports false, or a
// member has a kind the caller does not expect, the caller decodes with
// DecodeFields, which then reads data as it always did. On data ScanFlat
// accepts, a DecodeFields into strings, *string and unsigned integers
// gives the values fn saw (FuzzScanFlat). fn may be called before ScanFlat
// finds data is not of that form.
func ScanFlat(data []byte, fn func(name, value []byte, kind Kind)) bool {
	if len(data) < 2 || data[0] != '{' {
		return false
	}
	var names [maxFlatMembers][]byte
	n := 0
	i := 1
	if data[i] == '}' {
		return i+1 == len(data)
	}
	for {
		name, next, ok := flatString(data, i)
		if !ok || next >= len(data) || data[next] != ':' {
			return false
		}
		if n == maxFlatMembers {
			return false
		}
		for _, prev := range names[:n] {
			if string(prev) == string(name) {
				return false
			}
		}
		names[n] = name
		n++
		i = next + 1
		if i >= len(data) {
			return false
		}
		var value []byte
		var kind Kind
		switch c := data[i]; {
		case c == '"':
			value, i, ok = flatString(data, i)
			if !ok {
				return false
			}
			kind = KindString
		case c == 'n':
			if len(data)-i < 4 || string(data[i:i+4]) != "null" {
				return false
			}
			i += 4
			kind = KindNull
		case c >= '0' && c <= '9':
			start := i
			for i < len(data) && data[i] >= '0' && data[i] <= '9' {
				i++
			}
			if data[start] == '0' && i-start > 1 || i-start > maxFlatDigits {
				return false
			}
			value, kind = data[start:i], KindUint
		default:
			return false
		}
		fn(name, value, kind)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i+1 == len(data)
		default:
			return false
		}
	}
}

// flatString reads the string that starts at data[i] (a quote) and returns
// its bytes and the index after its closing quote; ok is false unless it
// is of printable ASCII without escapes.
func flatString(data []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

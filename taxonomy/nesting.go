package taxonomy

// MaxNesting is how deeply objects and arrays may nest in a request body of
// the wire contract, free-form values included (a checkpoint's payload, a
// workspace's context, an integration's result). Every request decoder
// refuses deeper input as invalid_structure before decoding it, so no value
// the daemon stores or hashes nests deeper. Taxonomy files have the same
// limit.
const MaxNesting = 64

// Nesting returns the deepest nesting of JSON objects and arrays in data:
// 0 for a scalar, 1 for {} or [], 2 for [[]] or {"a":{}}. Brackets inside
// strings do not count. It does not validate data, and reads it once.
func Nesting(data []byte) int {
	d, deepest, inStr, esc := 0, 0, false, false
	for _, c := range data {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

package canon

// PlainRun returns the length of the longest prefix of s made of plain
// bytes: printable ASCII other than the quote and the backslash (0x20 to
// 0x7e, less '"' and '\\'), which a JSON string holds as they are and a
// scanner of strings passes over. It tests eight bytes at a time, so the
// writers and scanners of strings (AppendString here, strictjson's
// scanners, the trail's stored-entry parser) pass over long contents
// quickly; each handles what follows the run itself. FuzzPlainRun holds it
// to a byte at a time.
func PlainRun[T ~string | ~[]byte](s T) int {
	i := 0
	for len(s)-i >= 8 && plainWord(word(s, i)) {
		i += 8
	}
	for i < len(s) && plainByte(s[i]) {
		i++
	}
	return i
}

// plainByte reports whether c is plain (PlainRun).
func plainByte(c byte) bool { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' }

// word returns the eight bytes of s from i as a little-endian word (the
// compiler turns this into one load).
func word[T ~string | ~[]byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// Bytes repeated in each byte of a word, for plainWord.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWord reports whether each byte of w is plain. The high bit of a
// byte is set: in w, for one beyond ASCII; in w - 0x20*ones, for the
// lowest byte below 0x20, when w is ASCII (no byte borrows before it); in
// (x-ones)&^x, for the lowest zero byte of x, so of q, b and del, for a
// quote, a backslash or DEL (0x7f). Only the lowest offending byte is
// sure to be flagged, which is all a yes or no needs.
func plainWord(w uint64) bool {
	q, b, del := w^('"'*ones), w^('\\'*ones), w^(0x7f*ones)
	return (w|(w-0x20*ones)|(q-ones)&^q|(b-ones)&^b|(del-ones)&^del)&highs == 0
}

package canon

import (
	"encoding/binary"
	"unsafe"
)

// PlainRun returns the length of the longest prefix of s made of plain
// bytes: printable ASCII other than the quote and the backslash (0x20 to
// 0x7e, less '"' and '\\'), which a JSON string holds as they are and a
// scanner of strings passes over. It tests 32 bytes at a time where the
// CPU has AVX2 (plainBlocks, in assembly), else eight, so the
// writers and scanners of strings (AppendString here, strictjson's
// scanners, the trail's stored-entry parser) pass over long contents
// quickly; each handles what follows the run itself. FuzzPlainRun holds it
// to a byte at a time.
func PlainRun(s []byte) int {
	i := 0
	// Most runs are short (ids, names, times): the first words are tested
	// here, and only a run longer than them goes to plainBlocks, whose call
	// costs a few words' time.
	for len(s)-i >= 8 && plainWord(binary.LittleEndian.Uint64(s[i:])) {
		i += 8
		if i == 32 && blocks && len(s) >= 64 {
			i += plainBlocks(s[32:]) // then the words and bytes left, or the byte that stopped it
		}
	}
	for i < len(s) && plainByte(s[i]) {
		i++
	}
	return i
}

// PlainRunString is PlainRun of a string, read in place.
func PlainRunString(s string) int {
	return PlainRun(unsafe.Slice(unsafe.StringData(s), len(s))) // only read
}

// plainByte reports whether c is plain (PlainRun).
func plainByte(c byte) bool { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' }

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

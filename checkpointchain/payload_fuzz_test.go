package checkpointchain

import (
	"encoding/json"
	"testing"
)

// FuzzUnmarshalString checks unmarshalString, the shortcut Payload takes for
// its content, against the parse it skips: for every JSON value both give
// the same string, or both fail.
func FuzzUnmarshalString(f *testing.F) {
	for _, s := range []string{
		`"plain"`, `""`, `"with \"escape\""`, `"tab\tin"`, `"\u00e9t\u00e9"`, `"été"`, "\"bad \xff utf-8\"",
		`"<a & b>"`, `null`, `42`, `["a"]`, `{"a":1}`, ` "spaced" `, `true`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return // the shortcut is only ever given a parsed value
		}
		var fast, slow string
		ferr := unmarshalString(v, &fast)
		serr := strictUnmarshal(v, &slow)
		if (ferr == nil) != (serr == nil) || fast != slow {
			t.Errorf("unmarshalString(%q) = %q, %v; strictUnmarshal = %q, %v", v, fast, ferr, slow, serr)
		}
	})
}

package checkpointchain

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wacpd/wacpd/internal/strictjson"
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

// FuzzPayloadDecoders: the payload read by the strict decoder
// (UnmarshalJSONFrom, in one pass) is the payload UnmarshalJSON reads from
// the same bytes, member for member, or both refuse it.
func FuzzPayloadDecoders(f *testing.F) {
	for _, s := range []string{
		`{"content":"plain"}`, `{"content":"with \"escape\"","files_changed":["a.go"]}`, `{}`, `null`, `[]`, `"x"`,
		`{"content":42}`, `{"content":null}`, `{"artifacts":[{"name":"a","digest":"x"}],"verdict":{"ok":true}}`,
		`{"content":"\u00e9t\u00e9","x":null,"y":[1,{"z":"w"}]}`, `{"files_changed":null}`, `{"Content":"case"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var via struct {
			Payload Payload `json:"payload"`
		}
		doc := append(append([]byte(`{"payload":`), b...), '}')
		serr := strictjson.Decode(doc, &via)
		if serr != nil && !json.Valid(doc) {
			return // refused before the payload is read
		}
		var direct Payload
		derr := direct.UnmarshalJSON(b)
		if (serr == nil) != (derr == nil) {
			// A duplicated name or invalid UTF-8 is refused by the strict
			// decoder alone.
			if serr != nil && derr == nil && ijsonInvalid(b) {
				return
			}
			t.Fatalf("payload %q: strict decoder %v, UnmarshalJSON %v", b, serr, derr)
		}
		if serr == nil && !reflect.DeepEqual(via.Payload, direct) {
			t.Fatalf("payload %q: strict decoder %+v, UnmarshalJSON %+v", b, via.Payload, direct)
		}
	})
}

// ijsonInvalid reports whether the JSON value b breaks I-JSON (RFC 7493):
// a name twice in one object, or invalid UTF-8. The strict decoder refuses
// it; encoding/json takes it.
func ijsonInvalid(b []byte) bool { return !jsontext.Value(b).IsValid() }

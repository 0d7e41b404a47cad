package checkpointchain

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

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

// FuzzPayloadEncoders: a request's payload written by the client library's
// codec (go-json-experiment's v1-compatible Marshal, through MarshalJSONTo)
// is byte for byte what encoding/json writes through MarshalJSON, or both
// refuse it. Invalid UTF-8 both replace with U+FFFD, encoding/json as an
// escape and the other as the character: there the two are the same JSON
// value.
func FuzzPayloadEncoders(f *testing.F) {
	f.Add("plain", "a.go", "", "", []byte(`{"ok":true}`))
	f.Add("<a & b>", "", "art", "x", []byte(`[1, 2]`))
	f.Add("bad \xff utf-8\u2028", "b", "c", "content", []byte(`null`))
	f.Add("", "", "", "files_changed", []byte(`{"z":1,"a":"\u00e9"}`))
	f.Add("x", "", "", "y", []byte(`{bad`))
	f.Add("x", "", "", "Zed", []byte(`"before artifacts"`))
	f.Fuzz(func(t *testing.T, content, file, artifact, extra string, raw []byte) {
		p := Payload{Content: content}
		if file != "" {
			p.FilesChanged = []string{file, content}
		}
		if artifact != "" {
			p.Artifacts = []string{artifact}
		}
		if extra != "" {
			p.Extra = map[string]json.RawMessage{extra: raw, "nil": nil}
		}
		req := Request{Type: "artifact", Payload: p, Intent: "i", Status: StatusFinal, Confidence: ConfidenceHigh}
		want, werr := json.Marshal(req)
		got, gerr := jsonv1.Marshal(req)
		same := bytes.Equal(got, want)
		if !same && werr == nil && gerr == nil && bytes.Contains(want, []byte(`\ufffd`)) {
			var g, w any
			same = json.Unmarshal(got, &g) == nil && json.Unmarshal(want, &w) == nil && reflect.DeepEqual(g, w)
		}
		if (werr == nil) != (gerr == nil) || werr == nil && !same {
			t.Fatalf("payload %+v: MarshalJSONTo %s (%v), MarshalJSON %s (%v)", p, got, gerr, want, werr)
		}
	})
}

// ijsonInvalid reports whether the JSON value b breaks I-JSON (RFC 7493):
// a name twice in one object, or invalid UTF-8. The strict decoder refuses
// it; encoding/json takes it.
func ijsonInvalid(b []byte) bool { return !jsontext.Value(b).IsValid() }

// TestStrictUnmarshalEmptyList: the empty list strictUnmarshal sets without
// the decoder is what the decoder sets (an empty list, not nil), also over
// a list that held something.
func TestStrictUnmarshalEmptyList(t *testing.T) {
	fast, slow := []string{"old"}, []string{"old"}
	if err := strictUnmarshal(json.RawMessage(`[]`), &fast); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`[]`), &slow); err != nil {
		t.Fatal(err)
	}
	if fast == nil || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("strictUnmarshal([]) = %#v, encoding/json %#v", fast, slow)
	}
}

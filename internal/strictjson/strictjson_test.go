package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type inner struct {
	A string `json:"a"`
}

type req struct {
	Type   string          `json:"type"`
	Status string          `json:"status"`
	In     inner           `json:"in"`
	Raw    json.RawMessage `json:"raw"`
	List   []inner         `json:"list"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
		want string // in the error
	}{
		{`{"type":"artifact","status":"final"}`, true, ""},
		{` {"in":{"a":"x"},"raw":{"b":[1,2]},"list":[{"a":"y"}]}`, true, ""},
		{`{"TYPE":"artifact"}`, false, "TYPE"},
		{`{"Type":"artifact"}`, false, "Type"},
		{`{"in":{"A":"x"}}`, false, "A"},
		{`{"status":"provisional","status":"final"}`, false, "duplicate"},
		{`{"in":{"a":"x","a":"y"}}`, false, "duplicate"},
		{`{"raw":{"b":1,"b":2}}`, false, "duplicate"},
		{`{"list":[{"a":"x"},{"a":"y","a":"z"}]}`, false, "duplicate"},
		{`{"extra":1}`, false, "extra"},
		{`{"type":1}`, false, ""},
		{`{"type":"a"} {}`, false, ""},
		{`{"type":"a"}x`, false, ""},
		{`[]`, false, "object"},
		{`null`, false, "object"},
		{``, false, "object"},
		{"{\"type\":\"\xff\"}", false, ""},
	}
	for _, tt := range tests {
		var r req
		err := Decode([]byte(tt.body), &r)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("Decode(%q) = %v, want ok %v", tt.body, err, tt.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%q) = %v, want it to name %q", tt.body, err, tt.want)
		}
	}
	var r req
	if err := Decode([]byte(`{"type":"artifact","status":"final","in":{"a":"x"}}`), &r); err != nil || r.Type != "artifact" || r.In.A != "x" {
		t.Errorf("Decode = %+v, %v", r, err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"type":"a"}`, `{"TYPE":"a"}`, `{"status":"p","status":"f"}`, `{"in":{"a":"x","a":"y"}}`, `{"raw":{"b":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r req
		if err := Decode(b, &r); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode(%q) = %v, not ErrInvalid", b, err)
			}
			return
		}
		// What decodes strictly also decodes with encoding/json, to the
		// same value.
		var loose req
		if err := json.Unmarshal(b, &loose); err != nil {
			t.Fatalf("strict ok, encoding/json %v on %q", err, b)
		}
		if loose.Type != r.Type || loose.Status != r.Status || loose.In != r.In {
			t.Fatalf("strict %+v, encoding/json %+v on %q", r, loose, b)
		}
	})
}

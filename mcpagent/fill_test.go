package mcpagent

import (
	"bytes"
	"encoding/json"
	"testing"
)

var fillNames = []string{"a", "b"}

func fillValue(name string) (any, error) { return "filled-" + name, nil }

func TestFill(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, `{"a":"filled-a","b":"filled-b"}`},
		{"null", ` null `, `{"a":"filled-a","b":"filled-b"}`},
		{"empty object", ` {} `, ` {"a":"filled-a","b":"filled-b"} `},
		{"one present", `{"b": 2, "c" :[1, 2]}`, `{"a":"filled-a","b": 2, "c" :[1, 2]}`},
		{"all present, kept byte for byte", "{ \"b\":1,\n\"a\":null }", "{ \"b\":1,\n\"a\":null }"},
		{"nested a does not count", `{"x":{"a":1}}`, `{"a":"filled-a","b":"filled-b","x":{"a":1}}`},
		{"duplicate kept for the daemon to refuse", `{"c":1,"c":2}`, `{"a":"filled-a","b":"filled-b","c":1,"c":2}`},
		{"big number kept", `{"n":12345678901234567890123}`, `{"a":"filled-a","b":"filled-b","n":12345678901234567890123}`},
		{"array unchanged", `[1]`, `[1]`},
		{"string unchanged", `"{}"`, `"{}"`},
		{"trailing data unchanged", `{} {}`, `{} {}`},
		{"broken unchanged", `{"a":`, `{"a":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fill([]byte(tt.in), fillNames, fillValue)
			if err != nil || string(got) != tt.want {
				t.Errorf("fill(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// FuzzFill: for any input, fill returns it unchanged unless it is one
// JSON object; then a JSON object with every name, each member of the
// input with its value, and the input's bytes after its opening brace.
func FuzzFill(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":1}`, `{"b":[{"a":2}],"c":"\u00e9"}`, `[1]`, `{"a":1,"a":2}`, ` { "x" : 1e400 } `, `{"a":`, "{\"\xff\":1}",
		`{"carp_version":"1.0","task":{"goal":"g"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := fill(in, fillNames, fillValue)
		if err != nil {
			t.Fatal(err)
		}
		have, ok := members(in)
		if t := bytes.TrimSpace(in); len(t) == 0 || string(t) == "null" {
			have, ok = nil, true
			in = []byte("{}")
		}
		if !ok {
			if !bytes.Equal(out, in) {
				t.Fatalf("fill(%q) = %q, want it unchanged", in, out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("fill(%q) = %q, not JSON", in, out)
		}
		got, ok := members(out)
		if !ok {
			t.Fatalf("fill(%q) = %q, not one object", in, out)
		}
		for _, n := range fillNames {
			found := false
			for _, g := range got {
				found = found || g == n
			}
			if !found {
				t.Fatalf("fill(%q) = %q, no %s", in, out, n)
			}
		}
		for _, h := range have {
			found := false
			for _, g := range got {
				found = found || g == h
			}
			if !found {
				t.Fatalf("fill(%q) = %q, lost %q", in, out, h)
			}
		}
		i := bytes.IndexByte(in, '{')
		if !bytes.HasSuffix(out, in[i+1:]) {
			t.Fatalf("fill(%q) = %q, does not end with the input's members", in, out)
		}
	})
}

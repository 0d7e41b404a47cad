package strictjson

import (
	"slices"
	"strconv"
	"testing"
)

func TestScanFlat(t *testing.T) {
	type member struct {
		name, value string
		kind        Kind
	}
	for _, c := range []struct {
		in   string
		ok   bool
		want []member
	}{
		{`{}`, true, nil},
		{`{"a":"x","b":null,"c":12}`, true, []member{{"a", "x", KindString}, {"b", "", KindNull}, {"c", "12", KindUint}}},
		{`{"a":"x","a":"y"}`, false, nil}, // a name twice
		{`{"a": "x"}`, false, nil},        // whitespace
		{`{"a":"\u0041"}`, false, nil},    // an escape
		{`{"a":"é"}`, false, nil},         // not ASCII
		{`{"a":{"b":1}}`, false, nil},     // not flat
		{`{"a":01}`, false, nil},          // a leading zero
		{`{"a":-1}`, false, nil},          // a sign
		{`{"a":9999999999999999999}`, true, []member{{"a", "9999999999999999999", KindUint}}},
		{`{"a":18446744073709551615}`, false, nil}, // more than 19 digits
		{`{"a":1.5}`, false, nil},                  // a fraction
		{`{"a":true}`, false, nil},                 // another kind
		{`{"a":"x"}x`, false, nil},                 // trailing data
		{`{"a":"x",}`, false, nil},                 // a trailing comma
		{`{"a":"x"`, false, nil},                   // cut short
		{`{"a":nul}`, false, nil},                  // not null
		{`["a"]`, false, nil},                      // not an object
	} {
		var got []member
		ok := ScanFlat([]byte(c.in), func(name, value []byte, kind Kind) {
			got = append(got, member{string(name), string(value), kind})
		})
		if ok != c.ok || ok && !slices.Equal(got, c.want) {
			t.Errorf("ScanFlat(%s) = %v %v, want %v %v", c.in, ok, got, c.ok, c.want)
		}
	}
}

// FuzzScanFlat: what ScanFlat accepts, DecodeFields accepts too, with the
// same members and values.
func FuzzScanFlat(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"x","b":null,"c":12}`, `{"a":"x","a":"y"}`, `{"a":0}`, `{"checkpoint_id":"c","parent":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := map[string]any{}
		n := 0
		if !ScanFlat(b, func(name, value []byte, kind Kind) {
			n++
			switch kind {
			case KindString:
				got[string(name)] = string(value)
			case KindNull:
				got[string(name)] = nil
			case KindUint:
				f, err := strconv.ParseFloat(string(value), 64)
				if err != nil {
					t.Fatalf("ScanFlat(%q): number %q: %v", b, value, err)
				}
				got[string(name)] = f
			}
		}) {
			return
		}
		var full map[string]any
		if err := DecodeFields(b, &full); err != nil {
			t.Fatalf("ScanFlat accepts %q, DecodeFields: %v", b, err)
		}
		if n != len(full) || len(got) != len(full) {
			t.Fatalf("ScanFlat(%q) saw %d members (%v), DecodeFields %v", b, n, got, full)
		}
		for k, v := range full {
			if g, ok := got[k]; !ok || g != v {
				t.Fatalf("ScanFlat(%q): %q = %v, DecodeFields %v", b, k, got[k], v)
			}
		}
	})
}

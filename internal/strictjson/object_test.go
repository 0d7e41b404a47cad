package strictjson

import (
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestScanObject(t *testing.T) {
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
		{`{"a":{"b":[1,-2.5e+3,"\n",true,false,null,{}],"c":[]},"d":"é"}`, true, []member{
			{"a", `{"b":[1,-2.5e+3,"\n",true,false,null,{}],"c":[]}`, KindOther}, {"d", `"é"`, KindOther}}},
		{`{"a":0,"b":-0,"c":1.0,"d":18446744073709551615}`, true, []member{
			{"a", "0", KindUint}, {"b", "-0", KindOther}, {"c", "1.0", KindOther}, {"d", "18446744073709551615", KindOther}}},
		{`{"a":9999999999999999999,"b":01}`, false, nil}, // a leading zero
		{`{"a":9999999999999999999}`, true, []member{{"a", "9999999999999999999", KindUint}}},
		{`{"a":"x","a":"y"}`, false, nil},        // a name twice
		{`{"a":{"b":1,"b":2}}`, false, nil},      // a name twice, nested
		{`{"a":[{"b":1,"b":2}]}`, false, nil},    // a name twice, in an array
		{`{"a":{"b":1},"c":{"b":2}}`, true, nil}, // one name in two objects
		{`{"a": "x"}`, false, nil},               // whitespace
		{`{"a":[1, 2]}`, false, nil},             // whitespace, nested
		{`{"a":"\u0041\u00e9\uFFFF"}`, true, []member{{"a", `"\u0041\u00e9\uFFFF"`, KindOther}}},
		{`{"a":"\ud83d\ude80"}`, false, nil},     // a surrogate pair
		{`{"a":"\udc00"}`, false, nil},           // a lone surrogate
		{`{"a":"\u00g1"}`, false, nil},           // not hex
		{`{"a":"\u00"}`, false, nil},             // cut short
		{`{"a\/":1}`, false, nil},                // an escape in a name
		{`{"a":"\x"}`, false, nil},               // not an escape
		{"{\"a\":\"\xff\"}", false, nil},         // invalid UTF-8
		{"{\"a\":\"\xed\xa0\x80\"}", false, nil}, // a surrogate
		{"{\"a\":\"\x01\"}", false, nil},         // a control character
		{`{"a":01}`, false, nil},                 // a leading zero
		{`{"a":1.}`, false, nil},                 // no fraction digits
		{`{"a":1e}`, false, nil},                 // no exponent digits
		{`{"a":-}`, false, nil},                  // a sign alone
		{`{"a":tru}`, false, nil},                // not true
		{`{"a":[1,]}`, false, nil},               // a trailing comma
		{`{"a":[1}`, false, nil},                 // unclosed
		{`{"a":"x"}x`, false, nil},               // trailing data
		{`{"a":"x",}`, false, nil},               // a trailing comma
		{`{0":""}`, false, nil},                  // a name not a string
		{`["a"]`, false, nil},                    // not an object
	} {
		var got []member
		ok := ScanObject([]byte(c.in), func(name, value []byte, kind Kind) {
			got = append(got, member{string(name), string(value), kind})
		})
		if ok != c.ok || ok && c.want != nil && !slices.Equal(got, c.want) {
			t.Errorf("ScanObject(%s) = %v %v, want %v %v", c.in, ok, got, c.ok, c.want)
		}
	}
	deep := []byte(`{"a":` + string(bytesRepeat('[', maxObjectDepth+1)) + string(bytesRepeat(']', maxObjectDepth+1)) + `}`)
	if ScanObject(deep, func([]byte, []byte, Kind) {}) {
		t.Errorf("ScanObject accepts %d levels of nesting", maxObjectDepth+2)
	}
}

func bytesRepeat(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

// FuzzScanObject: what ScanObject accepts, DecodeFields accepts too, with
// the same members and values.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"x","b":null,"c":12}`, `{"a":{"b":[1,-2.5e+3,"\n",true,false,null,{}],"c":[]},"d":"é"}`,
		`{"a":{"b":1,"b":2}}`, `{"confidence":"0.9","id":"c1","intent":"i","parent":null,"payload":{"artifacts":[],"content":"x","files_changed":["a.go"]},"resource_usage":{"cost":0.25,"tokens_consumed":12},"status":"final","timestamp":"t","type":"code","workspace":"w"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		type member struct {
			value string
			kind  Kind
		}
		got := map[string]member{}
		n := 0
		if !ScanObject(b, func(name, value []byte, kind Kind) {
			n++
			got[string(name)] = member{string(value), kind}
		}) {
			return
		}
		var full map[string]jsontext.Value
		if err := DecodeFields(b, &full); err != nil {
			t.Fatalf("ScanObject accepts %q, DecodeFields: %v", b, err)
		}
		if n != len(full) || len(got) != len(full) {
			t.Fatalf("ScanObject(%q) saw %d members (%v), DecodeFields %v", b, n, got, full)
		}
		for k, v := range full {
			g, ok := got[k]
			want := string(v)
			switch g.kind {
			case KindString:
				want = want[1 : len(want)-1]
			case KindNull:
				want = ""
				if string(v) != "null" {
					ok = false
				}
			}
			if !ok || g.value != want {
				t.Fatalf("ScanObject(%q): %q = %v, DecodeFields %s", b, k, got[k], v)
			}
		}
	})
}

// TestStrings: each string holds its value's bytes (not the values
// themselves, which the caller's buffer may change), made in one
// allocation.
func TestStrings(t *testing.T) {
	src := [][]byte{[]byte("id-1"), nil, []byte("w"), []byte("")}
	var a, b, c, d string
	dst := []*string{&a, &b, &c, &d}
	Strings(dst, src)
	clear(src[0])
	if a != "id-1" || b != "" || c != "w" || d != "" {
		t.Fatalf("Strings = %q %q %q %q", a, b, c, d)
	}
	src[0] = []byte("id-1")
	if n := testing.AllocsPerRun(100, func() { Strings(dst, src) }); n != 1 {
		t.Errorf("Strings allocates %v times, want 1", n)
	}
}

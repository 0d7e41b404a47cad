package casstore_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/casstore"
)

const (
	emptyHex = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	abcHex   = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
	zeroText = "blake3:0000000000000000000000000000000000000000000000000000000000000000"
)

// TestRefOfGolden checks RefOf against the published BLAKE3-256 values.
func TestRefOfGolden(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", "blake3:" + emptyHex},
		{"abc", "blake3:" + abcHex},
	}
	for _, tt := range tests {
		if got := casstore.RefOf([]byte(tt.in)).String(); got != tt.want {
			t.Errorf("RefOf(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    casstore.Ref
		wantErr error
	}{
		{"empty object", "blake3:" + emptyHex, casstore.RefOf(nil), nil},
		{"abc", "blake3:" + abcHex, casstore.RefOf([]byte("abc")), nil},
		{"zero", zeroText, casstore.Ref{}, nil},
		{"empty string", "", casstore.Ref{}, casstore.ErrInvalidRef},
		{"prefix only", "blake3:", casstore.Ref{}, casstore.ErrInvalidRef},
		{"uppercase hex", "blake3:" + strings.ToUpper(emptyHex), casstore.Ref{}, casstore.ErrInvalidRef},
		{"one uppercase digit", "blake3:" + emptyHex[:63] + "F", casstore.Ref{}, casstore.ErrInvalidRef},
		{"uppercase prefix", "BLAKE3:" + emptyHex, casstore.Ref{}, casstore.ErrInvalidRef},
		{"sha256", "sha256:" + emptyHex, casstore.Ref{}, casstore.ErrInvalidRef},
		{"no prefix", emptyHex, casstore.Ref{}, casstore.ErrInvalidRef},
		{"short", "blake3:" + emptyHex[:62], casstore.Ref{}, casstore.ErrInvalidRef},
		{"long", "blake3:" + emptyHex + "00", casstore.Ref{}, casstore.ErrInvalidRef},
		{"odd length", "blake3:" + emptyHex[:63], casstore.Ref{}, casstore.ErrInvalidRef},
		{"non-hex", "blake3:" + emptyHex[:63] + "g", casstore.Ref{}, casstore.ErrInvalidRef},
		{"trailing newline", "blake3:" + emptyHex + "\n", casstore.Ref{}, casstore.ErrInvalidRef},
		{"leading space", " blake3:" + emptyHex, casstore.Ref{}, casstore.ErrInvalidRef},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := casstore.Parse(tt.in)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Parse(%q) = %v, %v, want %v, %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err == nil && got.String() != tt.in {
				t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got.String(), tt.in)
			}
		})
	}
}

func TestParseErrorTruncatesInput(t *testing.T) {
	in := strings.Repeat("x", 10000)
	_, err := casstore.Parse(in)
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("Parse(10000 x's) error = %d bytes, want an error under 200 bytes", len(err.Error()))
	}
}

func TestMustParse(t *testing.T) {
	if got := casstore.MustParse("blake3:" + abcHex); got != casstore.RefOf([]byte("abc")) {
		t.Errorf("MustParse(abc ref) = %v, want %v", got, casstore.RefOf([]byte("abc")))
	}
	defer func() {
		if recover() == nil {
			t.Errorf("MustParse(%q) did not panic", "bogus")
		}
	}()
	casstore.MustParse("bogus")
}

func TestRefMethods(t *testing.T) {
	var zero casstore.Ref
	if !zero.IsZero() || zero.String() != zeroText {
		t.Errorf("zero Ref: IsZero() = %v, String() = %q, want true, %q", zero.IsZero(), zero.String(), zeroText)
	}
	r := casstore.RefOf([]byte("abc"))
	if r.IsZero() {
		t.Errorf("RefOf(abc).IsZero() = true, want false")
	}
	b := r.Bytes()
	if hex.EncodeToString(b) != abcHex {
		t.Fatalf("RefOf(abc).Bytes() = %x, want %s", b, abcHex)
	}
	b[0] ^= 0xff
	if r.String() != "blake3:"+abcHex {
		t.Errorf("modifying Bytes() changed the Ref to %s", r)
	}
	if got, err := casstore.FromBytes(r.Bytes()); got != r || err != nil {
		t.Errorf("FromBytes(%x) = %v, %v, want %v, nil", r.Bytes(), got, err, r)
	}
	if _, err := casstore.FromBytes(make([]byte, 31)); !errors.Is(err, casstore.ErrInvalidRef) {
		t.Errorf("FromBytes(31 bytes) error = %v, want ErrInvalidRef", err)
	}
	lo, hi := casstore.MustParse(zeroText), casstore.RefOf(nil) // af13... > 0000...
	if lo.Compare(hi) != -1 || hi.Compare(lo) != 1 || hi.Compare(hi) != 0 {
		t.Errorf("Compare(%v, %v) = %d, want -1", lo, hi, lo.Compare(hi))
	}
}

func TestJSON(t *testing.T) {
	type doc struct {
		Head  casstore.Ref         `json:"head"`
		Zero  casstore.Ref         `json:"zero"`
		Index map[casstore.Ref]int `json:"index"`
	}
	in := doc{Head: casstore.RefOf([]byte("abc")), Index: map[casstore.Ref]int{casstore.RefOf(nil): 1}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("json.Marshal(%+v) error = %v", in, err)
	}
	want := `{"head":"blake3:` + abcHex + `","zero":"` + zeroText + `","index":{"blake3:` + emptyHex + `":1}}`
	if string(b) != want {
		t.Errorf("json.Marshal(%+v) = %s, want %s", in, b, want)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil || out.Head != in.Head || out.Zero != in.Zero || out.Index[casstore.RefOf(nil)] != 1 {
		t.Errorf("json.Unmarshal(%s) = %+v, %v, want %+v, nil", b, out, err, in)
	}

	bad := []string{`"blake3:` + strings.ToUpper(abcHex) + `"`, `"sha256:` + abcHex + `"`, `""`, `42`}
	for _, s := range bad {
		var r casstore.Ref
		if err := json.Unmarshal([]byte(s), &r); err == nil {
			t.Errorf("json.Unmarshal(%s) = %v, nil, want error", s, r)
		}
	}
}

func TestCorruptError(t *testing.T) {
	ref := casstore.RefOf([]byte("abc"))
	err := casstore.Verify(ref, []byte("abd"))
	var ce *casstore.CorruptError
	if !errors.Is(err, casstore.ErrCorrupt) || !errors.As(err, &ce) || ce.Ref != ref || ce.Got != casstore.RefOf([]byte("abd")) {
		t.Fatalf("Verify(abc ref, abd) = %v, want *CorruptError{Ref: abc, Got: abd}", err)
	}
	if !strings.HasPrefix(err.Error(), "casstore: ") || !strings.Contains(err.Error(), ref.String()) {
		t.Errorf("CorruptError.Error() = %q, want casstore: prefix and %s", err, ref)
	}
	if err := casstore.Verify(ref, []byte("abc")); err != nil {
		t.Errorf("Verify(abc ref, abc) = %v, want nil", err)
	}
}

func FuzzParseRef(f *testing.F) {
	f.Add("blake3:" + emptyHex)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := casstore.Parse(s)
		if err != nil {
			if !errors.Is(err, casstore.ErrInvalidRef) {
				t.Fatalf("Parse(%q) error = %v, want ErrInvalidRef", s, err)
			}
			return
		}
		if got := r.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q, want the input", s, got)
		}
		r2, err := casstore.Parse(r.String())
		if r2 != r || err != nil {
			t.Fatalf("Parse(%q) = %v, %v, want %v, nil", r.String(), r2, err, r)
		}
		text, _ := r.MarshalText()
		var r3 casstore.Ref
		if err := r3.UnmarshalText(text); r3 != r || err != nil || !bytes.Equal(text, []byte(s)) {
			t.Fatalf("UnmarshalText(%q) = %v, %v, want %v, nil", text, r3, err, r)
		}
	})
}

func BenchmarkRefOf(b *testing.B) {
	data := bytes.Repeat([]byte{0xa5}, 1024)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		casstore.RefOf(data)
	}
}

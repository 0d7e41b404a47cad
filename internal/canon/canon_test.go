package canon_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/internal/canon"
	"github.com/wacpd/wacpd/trail"
)

// reference is the canonical form the slow way: encoding/json, then
// jcs.Transform.
func reference(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

type namedString string

// TestAppendValueMatchesReference: for every kind of value trail bodies
// carry, the direct writer gives the reference's bytes (encoding/json, then
// jcs.Transform), and it declines what it does not handle.
func TestAppendValueMatchesReference(t *testing.T) {
	s := "pointed"
	var nilStr *string
	handled := []any{
		nil, "", "plain", "<>&\u2028\u2029", "bad\xffutf8", "ctl\x00\x1f\"\\", "é✓😀",
		true, false, 0, -1, 42, int64(1 << 53), int64(-(1 << 53)), int32(-7), uint32(7), uint64(1 << 53),
		0.0, math.Copysign(0, -1), 1.5, -2.25, 1e15, 1e20, 1e21, 1e-7, 123456.789, 5e-324, math.MaxFloat64, 0.1 + 0.2,
		&s, nilStr, []string{}, []string{"a", "<b>"}, []string(nil), []any{}, []any{1, "x", nil, []any{true}},
		[]any(nil), map[string]any{}, map[string]any(nil), map[string]string{"b": "2", "a": "1"},
		map[string]string(nil), namedString("named"), trail.EventCheckpointCreated,
		map[string]any{"z": 1, "a": map[string]any{"y": []string{"q"}, "b": nil}, "m": 2.5, "A": "upper", "_": "u"},
	}
	for _, v := range handled {
		want, err := reference(v)
		if err != nil {
			t.Fatalf("Canonical(%#v): %v", v, err)
		}
		got, ok := canon.AppendValue(nil, v)
		if !ok {
			t.Errorf("canon.AppendValue(%#v) declined", v)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("canon.AppendValue(%#v) = %s, want %s", v, got, want)
		}
	}
	declined := []any{
		struct{ A int }{1}, int64(1<<53 + 1), uint64(math.MaxUint64), math.NaN(), math.Inf(1),
		map[string]any{"é": 1}, map[string]any{"a\"b": 1}, []byte("x"), json.RawMessage(`{}`),
		[]any{struct{}{}}, map[string]any{"k": struct{}{}},
	}
	for _, v := range declined {
		if got, ok := canon.AppendValue(nil, v); ok {
			t.Errorf("canon.AppendValue(%#v) = %s, want it declined", v, got)
		}
	}
}

// FuzzAppendValue decodes arbitrary JSON as encoding/json does and
// checks that the direct writer, when it accepts the value, writes the
// reference's bytes.
func FuzzAppendValue(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x"]}`, `{"n":1e21,"f":0.000001,"s":"<\u2028>"}`,
		`{"Z":{"y":{"x":[]}},"a":-0.0}`, `[1.7976931348623157e308,5e-324]`, `"\ud800"`, `{"é":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		got, ok := canon.AppendValue(nil, v)
		if !ok {
			return
		}
		want, err := reference(v)
		if err != nil {
			t.Fatalf("appendCanonical accepted %s, which Canonical refuses: %v", data, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canon.AppendValue(%s) = %s, want %s", data, got, want)
		}
	})
}

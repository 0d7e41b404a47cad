package trace_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/trace"
)

// FuzzReadJSONL: any input is either an error wrapping ErrFormat or events
// that write back and read again to the same events; Verify never panics.
func FuzzReadJSONL(f *testing.F) {
	var seed bytes.Buffer
	if err := trace.WriteJSONL(&seed, chainOf(f, 3)); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"trace_version":1}`))
	f.Add([]byte(`{"payload":[1]}`))
	f.Add([]byte(strings.Repeat("x", 100)))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := trace.ReadJSONL(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, trace.ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		trace.Verify(events)
		var out bytes.Buffer
		if err := trace.WriteJSONL(&out, events); err != nil {
			t.Fatal(err)
		}
		again, err := trace.ReadJSONL(&out)
		if err != nil || len(again) != len(events) {
			t.Fatalf("round trip: %d events, %v; want %d", len(again), err, len(events))
		}
	})
}

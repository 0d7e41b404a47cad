package trail

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzEntryJSON checks that decoding arbitrary bytes as an entry never
// panics, and that a decoded entry re-encodes to a fixed point: encode,
// decode, encode gives the same bytes and the same entry, and hashes the same.
// Seeds: testdata/fuzz/FuzzEntryJSON (entries as the trail writes them,
// null fields, odd bodies) and the entries below.
func FuzzEntryJSON(f *testing.F) {
	f.Add([]byte(`{"id":"01JDAXQ5Z0B2C3D4E5F6G7H8J9","timestamp":"2026-11-21T22:48:25.123456789Z","workspace":null,"actor":"protocol","event_type":"system_degraded","body":{"reason":"r"},"prev_hash":null,"integrity":{"entry_hash":"blake3:00","algorithm":"blake3-256"}}`))
	f.Add([]byte(`{"workspace":"","prev_hash":"","body":null}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"body":  [ 1 , 2.50, "x" ] , "integrity":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Entry
		if err := e.UnmarshalJSON(data); err != nil {
			return
		}
		b1, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON(%+v) after a successful decode of %q: %v", e, data, err)
		}
		var e2 Entry
		if err := e2.UnmarshalJSON(b1); err != nil {
			t.Fatalf("UnmarshalJSON(%s) of our own encoding: %v", b1, err)
		}
		b2, err := e2.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON(%+v): %v", e2, err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable:\n first %s\nsecond %s", b1, b2)
		}
		var e3 Entry
		if err := json.Unmarshal(b2, &e3); err != nil {
			t.Fatalf("json.Unmarshal(%s): %v", b2, err)
		}
		if !reflect.DeepEqual(e2, e3) {
			t.Fatalf("decode is not stable: %+v, then %+v", e2, e3)
		}
		h2, err2 := Hash(e2)
		h3, err3 := Hash(e3)
		if h2 != h3 || (err2 == nil) != (err3 == nil) {
			t.Fatalf("Hash differs for equal entries: %s, %v and %s, %v", h2, err2, h3, err3)
		}
	})
}

package checkpointchain

import (
	"reflect"
	"testing"
)

// FuzzRequestFields: a request the fast reader takes (requestFields) the
// strict decoder decodes to the same request.
func FuzzRequestFields(f *testing.F) {
	f.Add([]byte(`{"type":"artifact","payload":{"artifacts":[],"content":"x","files_changed":["bench.txt","a/b"]},"intent":"benchmark","parent":null,"status":"provisional","confidence":"high"}`))
	f.Add([]byte(`{"type":"progress","payload":{"content":"line\nnext \u00e9\"q\""},"intent":"r\u00e9sum\u00e9","parent":"01JA","status":"final","confidence":"low"}`))
	f.Add([]byte(`{"type":"t","payload":{},"intent":"i","status":"final","confidence":"low","resource_usage":{"cost":1}}`))
	f.Add([]byte(`{"type":"t","payload":{"files_changed":["a",]},"intent":"i"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := requestFields(data)
		if !ok {
			return
		}
		strict, err := decodeRequestStrict(data)
		if err != nil {
			t.Fatalf("requestFields(%q) = %+v, the strict decoder: %v", data, fast, err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("requestFields(%q) = %#v, the strict decoder %#v", data, fast, strict)
		}
	})
}

// TestRequestFieldsTakesClientRequests: what the client library sends for
// a plain checkpoint, with escapes in its content or not, takes the fast
// reader, and a request with resource usage or an extra payload member
// does not (the strict decoder reads those).
func TestRequestFieldsTakesClientRequests(t *testing.T) {
	for _, tt := range []struct {
		body string
		fast bool
	}{
		{`{"type":"artifact","payload":{"artifacts":[],"content":"x","files_changed":["bench.txt"]},"intent":"benchmark","parent":null,"status":"provisional","confidence":"high"}`, true},
		{`{"type":"artifact","payload":{"artifacts":[],"content":"a\nb\t\"c\" é","files_changed":[]},"intent":"i","parent":"01JA","status":"final","confidence":"low"}`, true},
		{`{"type":"artifact","payload":{"content":"x","extra":1},"intent":"i","parent":null,"status":"final","confidence":"low"}`, false},
		{`{"type":"artifact","payload":{"content":"x"},"intent":"i","parent":null,"status":"final","confidence":"low","resource_usage":{"cost":1}}`, false},
		{`{"type":"artifact","payload":{"content":"x"},"intent":"i","parent":null,"status":"final","confidence":"low","unknown":1}`, false},
	} {
		r, ok := requestFields([]byte(tt.body))
		if ok != tt.fast {
			t.Errorf("requestFields(%s) took it: %v, want %v", tt.body, ok, tt.fast)
			continue
		}
		if ok {
			strict, err := decodeRequestStrict([]byte(tt.body))
			if err != nil || !reflect.DeepEqual(r, strict) {
				t.Errorf("requestFields(%s) = %#v; strict %#v, %v", tt.body, r, strict, err)
			}
		}
	}
}

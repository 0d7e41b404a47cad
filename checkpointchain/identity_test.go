package checkpointchain

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeIdentity: identityFields, the fast path of DecodeIdentity,
// gives what the full decoder gives wherever it accepts the bytes; it
// accepts the golden encodings.
func FuzzDecodeIdentity(f *testing.F) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil || len(goldens) == 0 {
		f.Fatalf("no golden encodings: %v", err)
	}
	for _, name := range goldens {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		if _, ok := identityFields(b); !ok {
			f.Errorf("identityFields refuses %s, an encoding Encode writes", name)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"id":"a","id":"b"}`))
	f.Add([]byte(`{"id":1,"parent":null,"payload":{"x":[1,2]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := identityFields(b)
		if !ok {
			return
		}
		full, err := decodeIdentity(b)
		if err != nil {
			t.Fatalf("identityFields(%q) = %+v, the full decoder: %v", b, fast, err)
		}
		if fast != full {
			t.Fatalf("identityFields(%q) = %+v, the full decoder %+v", b, fast, full)
		}
	})
}

package chainstore

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/internal/strictjson"
)

// FuzzIndexIs: where indexIs, the fast path of checking an index record,
// says the record holds a workspace, position and digest, the full decoder
// reads those from it; indexIs accepts the records Put writes; appendIndex,
// with which Put writes them, writes what encoding/json would.
func FuzzIndexIs(f *testing.F) {
	for _, ws := range []string{"01JA0000000000000000000WS1", "w", ""} {
		ix := indexEntry{Workspace: ws, N: 42, Digest: casstore.RefOf([]byte(ws))}
		put, err := json.Marshal(ix) // as Put writes it (appendIndex, or setJSON)
		if err != nil {
			f.Fatal(err)
		}
		if !indexIs(put, ix.Workspace, ix.N, ix.Digest) {
			f.Fatalf("indexIs refuses %s, the record Put writes", put)
		}
		f.Add(put, ws, ix.N, []byte(ws))
	}
	f.Add([]byte(`{"workspace":"a<b","n":1,"digest":""}`), "a<b", uint64(1), []byte("x"))
	f.Fuzz(func(t *testing.T, v []byte, ws string, n uint64, content []byte) {
		d := casstore.RefOf(content)
		// Put writes appendIndex's bytes when it can: encoding/json's.
		if b, ok := appendIndex(nil, ws, n, d); ok {
			if want, _ := json.Marshal(indexEntry{Workspace: ws, N: n, Digest: d}); !bytes.Equal(b, want) {
				t.Fatalf("appendIndex(%q, %d, %v) = %s, encoding/json %s", ws, n, d, b, want)
			}
		}
		if !indexIs(v, ws, n, d) {
			return
		}
		var full indexEntry
		if err := strictjson.DecodeFields(v, &full); err != nil {
			t.Fatalf("indexIs(%q, %q, %d, %v), the full decoder: %v", v, ws, n, d, err)
		}
		if want := (indexEntry{Workspace: ws, N: n, Digest: d}); full != want {
			t.Fatalf("indexIs(%q, %q, %d, %v), the full decoder reads %+v", v, ws, n, d, full)
		}
	})
}

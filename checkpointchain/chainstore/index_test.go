package chainstore

import (
	"encoding/json"
	"testing"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/internal/strictjson"
)

// FuzzIndexIs: where indexIs, the fast path of checking an index record,
// says the record holds a workspace, position and digest, the full decoder
// reads those from it; indexIs accepts the records Put writes.
func FuzzIndexIs(f *testing.F) {
	for _, ws := range []string{"01JA0000000000000000000WS1", "w", ""} {
		ix := indexEntry{Workspace: ws, N: 42, Digest: casstore.RefOf([]byte(ws))}
		put, err := json.Marshal(ix) // as Put writes it (setJSON)
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

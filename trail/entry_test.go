package trail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/internal/fixture"
)

func TestEntry_MarshalJSON(t *testing.T) {
	full := Entry{
		ID: "01JDAXQ0000000000000000000", Timestamp: "2026-11-21T22:48:25.123456789Z", Workspace: "ws-a",
		Actor: "worker", EventType: EventWorkspaceStateChanged, Body: json.RawMessage(`{"a":1}`),
		PrevHash: "blake3:" + fmt.Sprintf("%064x", 1),
		Integrity: Integrity{EntryHash: "blake3:" + fmt.Sprintf("%064x", 2), Algorithm: Algorithm,
			LocalHash: "blake3:" + fmt.Sprintf("%064x", 3), Signature: "sig", Signer: "runtime"},
	}
	system := full
	system.Workspace, system.PrevHash, system.Integrity.LocalHash = "", "", ""
	tests := []struct {
		name          string
		e             Entry
		wantWorkspace string
		wantPrevHash  string
	}{
		{"workspace entry", full, `"ws-a"`, `"` + full.PrevHash + `"`},
		{"first system entry", system, "null", "null"},
		{"first entry of a workspace", func() Entry { e := full; e.PrevHash = ""; return e }(), `"ws-a"`, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.e)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			wantKeys := []string{"actor", "body", "event_type", "id", "integrity", "prev_hash", "timestamp", "workspace"}
			if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, wantKeys) {
				t.Errorf("json.Marshal(entry) keys = %v, want %v", got, wantKeys)
			}
			if got := string(m["workspace"]); got != tt.wantWorkspace {
				t.Errorf("workspace = %s, want %s", got, tt.wantWorkspace)
			}
			if got := string(m["prev_hash"]); got != tt.wantPrevHash {
				t.Errorf("prev_hash = %s, want %s", got, tt.wantPrevHash)
			}
			var back Entry
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("json.Unmarshal(%s): %v", b, err)
			}
			if !reflect.DeepEqual(back, tt.e) {
				t.Errorf("round trip = %+v, want %+v", back, tt.e)
			}
			// Pointer and value encode the same.
			bp, err := json.Marshal(&tt.e)
			if err != nil || !bytes.Equal(bp, b) {
				t.Errorf("json.Marshal(&e) = %s, %v, want %s", bp, err, b)
			}
		})
	}

	t.Run("integrity optional fields omitted", func(t *testing.T) {
		e := system
		e.Integrity = Integrity{EntryHash: full.Integrity.EntryHash, Algorithm: Algorithm}
		got := fixture.RawField(t, e, "integrity")
		want := `{"entry_hash":"` + full.Integrity.EntryHash + `","algorithm":"blake3-256"}`
		if got != want {
			t.Errorf("integrity = %s, want %s", got, want)
		}
	})

	t.Run("decode errors", func(t *testing.T) {
		for _, in := range []string{`[]`, `{"id":5}`, `{"workspace":7}`, `{"prev_hash":{}}`, `{`} {
			var e Entry
			if err := json.Unmarshal([]byte(in), &e); err == nil {
				t.Errorf("json.Unmarshal(%s) = nil error, want an error", in)
			}
		}
	})
}

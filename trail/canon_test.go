package trail

import (
	"encoding/json"
	"testing"
)

func canonicalBody(t testing.TB, v any) json.RawMessage {
	b, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFastHashMatchesHash: the direct canonical writer gives the reference
// hash for system and workspace entries and for every awkward string.
func TestFastHashMatchesHash(t *testing.T) {
	strs := []string{"", "plain", "quote\"back\\slash", "ctl\x00\x01\x1f\x7f", "\b\f\n\r\t", "é✓😀",
		"\u2028\u2029", "<>&", "bad\xffutf8\xc3", "\xed\xa0\x80 surrogate bytes", "01M80ECCTW6WBZQV23DRYHTJM8"}
	for _, s := range strs {
		for _, ws := range []string{"", s, "ws-1"} {
			e := Entry{ID: s, Timestamp: s, Workspace: ws, Actor: s, EventType: EventType(s),
				Body: canonicalBody(t, map[string]any{"k": s, "n": 1.5}), PrevHash: s,
				Integrity: Integrity{Algorithm: Algorithm, LocalHash: s}}
			want, err := Hash(e)
			if err != nil {
				t.Fatal(err)
			}
			if got := HashCanonical(e); got != want {
				t.Errorf("HashCanonical(%q, ws %q) = %s, want %s", s, ws, got, want)
			}
		}
	}
}

// FuzzFastHash compares fastHash with Hash on arbitrary strings.
func FuzzFastHash(f *testing.F) {
	f.Add("actor", "id", "ts", "ws", "prev", "local", "body")
	f.Add("\x00", "\xff", "\u2028", "", "", "", "\"")
	f.Fuzz(func(t *testing.T, actor, id, ts, ws, prev, local, body string) {
		e := Entry{ID: id, Timestamp: ts, Workspace: ws, Actor: actor, EventType: EventType(actor),
			Body: canonicalBody(t, map[string]any{body: body}), PrevHash: prev,
			Integrity: Integrity{Algorithm: Algorithm, LocalHash: local}}
		want, err := Hash(e)
		if err != nil {
			return
		}
		if got := HashCanonical(e); got != want {
			t.Fatalf("fastHash = %s, Hash = %s for %+v", got, want, e)
		}
	})
}

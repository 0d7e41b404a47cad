package traillog

import (
	"encoding/json"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

func TestTrail_HashExcludesSignatureFields(t *testing.T) {
	tl := newMemLog(t)
	e := tl.append(tl.wsEv("ws-a"))[0]
	base, err := trail.Hash(e)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		mutate   func(*trail.Entry)
		wantSame bool
	}{
		{"entry_hash", func(e *trail.Entry) { e.Integrity.EntryHash = "x" }, true},
		{"signature", func(e *trail.Entry) { e.Integrity.Signature = "sig" }, true},
		{"signer", func(e *trail.Entry) { e.Integrity.Signer = "runtime" }, true},
		{"local_hash", func(e *trail.Entry) { e.Integrity.LocalHash = "blake3:00" }, false},
		{"algorithm", func(e *trail.Entry) { e.Integrity.Algorithm = "sha-256" }, false},
		{"prev_hash", func(e *trail.Entry) { e.PrevHash = "blake3:00" }, false},
		{"workspace", func(e *trail.Entry) { e.Workspace = "ws-b" }, false},
		{"workspace null", func(e *trail.Entry) { e.Workspace = "" }, false},
		{"actor", func(e *trail.Entry) { e.Actor = "observer" }, false},
		{"event type", func(e *trail.Entry) { e.EventType = trail.EventWorkspaceCreated }, false},
		{"timestamp", func(e *trail.Entry) { e.Timestamp = "2027-01-01T00:00:00.000000000Z" }, false},
		{"id", func(e *trail.Entry) { e.ID = "01ZZZZZZZZZZZZZZZZZZZZZZZZ" }, false},
		{"body", func(e *trail.Entry) { e.Body = json.RawMessage(`{"x":1}`) }, false},
		{"body whitespace", func(e *trail.Entry) { e.Body = json.RawMessage(" " + string(e.Body) + " ") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := e
			tt.mutate(&m)
			got, err := trail.Hash(m)
			if err != nil {
				t.Fatal(err)
			}
			if (got == base) != tt.wantSame {
				t.Errorf("Hash(entry with %s changed) = %s, base %s, want same = %v", tt.name, got, base, tt.wantSame)
			}
		})
	}
}

package traillog

import (
	"testing"

	"github.com/wacpd/wacpd/trail"
)

// TestTrail_ReadBodyFilter: queries on body fields (Trail §6, Standard) are
// AND-combined equality on top-level fields.
func TestTrail_ReadBodyFilter(t *testing.T) {
	tl := newMemLog(t)
	a := tl.ev("w1", "worker", trail.EventCheckpointCreated)
	a.Body = map[string]any{"checkpoint_id": "c1", "workspace": "w1", "type": "artifact", "status": "final",
		"confidence": "high", "parent": nil, "timestamp": a.Timestamp, "n": 3}
	b := tl.ev("w1", "worker", trail.EventCheckpointCreated)
	b.Body = map[string]any{"checkpoint_id": "c2", "workspace": "w1", "type": "artifact", "status": "provisional",
		"confidence": "high", "parent": "c1", "timestamp": b.Timestamp, "n": 4}
	tl.append(a, b)
	tests := []struct {
		name string
		body map[string]string
		want []string
	}{
		{"string field", map[string]string{"checkpoint_id": "c2"}, []string{b.ID}},
		{"and", map[string]string{"status": "final", "type": "artifact"}, []string{a.ID}},
		{"number as text", map[string]string{"n": "4"}, []string{b.ID}},
		{"no match", map[string]string{"status": "final", "checkpoint_id": "c2"}, nil},
		{"missing field", map[string]string{"nope": "x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ids(tl.readAll(trail.Query{Body: tt.body}))
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
				t.Fatalf("Read(body %v) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

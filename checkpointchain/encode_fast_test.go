package checkpointchain

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// TestEncodeMatchesReference: the direct writer gives the bytes of
// encoding/json followed by jcs.Transform for checkpoints with and without
// parents, resource usage in every combination, empty and nil lists and
// awkward strings, and declines what it does not handle.
func TestEncodeMatchesReference(t *testing.T) {
	base := Checkpoint{ID: "01JDAXQ5Z0B2C3D4E5F6G7H8J9", Workspace: "ws", Type: "artifact", Intent: "do <it> & \"go\"",
		Status: StatusProvisional, Confidence: ConfidenceHigh, Timestamp: "2026-11-22T02:00:00.000000001Z",
		Payload: Payload{Content: "line\nbreak é✓😀 \u2028 \x00", FilesChanged: []string{"a.go", "<b>"}}}
	cases := []func(*Checkpoint){
		func(*Checkpoint) {},
		func(c *Checkpoint) { c.Parent = ptr("01JDAXQ5Z0B2C3D4E5F6G7H8J8") },
		func(c *Checkpoint) { c.Payload = Payload{} },
		func(c *Checkpoint) { c.Payload.Artifacts = []string{} },
		func(c *Checkpoint) { c.ResourceUsage = &ResourceUsage{} },
		func(c *Checkpoint) { c.ResourceUsage = &ResourceUsage{Cost: ptr(0.1 + 0.2)} },
		func(c *Checkpoint) { c.ResourceUsage = &ResourceUsage{TokensConsumed: ptr(int64(1 << 53))} },
		func(c *Checkpoint) { c.ResourceUsage = &ResourceUsage{WallTime: ptr("1m30s")} },
		func(c *Checkpoint) {
			c.ResourceUsage = &ResourceUsage{Cost: ptr(1e21), TokensConsumed: ptr(int64(-3)), WallTime: ptr("")}
		},
		func(c *Checkpoint) {
			c.ResourceUsage = &ResourceUsage{Cost: ptr(math.Copysign(0, -1)), WallTime: ptr("x")}
		},
	}
	for i, mod := range cases {
		c := base
		mod(&c)
		want, err := encodeRef(c)
		if err != nil {
			t.Fatalf("case %d: encodeRef: %v", i, err)
		}
		got, ok := appendRecord(nil, c)
		if !ok {
			t.Errorf("case %d: appendRecord declined %+v", i, c)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
	for i, mod := range []func(*Checkpoint){
		func(c *Checkpoint) { c.Payload.Extra = map[string]json.RawMessage{"x": json.RawMessage(`1`)} },
		func(c *Checkpoint) { c.ResourceUsage = &ResourceUsage{TokensConsumed: ptr(int64(1<<53 + 1))} },
		func(c *Checkpoint) { c.ResourceUsage = &ResourceUsage{Cost: ptr(math.Inf(1))} },
	} {
		c := base
		mod(&c)
		if got, ok := appendRecord(nil, c); ok {
			t.Errorf("declined case %d: appendRecord = %s, want it declined", i, got)
		}
	}
}

// FuzzEncode compares the direct writer with the reference on arbitrary
// strings and numbers.
func FuzzEncode(f *testing.F) {
	f.Add("id", "intent", "content", "parent", "file", "1s", 1.5, int64(10), true, true)
	f.Add("\x00\xff", "<&>", "\u2028", "", "", "", 1e-7, int64(-1), false, true)
	f.Fuzz(func(t *testing.T, id, intent, content, parent, file, wall string, cost float64, tokens int64, hasParent, hasUsage bool) {
		c := Checkpoint{ID: id, Workspace: id, Type: intent, Intent: intent, Status: parent, Confidence: file,
			Timestamp: wall, Payload: Payload{Content: content, FilesChanged: []string{file, content}, Artifacts: []string{parent}}}
		if hasParent {
			c.Parent = &parent
		}
		if hasUsage {
			c.ResourceUsage = &ResourceUsage{Cost: &cost, TokensConsumed: &tokens, WallTime: &wall}
		}
		got, ok := appendRecord(nil, c)
		want, err := encodeRef(c)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("appendRecord accepted %+v, which the reference refuses: %v", c, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

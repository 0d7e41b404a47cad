package checkpointchain

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/wacpd/wacpd/casstore"
)

// FuzzReadWire: on whatever ReadWire takes, go-json-experiment's v1
// Unmarshal (the client library's decoder) gives the same checkpoint.
func FuzzReadWire(f *testing.F) {
	parent := "01JAAAAAAAAAAAAAAAAAAAAAAA"
	for _, c := range []Checkpoint{
		{ID: "01JB", Workspace: "01JW", Type: "artifact", Payload: Payload{Content: "x", FilesChanged: []string{"a/b"}, Artifacts: []string{}},
			Intent: "benchmark", Status: "provisional", Confidence: "high", Timestamp: "2026-11-26T08:00:00.000000001Z"},
		{ID: "01JC", Workspace: "01JW", Type: "progress", Payload: Payload{Content: "line\nnext é \"q\" <&>"}, Intent: "résumé",
			Parent: &parent, Status: "final", Confidence: "low", Timestamp: "2026-11-26T08:00:00Z"},
	} {
		c.Digest = casstore.RefOf([]byte(c.ID))
		b, err := Wire(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"id":"x","payload":{"content":"c"},"resource_usage":{"cost":1},"digest":"blake3:00"}`))
	f.Add([]byte(`{"ID":"x","payload":{"content":"c","extra":[1]}}`))
	f.Add([]byte(`{"id":"x","parent":null,"payload":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := ReadWire(data)
		if !ok {
			return
		}
		var slow Checkpoint
		if err := jsonv1.Unmarshal(data, &slow); err != nil {
			t.Fatalf("ReadWire(%q) = %+v, the JSON decoder: %v", data, fast, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("ReadWire(%q) = %#v, the JSON decoder %#v", data, fast, slow)
		}
	})
}

// TestReadWireTakesTheDaemonsReplies: a checkpoint as Wire writes it, with
// escapes in its content or not, with a parent or none, takes the fast
// reader and reads back as it was; one with resource usage or an extra
// payload member does not.
func TestReadWireTakesTheDaemonsReplies(t *testing.T) {
	parent := "01JAAAAAAAAAAAAAAAAAAAAAAA"
	tokens := int64(12)
	base := Checkpoint{ID: "01JB", Workspace: "01JW", Type: "artifact",
		Payload: Payload{Content: "a\nb\t\"c\" é <&>", FilesChanged: []string{"x"}, Artifacts: []string{}},
		Intent:  "i", Status: "final", Confidence: "low", Timestamp: "2026-11-26T08:00:00Z"}
	base.Digest = casstore.RefOf([]byte("x"))
	withParent := base
	withParent.Parent = &parent
	withUsage := base
	withUsage.ResourceUsage = &ResourceUsage{TokensConsumed: &tokens}
	withExtra := base
	withExtra.Payload.Extra = map[string]json.RawMessage{"score": json.RawMessage("3")}
	for _, tt := range []struct {
		name string
		c    Checkpoint
		fast bool
	}{
		{"plain", base, true},
		{"with a parent", withParent, true},
		{"with resource usage", withUsage, false},
		{"with an extra payload member", withExtra, false},
	} {
		b, err := Wire(tt.c)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ReadWire(b)
		if ok != tt.fast {
			t.Errorf("%s: ReadWire took it: %v, want %v", tt.name, ok, tt.fast)
			continue
		}
		if ok && !reflect.DeepEqual(got, tt.c) {
			t.Errorf("%s: ReadWire = %#v, want %#v", tt.name, got, tt.c)
		}
	}
}

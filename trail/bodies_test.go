package trail

import (
	"bytes"
	"testing"
)

// FuzzBodies: each Fields body writes, byte for byte, what EncodeBody
// writes for the map the runtime built before (and an entry hashes), reports
// the fields that map has and their nulls, and passes the registry's check
// for its own event type only.
func FuzzBodies(f *testing.F) {
	f.Add("01JA0000000000000000000CP1", "01JA0000000000000000000WS1", "artifact", "final", "high", "01JA0000000000000000000CP0", true,
		"2026-11-26T21:00:00.000000000Z", "blake3:00ff", "checkpoint", "done", false)
	f.Add("\x00\"\\\u2028é\xff", "", "<&>", "\t", "\u007f", "", false, "", "", "", "", true)
	f.Fuzz(func(t *testing.T, a, b, c, d, e, p string, hasP bool, ts, dg, typ, r string, hasR bool) {
		opt := func(s string, ok bool) *string {
			if !ok {
				return nil
			}
			return &s
		}
		bodies := []struct {
			typ   EventType
			typed Fields
			m     map[string]any
		}{
			{EventCheckpointCreated,
				&CheckpointCreated{CheckpointID: a, Workspace: b, Type: c, Status: d, Confidence: e, Parent: opt(p, hasP), Timestamp: ts, Digest: dg},
				map[string]any{"checkpoint_id": a, "workspace": b, "type": c, "status": d, "confidence": e, "parent": opt(p, hasP), "timestamp": ts, "digest": dg}},
			{EventSignalEmitted,
				&SignalEmitted{SignalID: a, From: b, Type: typ, Reason: opt(r, hasR), Ref: opt(p, hasP), Timestamp: ts},
				map[string]any{"signal_id": a, "from": b, "type": typ, "reason": opt(r, hasR), "ref": opt(p, hasP), "timestamp": ts}},
			{EventSignalDelivered,
				&SignalDelivered{SignalID: a, From: b, DeliveredTo: c, DeliveredAt: ts},
				map[string]any{"signal_id": a, "from": b, "delivered_to": c, "delivered_at": ts}},
		}
		for _, bd := range bodies {
			want, werr := EncodeBody(bd.typ, bd.m)
			got, gerr := EncodeBody(bd.typ, bd.typed)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("%s: typed body %s, %v; the map's %s, %v", bd.typ, got, gerr, want, werr)
			}
			if raw := bd.typed.AppendCanonical(nil); !bytes.Equal(raw, want) && werr == nil {
				t.Fatalf("%s: AppendCanonical = %s, want %s", bd.typ, raw, want)
			}
			for _, name := range []string{"checkpoint_id", "workspace", "type", "status", "confidence", "parent", "timestamp",
				"digest", "signal_id", "from", "reason", "ref", "delivered_to", "delivered_at", "other"} {
				v, present := bd.m[name]
				gp, gn := bd.typed.Field(name)
				if gp != present || gp && gn != (v == (*string)(nil)) {
					t.Fatalf("%s: Field(%q) = %v, %v; the map has %v (%v)", bd.typ, name, gp, gn, present, v)
				}
			}
			for _, other := range []EventType{EventCheckpointCreated, EventSignalEmitted, EventSignalDelivered} {
				if _, err := EncodeBody(other, bd.typed); (err == nil) != (other == bd.typ) && !(other != bd.typ && err == nil && sameFields(other, bd.typ)) {
					t.Fatalf("EncodeBody(%s, a %s body) = %v", other, bd.typ, err)
				}
			}
		}
	})
}

// sameFields reports whether every field event a requires, b's body has.
func sameFields(a, b EventType) bool {
	has := map[string]bool{}
	for _, f := range b.RequiredFields() {
		has[f] = true
	}
	for _, f := range a.RequiredFields() {
		if !has[f] {
			return false
		}
	}
	return true
}

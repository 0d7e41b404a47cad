package traillog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

// TestStoredRoundTrip: the stored form decodes to the entry it was written
// from, by the fast parser and by encoding/json alike, for system and
// workspace entries and strings that need escapes.
func TestStoredRoundTrip(t *testing.T) {
	for _, s := range []stored{
		{Entry: trail.Entry{ID: "01A", Timestamp: "t", Actor: "protocol", EventType: trail.EventSystemDegraded,
			Body: json.RawMessage(`{"reason":"r"}`), Integrity: trail.Integrity{EntryHash: "blake3:aa", Algorithm: trail.Algorithm}}},
		{Entry: trail.Entry{ID: "01B", Timestamp: "t", Workspace: "ws", Actor: "worker", EventType: trail.EventCheckpointCreated,
			Body: json.RawMessage(`{"a":"<\"}\\u0000{[","b":[{}]}`), PrevHash: "blake3:bb",
			Integrity: trail.Integrity{EntryHash: "blake3:cc", Algorithm: trail.Algorithm, LocalHash: "blake3:dd"}}, LocalPrev: "blake3:ee"},
		{Entry: trail.Entry{ID: "quote\"d", Timestamp: "t\n", Workspace: "ws", Actor: "a", EventType: "e",
			Body: json.RawMessage(`{}`), Integrity: trail.Integrity{Algorithm: trail.Algorithm, Signature: "sig", Signer: "me"}}},
	} {
		b := appendStored(nil, s)
		got, err := decodeStored(b)
		if err != nil {
			t.Fatalf("decodeStored(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("decodeStored(%s) = %+v, want %+v", b, got, s)
		}
		var ref stored
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatalf("json.Unmarshal(%s): %v", b, err)
		}
		if !reflect.DeepEqual(ref, s) {
			t.Errorf("json.Unmarshal(%s) = %+v, want %+v", b, ref, s)
		}
	}
}

// TestTrail_BodyWithHTMLCharactersVerifies: a body with <, > and & (which
// encoding/json escapes) and U+2028 is stored canonical and verifies, and an
// entry written by encoding/json in the older form still decodes to the
// canonical body.
func TestTrail_BodyWithHTMLCharactersVerifies(t *testing.T) {
	tl := newMemLog(t)
	ev := tl.ev("ws1", "worker", trail.EventCheckpointCreated)
	ev.Body.(map[string]any)["type"] = "a<b>&c\u2028"
	e := tl.append(ev)[0]
	tl.verifyOK("")
	tl.verifyOK("ws1")

	old, err := json.Marshal(stored{Entry: e})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(old, []byte(`\u003c`)) {
		t.Fatalf("encoding/json did not escape <: %s", old)
	}
	got, err := decodeStored(old)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Entry.Body, e.Body) {
		t.Errorf("body decoded from the encoding/json form = %s, want %s", got.Entry.Body, e.Body)
	}
}

// FuzzDecodeStored: decoding arbitrary bytes never panics; whatever
// decodes re-encodes to a form that decodes to the same entry.
func FuzzDecodeStored(f *testing.F) {
	f.Add(appendStored(nil, stored{Entry: trail.Entry{ID: "01A", Timestamp: "t", Workspace: "w", Actor: "a",
		EventType: "e", Body: json.RawMessage(`{"k":["v",{"n":1}]}`), PrevHash: "p",
		Integrity: trail.Integrity{EntryHash: "h", Algorithm: trail.Algorithm, LocalHash: "l"}}, LocalPrev: "lp"}))
	f.Add([]byte(`{"entry":{"id":"x","body":{"a":"}"}},"local_prev_hash":"q"}`))
	f.Add([]byte(`{"entry":{"id":"x","timestamp":"t","workspace":null,"actor":"a","event_type":"e","body":{"a":[}]},"prev_hash":null,"integrity":{"algorithm":"b"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeStored(data)
		if err != nil {
			return
		}
		again, err := decodeStored(appendStored(nil, s))
		if err != nil {
			t.Fatalf("decodeStored of our own encoding of %+v: %v", s, err)
		}
		if !reflect.DeepEqual(again, s) && !(len(s.Entry.Body) == 0 && string(again.Entry.Body) == "null") {
			t.Fatalf("round trip changed the entry: %+v, then %+v", s, again)
		}
	})
}

// TestAppendHeadDecodes: a trail.Head written directly decodes with
// encoding/json to the same head, with and without its optional fields.
func TestAppendHeadDecodes(t *testing.T) {
	for _, h := range []trail.Head{{}, {Seq: 1 << 40, Hash: "blake3:ab"}, {Seq: 7, Hash: "h\"", ID: "01A", Timestamp: "t<"}} {
		var got trail.Head
		if err := json.Unmarshal(appendHead(nil, h), &got); err != nil || got != h {
			t.Errorf("appendHead(%+v) decodes to %+v, %v", h, got, err)
		}
	}
}

// FuzzParseStored: what the stored-entry parser accepts (scanStored, which
// passes over plain bytes a word at a time, canon.PlainRun) encoding/json
// reads to the same entry.
func FuzzParseStored(f *testing.F) {
	f.Add(appendStored(nil, stored{Entry: trail.Entry{ID: "01A", Timestamp: "t", Workspace: "w", Actor: "a",
		EventType: "e", Body: json.RawMessage(`{"k":["v",{"n":"a long string \"quoted\" past a word é"}]}`), PrevHash: "p",
		Integrity: trail.Integrity{EntryHash: "h", Algorithm: trail.Algorithm, LocalHash: "l"}}, LocalPrev: "lp"}))
	f.Add(appendStored(nil, stored{Entry: trail.Entry{ID: "01B-with-an-id-longer-than-a-word", Timestamp: "2026-11-26T01:02:03.000004Z",
		Actor: "system", EventType: "workspace_created", Body: json.RawMessage(`{}`),
		Integrity: trail.Integrity{EntryHash: "blake3:0123456789abcdef", Algorithm: trail.Algorithm}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ok := parseStored(data)
		if !ok || !json.Valid(s.Entry.Body) {
			return
		}
		var ref stored
		if err := json.Unmarshal(data, &ref); err != nil {
			t.Fatalf("parseStored accepts %q, encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(s, ref) {
			t.Fatalf("parseStored(%q) = %+v, encoding/json %+v", data, s, ref)
		}
	})
}

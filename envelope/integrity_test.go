package envelope_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/envelope"
)

var testKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

func testPub() ed25519.PublicKey { return testKey.Public().(ed25519.PublicKey) }

func provedEnvelope() envelope.Envelope {
	reply := "01M8E2FQZTQSCZSWBNDV9KXWPA"
	env := envelope.Envelope{
		ID: "01M8E2FQZTQSCZSWBNDV9KXWPH", From: "ws-a", To: "ws-b", Originator: "system", Type: "feedback",
		Payload:   envelope.Payload{Format: "markdown", Content: "do the work ✓", Attachments: []string{"cp-1"}},
		InReplyTo: &reply, Rights: []envelope.RightSpec{{Type: envelope.RightSend, Target: "ws-c", RightID: "r1"}},
		Priority: envelope.PriorityUrgent, Timestamp: "2026-01-02T03:04:05.000000006Z", Origin: envelope.OriginAgent,
		Status: envelope.StatusValidated,
	}
	envelope.Prove(testKey, &env)
	return env
}

// TestVerifyProof: every field the proof covers (Security §4.1: id, from,
// to, type, payload, in_reply_to, rights, priority, origin; and originator,
// timestamp) invalidates it when changed; the lifecycle fields do not.
func TestVerifyProof(t *testing.T) {
	other := "x"
	tests := []struct {
		name      string
		edit      func(*envelope.Envelope)
		violation string // "" verifies
	}{
		{"untouched", func(*envelope.Envelope) {}, ""},
		{"status", func(e *envelope.Envelope) { e.Status = envelope.StatusDelivered }, ""},
		{"delivered_at", func(e *envelope.Envelope) { e.DeliveredAt = "2026-01-02T03:04:06Z" }, ""},
		{"delivery", func(e *envelope.Envelope) { e.Delivery = &envelope.Delivery{Attempt: 1} }, ""},
		{"id", func(e *envelope.Envelope) { e.ID += "X" }, envelope.ViolationSignatureInvalid},
		{"from", func(e *envelope.Envelope) { e.From = "ws-z" }, envelope.ViolationSignatureInvalid},
		{"to", func(e *envelope.Envelope) { e.To = "ws-z" }, envelope.ViolationSignatureInvalid},
		{"originator", func(e *envelope.Envelope) { e.Originator = "alice" }, envelope.ViolationSignatureInvalid},
		{"type", func(e *envelope.Envelope) { e.Type = "directive" }, envelope.ViolationSignatureInvalid},
		{"payload.format", func(e *envelope.Envelope) { e.Payload.Format = "json" }, envelope.ViolationSignatureInvalid},
		{"payload.content", func(e *envelope.Envelope) { e.Payload.Content += " " }, envelope.ViolationSignatureInvalid},
		{"payload.attachments", func(e *envelope.Envelope) { e.Payload.Attachments = nil }, envelope.ViolationSignatureInvalid},
		{"in_reply_to", func(e *envelope.Envelope) { e.InReplyTo = &other }, envelope.ViolationSignatureInvalid},
		{"in_reply_to null", func(e *envelope.Envelope) { e.InReplyTo = nil }, envelope.ViolationSignatureInvalid},
		{"rights", func(e *envelope.Envelope) { e.Rights = nil }, envelope.ViolationSignatureInvalid},
		{"rights.right_id", func(e *envelope.Envelope) {
			e.Rights = []envelope.RightSpec{{Type: "send", Target: "ws-c", RightID: "r2"}}
		}, envelope.ViolationSignatureInvalid},
		{"priority", func(e *envelope.Envelope) { e.Priority = envelope.PriorityBlocking }, envelope.ViolationSignatureInvalid},
		{"timestamp", func(e *envelope.Envelope) { e.Timestamp = "2026-01-02T03:04:05Z" }, envelope.ViolationSignatureInvalid},
		{"origin", func(e *envelope.Envelope) { e.Origin = envelope.OriginHuman }, envelope.ViolationSignatureInvalid},
		{"proof", func(e *envelope.Envelope) {
			e.Integrity.Proof = append([]byte{}, e.Integrity.Proof...)
			e.Integrity.Proof[0] ^= 1
		}, envelope.ViolationSignatureInvalid},
		{"short proof", func(e *envelope.Envelope) { e.Integrity.Proof = e.Integrity.Proof[:10] }, envelope.ViolationSignatureInvalid},
		{"algorithm", func(e *envelope.Envelope) { e.Integrity.Algorithm = "hmac-sha256" }, envelope.ViolationSignatureInvalid},
		{"no integrity", func(e *envelope.Envelope) { e.Integrity = nil }, envelope.ViolationProofMissing},
		{"empty integrity", func(e *envelope.Envelope) { e.Integrity = &envelope.Integrity{} }, envelope.ViolationProofMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := provedEnvelope()
			in := *env.Integrity
			env.Integrity = &in
			tt.edit(&env)
			err := envelope.VerifyProof(testPub(), env)
			var ie *envelope.IntegrityError
			switch {
			case tt.violation == "" && err != nil:
				t.Errorf("VerifyProof(%s changed) = %v, want nil", tt.name, err)
			case tt.violation != "" && (!errors.As(err, &ie) || ie.Violation != tt.violation || !errors.Is(err, envelope.ErrIntegrity) || ie.ID != env.ID):
				t.Errorf("VerifyProof(%s changed) = %v, want %s", tt.name, err, tt.violation)
			}
		})
	}
	// Origin binding: another key's proof over the same fields does not
	// verify with the runtime's key.
	env := provedEnvelope()
	envelope.Prove(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize)), &env)
	if err := envelope.VerifyProof(testPub(), env); err == nil {
		t.Error("VerifyProof(another key's proof) = nil, want signature_invalid")
	}
}

// TestProofRoundTrip: a proved record survives the store's JSON (proof as
// base64) and still verifies; absent attachments and [] are one.
func TestProofRoundTrip(t *testing.T) {
	env := provedEnvelope()
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	var back envelope.Envelope
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := envelope.VerifyProof(testPub(), back); err != nil {
		t.Errorf("VerifyProof(decoded %s) = %v", b, err)
	}
	a, n := provedEnvelope(), provedEnvelope()
	a.Payload.Attachments, n.Payload.Attachments = nil, []string{}
	if !bytes.Equal(envelope.ProofBytes(a), envelope.ProofBytes(n)) {
		t.Error("ProofBytes differs for nil and empty attachments")
	}
}

// TestProofBytesCanonical: ProofBytes is the context line and the RFC 8785
// form of the proven fields, as the reference (encoding/json, then
// jcs.Transform) writes it.
func TestProofBytesCanonical(t *testing.T) {
	checkCanonical(t, provedEnvelope())
}

func checkCanonical(t *testing.T, env envelope.Envelope) {
	t.Helper()
	got := envelope.ProofBytes(env)
	prefix := []byte("wacp-envelope-integrity/v1\n")
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("ProofBytes = %q, want the context line first", got)
	}
	rights := []map[string]any{}
	for _, r := range env.Rights {
		m := map[string]any{"type": r.Type, "target": r.Target}
		if r.RightID != "" {
			m["right_id"] = r.RightID
		}
		rights = append(rights, m)
	}
	att := env.Payload.Attachments
	if att == nil {
		att = []string{}
	}
	ref, err := json.Marshal(map[string]any{
		"id": env.ID, "from": env.From, "to": env.To, "originator": env.Originator, "type": env.Type,
		"payload":     map[string]any{"format": env.Payload.Format, "content": env.Payload.Content, "attachments": att},
		"in_reply_to": env.InReplyTo, "rights": rights, "priority": env.Priority, "timestamp": env.Timestamp, "origin": env.Origin,
	})
	if err != nil {
		t.Fatal(err)
	}
	want, err := jcs.Transform(ref)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[len(prefix):], want) {
		t.Errorf("ProofBytes = %s\nwant %s", got[len(prefix):], want)
	}
}

// FuzzVerifyProof decodes a stored record and checks that VerifyProof never
// panics and accepts it only with a proof that verifies; that ProofBytes
// is the reference RFC 8785 form; and that a record proved, encoded and
// decoded again verifies.
func FuzzVerifyProof(f *testing.F) {
	b, _ := json.Marshal(provedEnvelope())
	f.Add(b)
	f.Add([]byte(`{"id":"e1","from":"a","to":"b","payload":{"content":"\u0000\ud800"},"in_reply_to":null,"rights":[]}`))
	f.Add([]byte(`{"id":"e1","integrity":{"proof":"AAAA","algorithm":"ed25519-jcs-v1"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var env envelope.Envelope
		if json.Unmarshal(data, &env) != nil {
			return
		}
		err := envelope.VerifyProof(testPub(), env)
		if err != nil && !errors.Is(err, envelope.ErrIntegrity) {
			t.Fatalf("VerifyProof(%s) = %v, want nil or an integrity error", data, err)
		}
		checkCanonical(t, env)
		envelope.Prove(testKey, &env)
		again, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		var back envelope.Envelope
		if err := json.Unmarshal(again, &back); err != nil {
			t.Fatal(err)
		}
		if err := envelope.VerifyProof(testPub(), back); err != nil {
			t.Fatalf("VerifyProof(proved %s) = %v", again, err)
		}
	})
}

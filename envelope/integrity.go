package envelope

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"

	"github.com/wacpd/wacpd/internal/canon"
)

// Integrity is an envelope's integrity proof (WACP Security §4.1, the
// schema extension integrity: {proof, algorithm}). Proof is written in
// JSON as standard base64.
type Integrity struct {
	Proof     []byte `json:"proof"`
	Algorithm string `json:"algorithm"`
}

// AlgorithmEd25519 is the one integrity mechanism wacpd writes: an Ed25519
// signature (RFC 8032) by the runtime's envelope key over ProofBytes, the
// domain-separated RFC 8785 canonical form of the proven fields.
const AlgorithmEd25519 = "ed25519-jcs-v1"

// proofContext prefixes the signed bytes, so that a signature over an
// envelope is never also one over anything else the key could sign.
const proofContext = "wacp-envelope-integrity/v1\n"

// ReasonIntegrityViolation is the rejection reason of an envelope whose
// proof does not verify (Security §4.1 rule 3).
const ReasonIntegrityViolation Reason = "integrity_violation"

// Violations of an envelope's proof: the violation field of the
// integrity_violation trail event (Security §9).
const (
	ViolationProofMissing     = "proof_missing"
	ViolationSignatureInvalid = "signature_invalid"
)

// ErrIntegrity is wrapped by every *IntegrityError. Test with errors.Is.
var ErrIntegrity = errors.New("envelope: integrity proof does not verify")

// IntegrityError is an envelope whose proof does not verify: Violation is
// ViolationProofMissing or ViolationSignatureInvalid; Expected and Actual
// are the integrity_violation event's fields.
type IntegrityError struct {
	ID        string
	Violation string
	Expected  string
	Actual    string
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("envelope: envelope %s: %s (expected %s, found %s)", e.ID, e.Violation, e.Expected, e.Actual)
}

// Unwrap returns ErrIntegrity.
func (e *IntegrityError) Unwrap() error { return ErrIntegrity }

// ProofBytes returns what an envelope's proof covers: a context line, then
// the RFC 8785 form of the object of its fields id, from, to, originator,
// type, payload, in_reply_to, rights (with each right's right_id),
// priority, timestamp and origin — every field Security §4.1 names, plus
// originator and timestamp, which are as immutable. The lifecycle fields
// (status, delivered_at, delivery) change after the proof and are not
// covered. Absent attachments and rights are the same as empty ones, as
// the record writes them.
func ProofBytes(env Envelope) []byte {
	rights := make([]any, 0, len(env.Rights))
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
	v := map[string]any{
		"id": env.ID, "from": env.From, "to": env.To, "originator": env.Originator, "type": env.Type,
		"payload": map[string]any{
			"format": env.Payload.Format, "content": env.Payload.Content, "attachments": att,
		},
		"in_reply_to": env.InReplyTo, "rights": rights, "priority": env.Priority,
		"timestamp": env.Timestamp, "origin": env.Origin,
	}
	b, ok := canon.AppendValue([]byte(proofContext), v)
	if ok {
		return b
	}
	// Not reached for these value types; the reference keeps it correct.
	j, err := json.Marshal(v)
	if err == nil {
		j, err = jcs.Transform(j)
	}
	if err != nil {
		// Strings, slices and maps of strings always encode.
		panic("envelope: canonical form: " + err.Error())
	}
	return append([]byte(proofContext), j...)
}

// Prove sets env's integrity proof: key's signature over ProofBytes.
// The runtime calls it for the authenticated sender once every proven
// field is set, and again after a person's authorized modification at a
// highway gate.
func Prove(key ed25519.PrivateKey, env *Envelope) {
	env.Integrity = &Integrity{Proof: ed25519.Sign(key, ProofBytes(*env)), Algorithm: AlgorithmEd25519}
}

// VerifyProof reports, as an *IntegrityError, an envelope whose proof is
// missing (ViolationProofMissing) or is not pub's signature over its
// fields (ViolationSignatureInvalid, also for another algorithm or a proof
// of the wrong length); nil when it verifies.
func VerifyProof(pub ed25519.PublicKey, env Envelope) error {
	expected := AlgorithmEd25519 + " signature by " + KeyID(pub) + " over " + digest(ProofBytes(env))
	switch in := env.Integrity; {
	case in == nil || (len(in.Proof) == 0 && in.Algorithm == ""):
		return &IntegrityError{ID: env.ID, Violation: ViolationProofMissing, Expected: expected, Actual: ""}
	case in.Algorithm != AlgorithmEd25519 || len(in.Proof) != ed25519.SignatureSize ||
		!ed25519.Verify(pub, ProofBytes(env), in.Proof):
		return &IntegrityError{ID: env.ID, Violation: ViolationSignatureInvalid, Expected: expected,
			Actual: fmt.Sprintf("%s proof %s", in.Algorithm, base64.StdEncoding.EncodeToString(in.Proof))}
	}
	return nil
}

// KeyID names an envelope key in messages and trail events: "ed25519:"
// and the standard base64 of the public key, as the key file holds it.
func KeyID(pub ed25519.PublicKey) string {
	return "ed25519:" + base64.StdEncoding.EncodeToString(pub)
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

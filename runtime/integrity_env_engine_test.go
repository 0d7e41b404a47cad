package runtime

// Envelope integrity proofs (WACP Security §4.1, §9; integrity_env.go)
// against real Badger: a stored envelope changed between its proof and its
// delivery is rejected with integrity_violation and never delivered.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/workspace"
)

// storedEnvelope reads envelope id's record as the store holds it, once
// Badger holds every batch answered.
func storedEnvelope(t testing.TB, e *Engine, id string) envelope.Envelope {
	t.Helper()
	settled(t, e)
	var env envelope.Envelope
	err := e.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte("e/e/" + id))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { return json.Unmarshal(v, &env) })
	})
	if err != nil {
		t.Fatalf("read envelope %s: %v", id, err)
	}
	return env
}

// editEnvelope changes envelope id's stored record with edit, as an
// intruder with write access to the store would.
func editEnvelope(id string, edit func(m map[string]any)) func(*badger.Txn) error {
	return func(txn *badger.Txn) error {
		key := []byte("e/e/" + id)
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &m) }); err != nil {
			return err
		}
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return txn.Set(key, b)
	}
}

// tamperLive changes envelope id's record under a running engine, once
// Badger holds every batch answered.
func tamperLive(t testing.TB, e *Engine, id string, edit func(m map[string]any)) {
	t.Helper()
	settled(t, e)
	if err := e.db.Update(editEnvelope(id, edit)); err != nil {
		t.Fatal(err)
	}
}

func setContent(s string) func(map[string]any) {
	return func(m map[string]any) { m["payload"].(map[string]any)["content"] = s }
}

// queuedPair opens an engine on dir with a suspended worker holding two
// queued directives from the root, and returns the engine, the worker and
// the two envelopes.
func queuedPair(t *testing.T, dir string) (*Engine, string, envelope.Envelope, envelope.Envelope) {
	t.Helper()
	e := openEngineAt(t, dir)
	w := newWorker(t, e)
	drainInbox(t, e, w.ID) // the directive that activated it
	if _, err := e.Suspend(ctx, e.Root(), w.ID, "maintenance"); err != nil {
		t.Fatal(err)
	}
	a := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))
	b := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", "urgent"))
	if a.Status != envelope.StatusValidated || b.Status != envelope.StatusValidated {
		t.Fatalf("statuses = %s, %s; want both queued (validated)", a.Status, b.Status)
	}
	return e, w.ID, a, b
}

func TestEnvelopeIntegrity_ProofOnEveryEnvelope(t *testing.T) {
	e := openVerified(t)
	w := newWorker(t, e)
	env := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", "blocking"))
	if env.Integrity == nil || env.Integrity.Algorithm != envelope.AlgorithmEd25519 {
		t.Fatalf("SendEnvelope reply integrity = %+v, want an %s proof", env.Integrity, envelope.AlgorithmEd25519)
	}
	if err := envelope.VerifyProof(e.EnvelopePublicKey(), env); err != nil {
		t.Errorf("VerifyProof(reply) = %v", err)
	}
	stored := storedEnvelope(t, e, env.ID)
	if err := envelope.VerifyProof(e.EnvelopePublicKey(), stored); err != nil {
		t.Errorf("VerifyProof(stored record) = %v", err)
	}
	// Origin binding: the proof covers from; the same envelope claiming
	// another sender does not verify.
	forged := stored
	forged.From = w.ID
	if err := envelope.VerifyProof(e.EnvelopePublicKey(), forged); err == nil {
		t.Error("VerifyProof(from changed) = nil, want signature_invalid")
	}
	got, err := e.NextEnvelope(ctx, w.ID, 0)
	if err != nil || got == nil || got.ID != env.ID {
		t.Fatalf("NextEnvelope = %v, %v; want %s", got, err, env.ID)
	}
	if err := envelope.VerifyProof(e.EnvelopePublicKey(), *got); err != nil {
		t.Errorf("VerifyProof(inbox.next reply) = %v", err)
	}
}

// The spec's test 1 (Security §11): an envelope modified after its proof
// is rejected with reason integrity_violation, recorded, never delivered;
// the untampered one beside it verifies after a restart (the key is kept).
func TestEnvelopeIntegrity_TamperedQueuedEnvelopeIsRejected(t *testing.T) {
	dir := t.TempDir()
	e, ws, a, b := queuedPair(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawDB(t, dir, editEnvelope(a.ID, setContent("rm -rf / (planted)")))

	e = openEngineAt(t, dir)
	t.Cleanup(func() { verify(t, e) })
	if _, err := e.Resume(ctx, e.Root(), ws); err != nil {
		t.Fatal(err)
	}
	v := trailWhere(t, e, trail.EventIntegrityViolation, map[string]string{
		"subject_type": "envelope", "subject_id": a.ID, "violation": envelope.ViolationSignatureInvalid, "action_taken": "rejected",
	})
	if len(v) != 1 {
		t.Fatalf("integrity_violation entries for %s = %d, want 1", a.ID, len(v))
	}
	if v[0].Workspace != "" {
		t.Errorf("integrity_violation in the trail of %q, want the global trail only (system-level)", v[0].Workspace)
	}
	if r := trailWhere(t, e, trail.EventEnvelopeRejected, map[string]string{
		"envelope_id": a.ID, "reason": "integrity_violation", "violation": envelope.ViolationSignatureInvalid,
	}); len(r) != 1 || r[0].Workspace != e.Root() {
		t.Errorf("envelope_rejected (integrity_violation) for %s = %+v, want 1 in the sender's trail", a.ID, r)
	}
	if d := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": a.ID}); len(d) != 0 {
		t.Errorf("the tampered envelope was delivered: %+v", d)
	}
	if d := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": b.ID}); len(d) != 1 {
		t.Errorf("envelope_delivered for the untampered %s = %d, want 1", b.ID, len(d))
	}
	if got := storedEnvelope(t, e, a.ID).Status; got != envelope.StatusRejected {
		t.Errorf("tampered record's status = %s, want rejected", got)
	}
	if got := drainInbox(t, e, ws); len(got) != 1 || got[0] != b.ID {
		t.Errorf("inbox after resume = %v, want only %s", got, b.ID)
	}
}

// An envelope already in the inbox, changed in the store, is not handed
// to the agent: it leaves the inbox rejected and the next one is taken.
func TestEnvelopeIntegrity_TamperedInboxEnvelopeIsNotHandedOut(t *testing.T) {
	e := openVerified(t)
	w := newWorker(t, e)
	drainInbox(t, e, w.ID) // the directive that activated it
	a := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", "urgent"))
	b := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))
	tamperLive(t, e, a.ID, func(m map[string]any) { m["priority"] = "blocking" })
	got, err := e.NextEnvelope(ctx, w.ID, 0)
	if err != nil || got == nil || got.ID != b.ID {
		t.Fatalf("NextEnvelope = %+v, %v; want the untampered %s", got, err, b.ID)
	}
	if v := trailWhere(t, e, trail.EventIntegrityViolation, map[string]string{"subject_id": a.ID}); len(v) != 1 {
		t.Errorf("integrity_violation entries for %s = %d, want 1", a.ID, len(v))
	}
	if got := storedEnvelope(t, e, a.ID).Status; got != envelope.StatusRejected {
		t.Errorf("tampered record's status = %s, want rejected", got)
	}
}

// A record stripped of its proof is proof_missing once the data dir has a
// key: removing the proof is no way around verification.
func TestEnvelopeIntegrity_StrippedProofIsProofMissing(t *testing.T) {
	dir := t.TempDir()
	e, ws, a, _ := queuedPair(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawDB(t, dir, editEnvelope(a.ID, func(m map[string]any) { delete(m, "integrity") }))
	e = openEngineAt(t, dir)
	t.Cleanup(func() { verify(t, e) })
	if _, err := e.Resume(ctx, e.Root(), ws); err != nil {
		t.Fatal(err)
	}
	if v := trailWhere(t, e, trail.EventIntegrityViolation, map[string]string{
		"subject_id": a.ID, "violation": envelope.ViolationProofMissing,
	}); len(v) != 1 {
		t.Errorf("integrity_violation proof_missing for %s = %d entries, want 1", a.ID, len(v))
	}
	if d := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": a.ID}); len(d) != 0 {
		t.Errorf("the envelope without a proof was delivered")
	}
}

// A data dir of a release before proofs (records without integrity, no
// key file) gets a key at its first open, which proves its envelopes; they
// are then delivered as any other, and the key is envelope.key.
func TestEnvelopeIntegrity_LegacyDataDirIsProvedOnce(t *testing.T) {
	dir := t.TempDir()
	e, ws, a, b := queuedPair(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	strip := func(m map[string]any) { delete(m, "integrity") }
	rawDB(t, dir, func(txn *badger.Txn) error {
		if err := editEnvelope(a.ID, strip)(txn); err != nil {
			return err
		}
		return editEnvelope(b.ID, strip)(txn)
	})
	for _, f := range []string{EnvelopeKeyFile, EnvelopePublicKeyFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	e = openEngineAt(t, dir)
	t.Cleanup(func() { verify(t, e) })
	for _, id := range []string{a.ID, b.ID} {
		if err := envelope.VerifyProof(e.EnvelopePublicKey(), storedEnvelope(t, e, id)); err != nil {
			t.Errorf("VerifyProof(%s) after the first open = %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, envelopeKeyPending)); !os.IsNotExist(err) {
		t.Errorf("%s left after the envelopes were proved: %v", envelopeKeyPending, err)
	}
	pub, err := os.ReadFile(filepath.Join(dir, EnvelopePublicKeyFile))
	if err != nil || !bytes.Equal(bytes.TrimSpace(pub), []byte(envelope.KeyID(e.EnvelopePublicKey()))) {
		t.Errorf("%s = %q, %v; want %s", EnvelopePublicKeyFile, pub, err, envelope.KeyID(e.EnvelopePublicKey()))
	}
	if _, err := e.Resume(ctx, e.Root(), ws); err != nil {
		t.Fatal(err)
	}
	if v := trailWhere(t, e, trail.EventIntegrityViolation, nil); len(v) != 0 {
		t.Errorf("integrity_violation entries = %d, want none", len(v))
	}
	if got := drainInbox(t, e, ws); len(got) != 2 {
		t.Errorf("inbox after resume = %v, want both legacy envelopes", got)
	}
}

// A key file others may read is refused, as trail.key is.
func TestEnvelopeIntegrity_KeyFileMode(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, EnvelopeKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err := Open(Config{DataDir: dir}); err == nil {
		e.Close()
		t.Fatal("Open with a world-readable envelope.key succeeded, want a refusal")
	}
}

// A key file that no longer matches envelope.pub (replaced, or a byte
// changed into another valid key) is refused at open, with the files
// named; the matching pair opens.
func TestEnvelopeIntegrity_KeyMustMatchItsPublicKey(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	e = openEngineAt(t, other)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(other, EnvelopeKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, EnvelopeKeyFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err = Open(Config{DataDir: dir})
	if err == nil {
		e.Close()
		t.Fatal("Open with another data dir's envelope.key succeeded, want a refusal")
	}
	if !strings.Contains(err.Error(), EnvelopePublicKeyFile) {
		t.Errorf("Open = %v, want it to name %s", err, EnvelopePublicKeyFile)
	}
	e = openEngineAt(t, other) // its own pair
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// An envelope held at an envelope_delivery gate is verified when a person
// approves or modifies it: a tampered one is rejected, not delivered; a
// modified one is proved again by the runtime and verifies.
func TestEnvelopeIntegrity_HeldAtGate(t *testing.T) {
	cfg := highway.Default()
	cfg.Gates[highway.EnvelopeDelivery] = true
	cfg.Gates[highway.TaskApproval] = false
	e := openVerified(t, withHighway(cfg))
	mkUser(t, e, "op", user.InjectDirectiveAny)
	w := idleWorker(t, e, e.Root())
	subject := func(gate string) string {
		for _, g := range e.Gates(ctx, true) {
			if g.ID == gate {
				return g.SubjectID
			}
		}
		t.Fatalf("no gate %s", gate)
		return ""
	}

	gate := sendHeld(t, e, w.ID, "directive", "start")
	id := subject(gate)
	tamperLive(t, e, id, func(m map[string]any) { m["type"] = "feedback" })
	if _, err := resolve(t, e, "op", gate, "approve"); err != nil {
		t.Fatal(err)
	}
	if v := trailWhere(t, e, trail.EventIntegrityViolation, map[string]string{"subject_id": id}); len(v) != 1 {
		t.Errorf("integrity_violation entries for the tampered held %s = %d, want 1", id, len(v))
	}
	if d := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": id}); len(d) != 0 {
		t.Errorf("the tampered held envelope was delivered")
	}
	if got := wsState(t, e, w.ID); got != workspace.Idle {
		t.Errorf("worker after a rejected first envelope: %s, want idle", got)
	}

	gate = sendHeld(t, e, w.ID, "directive", "too harsh")
	if _, err := e.ResolveGate(ctx, "op", mustJSON(map[string]any{"gate_id": gate, "action": "modify",
		"modifications": map[string]any{"payload": map[string]any{"format": "markdown", "content": "kinder", "attachments": []any{}}}})); err != nil {
		t.Fatal(err)
	}
	env, err := e.NextEnvelope(ctx, w.ID, 0)
	if err != nil || env == nil || env.Payload.Content != "kinder" {
		t.Fatalf("the modified envelope: %+v, %v", env, err)
	}
	if err := envelope.VerifyProof(e.EnvelopePublicKey(), *env); err != nil {
		t.Errorf("VerifyProof(modified at the gate) = %v", err)
	}
}

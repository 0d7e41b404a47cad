package auditor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
)

// evidence returns, from a real engine's trail, the evidence for its first
// checkpoint under a tree head signed by a fresh key, and that key.
func evidence(t *testing.T) (string, auditor.CheckpointEvidence, key) {
	t.Helper()
	e := openEngine(t, t.TempDir())
	w := worker(t, e, e.Root(), true)
	cp := checkpoint(t, e, w, nil, checkpointchain.StatusProvisional)
	checkpoint(t, e, w, &cp.ID, checkpointchain.StatusFinal)
	entries := readAll(t, e.Trail())
	var (
		entry trail.Entry
		index uint64
		found bool
	)
	for i, en := range entries {
		if en.EventType == trail.EventCheckpointCreated && strings.Contains(string(en.Body), cp.ID) {
			entry, index, found = en, uint64(i), true
			break
		}
	}
	if !found {
		t.Fatalf("no checkpoint_created entry for %s", cp.ID)
	}
	k := newKey(t, "wacpd-test")
	sth := signHead(t, k, "wacpd/"+e.Root(), entries, nil)
	p, err := e.Trail().InclusionProof(index, sth.Size)
	if err != nil {
		t.Fatal(err)
	}
	proof := make([]string, len(p))
	for i, h := range p {
		proof[i] = trail.FormatHash(h)
	}
	return cp.ID, auditor.CheckpointEvidence{Entry: entry, TreeHead: sth, ProofEntry: entry.ID, ProofSize: sth.Size,
		Index: index, Proof: proof, Checkpoint: cp}, k
}

// TestProveCheckpoint: real evidence proves the checkpoint, and each kind
// of forged or mismatched evidence is refused with a reason, as a
// *NotProvedError matching ErrProof.
func TestProveCheckpoint(t *testing.T) {
	id, ev, k := evidence(t)
	got, err := auditor.ProveCheckpoint(id, ev, k.vkey)
	if err != nil {
		t.Fatalf("ProveCheckpoint(real evidence) = %v", err)
	}
	if got.Checkpoint != id || got.Entry != ev.Entry.ID || got.Index != ev.Index || got.Size != ev.TreeHead.Size ||
		got.Root != ev.TreeHead.Root || got.PublicKey != k.vkey || got.Path != len(ev.Proof) || got.Digest != ev.Checkpoint.Digest.String() {
		t.Errorf("ProveCheckpoint = %+v, does not describe the evidence", got)
	}

	other := newKey(t, "wacpd-test")
	tests := []struct {
		name   string
		id     string
		key    string
		forge  func(*auditor.CheckpointEvidence)
		reason string
	}{
		{"entry changed", id, k.vkey, func(ev *auditor.CheckpointEvidence) { ev.Entry.Actor = "mallory" }, "hashes to"},
		{"not a checkpoint entry", id, k.vkey, func(ev *auditor.CheckpointEvidence) {
			ev.Entry.EventType = trail.EventWorkspaceCreated
			rehash(t, &ev.Entry)
		}, "not checkpoint_created"},
		{"another checkpoint's entry", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", k.vkey, nil, "is for checkpoint"},
		{"another key", id, other.vkey, nil, "does not verify with key"},
		{"tree head fields not the note's", id, k.vkey, func(ev *auditor.CheckpointEvidence) { ev.TreeHead.Size++ }, "not what its signed note says"},
		{"proof for another size", id, k.vkey, func(ev *auditor.CheckpointEvidence) { ev.ProofSize-- }, "sent a proof for"},
		{"proof for another entry", id, k.vkey, func(ev *auditor.CheckpointEvidence) { ev.ProofEntry = "01ZZZZZZZZZZZZZZZZZZZZZZZZ" }, "sent a proof for"},
		{"wrong index", id, k.vkey, func(ev *auditor.CheckpointEvidence) { ev.Index++ }, "proof"},
		{"proof hash changed", id, k.vkey, func(ev *auditor.CheckpointEvidence) { ev.Proof[0] = ev.TreeHead.Root }, "proof"},
		{"checkpoint content changed", id, k.vkey, func(ev *auditor.CheckpointEvidence) { ev.Checkpoint.Intent = "something else" }, "the trail pins"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := ev
			ev.Proof = append([]string(nil), ev.Proof...)
			if tt.forge != nil {
				tt.forge(&ev)
			}
			_, err := auditor.ProveCheckpoint(tt.id, ev, tt.key)
			var np *auditor.NotProvedError
			if !errors.As(err, &np) || !errors.Is(err, auditor.ErrProof) || !strings.Contains(np.Reason, tt.reason) {
				t.Errorf("ProveCheckpoint = %v, want a *NotProvedError (ErrProof) saying %q", err, tt.reason)
			}
		})
	}
}

// rehash gives e its own entry_hash again after a change, as a forger
// would.
func rehash(t *testing.T, e *trail.Entry) {
	t.Helper()
	h, err := trail.Hash(*e)
	if err != nil {
		t.Fatal(err)
	}
	e.Integrity.EntryHash = h
}

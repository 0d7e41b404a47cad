package auditor

import (
	"encoding/json"
	"fmt"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
)

// CheckpointEvidence is what a daemon hands out about one checkpoint, for
// ProveCheckpoint to check: none of it is trusted.
type CheckpointEvidence struct {
	Entry      trail.Entry                // its checkpoint_created entry (audit.trail.read)
	TreeHead   trail.TreeHead             // a signed tree head, with its note (audit.sth)
	ProofEntry string                     // the entry the inclusion proof names ("" when it names none)
	ProofSize  uint64                     // the tree size the proof was made for
	Index      uint64                     // the entry's leaf index in that tree
	Proof      []string                   // the audit path (audit.proof.inclusion)
	Checkpoint checkpointchain.Checkpoint // the checkpoint (audit.checkpoint.get)
}

// CheckpointProof is what ProveCheckpoint established: checkpoint
// Checkpoint, whose canonical bytes hash to Digest, is pinned by entry
// Entry, leaf Index of the tree of Size entries whose root Root was signed
// at Signed with PublicKey; the audit path has Path hashes.
type CheckpointProof struct {
	Checkpoint string `json:"checkpoint"`
	Workspace  string `json:"workspace"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	Digest     string `json:"digest"`
	Entry      string `json:"entry"`
	EntryHash  string `json:"entry_hash"`
	Index      uint64 `json:"index"`
	Size       uint64 `json:"size"`
	Root       string `json:"root"`
	Signed     string `json:"signed"`
	PublicKey  string `json:"public_key"`
	Path       int    `json:"proof_hashes"`
}

// NotProvedError says why ProveCheckpoint did not prove a checkpoint. It
// matches ErrProof under errors.Is.
type NotProvedError struct {
	Checkpoint string
	Reason     string
}

func (e *NotProvedError) Error() string {
	return fmt.Sprintf("not proved: checkpoint %s: %s", e.Checkpoint, e.Reason)
}

// Is reports whether target is ErrProof.
func (e *NotProvedError) Is(target error) bool { return target == ErrProof }

// ProveCheckpoint proves that checkpoint id is in the signed trail, from
// evidence a daemon handed out and the tree-head key publicKey the caller
// trusts: the entry is a checkpoint_created entry for id and hashes to its
// entry_hash; the tree head's note verifies with publicKey and says what
// its fields say; the proof is for that entry in that tree and verifies
// against the signed root; and the checkpoint's canonical bytes hash to the
// digest the entry pins. It returns a *NotProvedError for the first check
// that fails. (wacp trail prove; client.ProveCheckpoint gathers the
// evidence.)
func ProveCheckpoint(id string, ev CheckpointEvidence, publicKey string) (CheckpointProof, error) {
	notProved := func(format string, args ...any) (CheckpointProof, error) {
		return CheckpointProof{}, &NotProvedError{Checkpoint: id, Reason: fmt.Sprintf(format, args...)}
	}
	e := ev.Entry
	if h, err := trail.Hash(e); err != nil || h != e.Integrity.EntryHash {
		return notProved("entry %s hashes to %s, not to its entry_hash %s", e.ID, h, e.Integrity.EntryHash)
	}
	var body struct {
		CheckpointID string `json:"checkpoint_id"`
		Workspace    string `json:"workspace"`
		Type         string `json:"type"`
		Status       string `json:"status"`
		Digest       string `json:"digest"`
	}
	if e.EventType != trail.EventCheckpointCreated {
		return notProved("entry %s is a %s entry, not %s", e.ID, e.EventType, trail.EventCheckpointCreated)
	}
	if err := json.Unmarshal(e.Body, &body); err != nil {
		return notProved("entry %s: unreadable body: %v", e.ID, err)
	}
	if body.CheckpointID != id {
		return notProved("entry %s is for checkpoint %q", e.ID, body.CheckpointID)
	}
	digest, err := casstore.Parse(body.Digest)
	if err != nil {
		return notProved("entry %s: %v", e.ID, err)
	}

	th := ev.TreeHead
	signed, err := trail.OpenTreeHead(th.Note, publicKey)
	if err != nil {
		return notProved("the tree head does not verify with key %s: %v", publicKey, err)
	}
	if signed.Size != th.Size || signed.Root != th.Root || signed.Origin != th.Origin || signed.Timestamp != th.Timestamp {
		return notProved("the tree head's fields are not what its signed note says")
	}
	if ev.ProofSize != signed.Size || (ev.ProofEntry != "" && ev.ProofEntry != e.ID) {
		return notProved("the daemon sent a proof for entry %s in size %d, asked for %s in size %d", ev.ProofEntry, ev.ProofSize, e.ID, signed.Size)
	}
	if err := VerifyInclusion(e.Integrity.EntryHash, ev.Index, signed.Size, ev.Proof, signed.Root); err != nil {
		return notProved("%v", err)
	}

	data, err := checkpointchain.Encode(ev.Checkpoint)
	if err != nil {
		return notProved("%v", err)
	}
	if got := casstore.RefOf(data); got != digest {
		return notProved("its content hashes to %s, the trail pins %s", got, digest)
	}
	return CheckpointProof{
		Checkpoint: id, Workspace: body.Workspace, Type: body.Type, Status: body.Status, Digest: body.Digest,
		Entry: e.ID, EntryHash: e.Integrity.EntryHash, Index: ev.Index, Size: signed.Size, Root: signed.Root,
		Signed: signed.Timestamp, PublicKey: publicKey, Path: len(ev.Proof),
	}, nil
}

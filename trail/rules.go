package trail

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
)

// Finding is the first problem a check found in the entries: which entry,
// and what is wrong with it.
type Finding struct {
	Seq       uint64 // the entry's position in the global trail (1-based)
	ID        string // its id, when it could be read
	Violation Violation
	Detail    string
}

// Where names the entry: "#N", with its id when known.
func (f *Finding) Where() string {
	if f.ID == "" {
		return fmt.Sprintf("#%d", f.Seq)
	}
	return fmt.Sprintf("#%d (%s)", f.Seq, f.ID)
}

// NewFinding returns a Finding at entry #seq (id, when known).
func NewFinding(seq uint64, id string, v Violation, format string, args ...any) *Finding {
	return &Finding{Seq: seq, ID: id, Violation: v, Detail: fmt.Sprintf(format, args...)}
}

// Head is the tip of one chain, as the trail stores it (JSON).
type Head struct {
	Seq       uint64 `json:"seq"`  // entries in the chain
	Hash      string `json:"hash"` // entry hash of the last entry, "" when empty
	ID        string `json:"id,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
}

// Rules is the trail's one rule set over entries in global order, with the
// chains' state after the entries that passed. The stored trail's check
// (traillog.Check) applies it (its fast path applies the same rules to the
// stored bytes and falls back to this code for anything it does not
// accept), Walker to entries read from elsewhere (a bundle), and
// verifyLocal, restricted to the local rules, to one workspace's chain.
//
// For entry #seq, in its global view, with localPrev the previous hash of
// its local chain as stored:
//
//  1. integrity.algorithm is blake3-256, and the entry recomputes to its
//     entry_hash (hash_mismatch): a changed entry is named as changed;
//  2. prev_hash is the previous entry's entry_hash, null for #1; ids
//     strictly increase and timestamps never decrease (chain_broken);
//  3. a system-level entry carries neither local_hash (hash_mismatch) nor
//     local_prev_hash (chain_broken);
//  4. a workspace entry's local_prev_hash is its workspace's previous
//     local_hash, null for the first (chain_broken); its local view
//     recomputes to local_hash (hash_mismatch); its timestamp is after
//     the workspace's previous entry's (not_monotonic); the workspace has
//     not reached a terminal state before it (after_terminal);
//  5. the entry is leaf #seq-1 of the Merkle tree; at the signed size the
//     root is the signed root (root_mismatch).
type Rules struct {
	// The chains' state after the entries that passed. A stored trail's
	// checker that verified a prefix by other means sets Prev and Local
	// to continue from it.
	Prev     Head            // the global head
	Local    map[string]Head // each workspace's head
	Terminal map[string]bool // workspaces whose trail has ended
	Range    *compact.Range  // the Merkle tree of the entries so far
	// SignedCovered is true once the root at the signed size was checked
	// and matched (at once when there is no signed size).
	SignedCovered bool

	signedSize uint64
	signedRoot []byte
}

// NewRules returns the rule set before the first entry, comparing the root
// of the first signedSize entries with signedRoot (signedSize 0: no root).
func NewRules(signedSize uint64, signedRoot []byte) *Rules {
	return &Rules{Local: map[string]Head{}, Terminal: map[string]bool{}, Range: RangeFactory.NewEmptyRange(0),
		signedSize: signedSize, signedRoot: signedRoot, SignedCovered: signedSize == 0}
}

// The two terminal states of WACP Workspace §4: no local trail has entries
// after its workspace_state_changed to one of them (Recovery §3.1).
var terminalStates = map[string]bool{"closed": true, "failed": true}

// Next checks entry #seq and, when it passes, adds it to the chains; visit
// (nil: none) sees every Merkle node the entry completes. A nil result
// means the entry passed.
func (r *Rules) Next(seq uint64, e Entry, localPrev string, visit compact.VisitFn) *Finding {
	prev := r.Prev
	if e.Integrity.Algorithm != Algorithm {
		return NewFinding(seq, e.ID, ViolationHashMismatch, "integrity.algorithm %q, want %q", e.Integrity.Algorithm, Algorithm)
	}
	if got := HashCanonical(e); got != e.Integrity.EntryHash {
		return NewFinding(seq, e.ID, ViolationHashMismatch, "entry hashes to %s, recorded %s", got, e.Integrity.EntryHash)
	}
	switch {
	case e.PrevHash != prev.Hash:
		return NewFinding(seq, e.ID, ViolationChainBroken, "prev_hash %q, previous entry hash %q", e.PrevHash, prev.Hash)
	case prev.ID != "" && (e.ID <= prev.ID || e.Timestamp < prev.Timestamp):
		return NewFinding(seq, e.ID, ViolationChainBroken, "entry %s at %s not after %s at %s", e.ID, e.Timestamp, prev.ID, prev.Timestamp)
	}
	if e.Workspace == "" {
		switch {
		case e.Integrity.LocalHash != "":
			return NewFinding(seq, e.ID, ViolationHashMismatch, "system-level entry carries a local_hash")
		case localPrev != "":
			return NewFinding(seq, e.ID, ViolationChainBroken, "system-level entry carries a local_prev_hash")
		}
	} else if f := r.LocalNext(seq, e, localPrev); f != nil {
		return f
	}
	leaf, err := LeafData(e)
	if err != nil {
		return NewFinding(seq, e.ID, ViolationHashMismatch, "entry_hash: %v", err)
	}
	if err := r.Range.Append(Hasher{}.HashLeaf(leaf), visit); err != nil {
		return NewFinding(seq, e.ID, ViolationHashMismatch, "merkle tree: %v", err)
	}
	if f := r.checkRoot(seq, e.ID); f != nil {
		return f
	}
	r.Prev = Head{Seq: seq, Hash: e.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
	return nil
}

// LocalNext applies rule 4 to workspace entry e (global view) and moves its
// workspace's head.
func (r *Rules) LocalNext(seq uint64, e Entry, localPrev string) *Finding {
	ws := e.Workspace
	lh := r.Local[ws]
	local := LocalView(e, localPrev)
	switch {
	case local.PrevHash != lh.Hash:
		return NewFinding(seq, e.ID, ViolationChainBroken, "local prev_hash %q, previous local hash %q", local.PrevHash, lh.Hash)
	case HashCanonical(local) != local.Integrity.EntryHash:
		return NewFinding(seq, e.ID, ViolationHashMismatch, "local view hashes to %s, recorded %s", HashCanonical(local), local.Integrity.EntryHash)
	case lh.Timestamp != "" && e.Timestamp <= lh.Timestamp:
		return NewFinding(seq, e.ID, ViolationNotMonotonic, "timestamp %s not after %s, the previous entry of workspace %s", e.Timestamp, lh.Timestamp, ws)
	case r.Terminal[ws]:
		return NewFinding(seq, e.ID, ViolationAfterTerminal, "local entry of workspace %s after its terminal state", ws)
	}
	if e.EventType == EventWorkspaceStateChanged && EndsWorkspace(e.Body) {
		r.Terminal[ws] = true
	}
	r.Local[ws] = Head{Seq: lh.Seq + 1, Hash: local.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
	return nil
}

// EndsWorkspace reports whether a workspace_state_changed body moves to a
// terminal state.
func EndsWorkspace(body []byte) bool {
	// Most state changes are not terminal: look before decoding.
	i := bytes.Index(body, []byte(`"to_state":"`))
	if i < 0 {
		return false
	}
	if rest := body[i+len(`"to_state":"`):]; !bytes.HasPrefix(rest, []byte(`closed"`)) && !bytes.HasPrefix(rest, []byte(`failed"`)) {
		return false
	}
	var b struct {
		ToState string `json:"to_state"`
	}
	return json.Unmarshal(body, &b) == nil && terminalStates[b.ToState]
}

// Signed returns the signed tree size and root the rules compare with.
func (r *Rules) Signed() (size uint64, root []byte) { return r.signedSize, r.signedRoot }

// checkRoot compares the root with the signed root once the tree has
// signedSize leaves.
func (r *Rules) checkRoot(seq uint64, id string) *Finding {
	if seq != r.signedSize {
		return nil
	}
	root, err := r.Range.GetRootHash(nil)
	if err != nil {
		return NewFinding(seq, id, ViolationRootMismatch, "merkle root: %v", err)
	}
	if !bytes.Equal(root, r.signedRoot) {
		return NewFinding(seq, id, ViolationRootMismatch, "the first %d entries hash to root %s, the signed tree head says %s",
			seq, FormatHash(root), FormatHash(r.signedRoot))
	}
	r.SignedCovered = true
	return nil
}

// Walker applies the trail's rule set (see Check) to entries handed to it
// one at a time, in global order and in their global view, as a bundle
// holds them: hashes, both chain kinds, per-workspace order, nothing after
// a terminal state, and the Merkle root at the signed size. What only the
// stored trail has (indexes, heads, Merkle nodes, local_prev_hash) is
// Check's.
type Walker struct {
	r *Rules
}

// NewWalker returns a Walker that compares the root of the first
// signedSize entries with signedRoot (32 bytes; signedSize 0: no root).
func NewWalker(signedSize uint64, signedRoot []byte) *Walker {
	return &Walker{r: NewRules(signedSize, signedRoot)}
}

// Next checks the next entry. It returns nil when the entry passed; after a
// finding the Walker must not be used again.
func (w *Walker) Next(e Entry) *Finding {
	seq := w.r.Prev.Seq + 1
	localPrev := ""
	if e.Workspace != "" {
		localPrev = w.r.Local[e.Workspace].Hash
	}
	return w.r.Next(seq, e, localPrev, nil)
}

// Workspaces returns the number of workspace chains among them.
func (w *Walker) Workspaces() int { return len(w.r.Local) }

// RootChecked reports whether the root at the signed size was checked and
// matched (true when the signed size is 0).
func (w *Walker) RootChecked() bool { return w.r.SignedCovered }

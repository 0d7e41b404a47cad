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

func finding(seq uint64, id string, v Violation, format string, args ...any) *Finding {
	return &Finding{Seq: seq, ID: id, Violation: v, Detail: fmt.Sprintf(format, args...)}
}

// rules is the trail's one rule set over entries in global order, with the
// chains' state after the entries that passed. Check applies it to the
// stored trail (its fast path, checker.fast, applies the same rules to the
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
type rules struct {
	prev     head            // the global head
	local    map[string]head // each workspace's head
	terminal map[string]bool // workspaces whose trail has ended
	rng      *compact.Range  // the Merkle tree of the entries so far

	signedSize    uint64
	signedRoot    []byte
	signedCovered bool // the root at signedSize was checked (or there is none)
}

func newRules(signedSize uint64, signedRoot []byte) *rules {
	return &rules{local: map[string]head{}, terminal: map[string]bool{}, rng: rangeFactory.NewEmptyRange(0),
		signedSize: signedSize, signedRoot: signedRoot, signedCovered: signedSize == 0}
}

// The two terminal states of WACP Workspace §4: no local trail has entries
// after its workspace_state_changed to one of them (Recovery §3.1).
var terminalStates = map[string]bool{"closed": true, "failed": true}

// next checks entry #seq and, when it passes, adds it to the chains; visit
// (nil: none) sees every Merkle node the entry completes. A nil result
// means the entry passed.
func (r *rules) next(seq uint64, e Entry, localPrev string, visit compact.VisitFn) *Finding {
	prev := r.prev
	if e.Integrity.Algorithm != Algorithm {
		return finding(seq, e.ID, ViolationHashMismatch, "integrity.algorithm %q, want %q", e.Integrity.Algorithm, Algorithm)
	}
	if got := fastHash(e); got != e.Integrity.EntryHash {
		return finding(seq, e.ID, ViolationHashMismatch, "entry hashes to %s, recorded %s", got, e.Integrity.EntryHash)
	}
	switch {
	case e.PrevHash != prev.Hash:
		return finding(seq, e.ID, ViolationChainBroken, "prev_hash %q, previous entry hash %q", e.PrevHash, prev.Hash)
	case prev.ID != "" && (e.ID <= prev.ID || e.Timestamp < prev.Timestamp):
		return finding(seq, e.ID, ViolationChainBroken, "entry %s at %s not after %s at %s", e.ID, e.Timestamp, prev.ID, prev.Timestamp)
	}
	if e.Workspace == "" {
		switch {
		case e.Integrity.LocalHash != "":
			return finding(seq, e.ID, ViolationHashMismatch, "system-level entry carries a local_hash")
		case localPrev != "":
			return finding(seq, e.ID, ViolationChainBroken, "system-level entry carries a local_prev_hash")
		}
	} else if f := r.localNext(seq, e, localPrev); f != nil {
		return f
	}
	leaf, err := LeafData(e)
	if err != nil {
		return finding(seq, e.ID, ViolationHashMismatch, "entry_hash: %v", err)
	}
	if err := r.rng.Append(Hasher{}.HashLeaf(leaf), visit); err != nil {
		return finding(seq, e.ID, ViolationHashMismatch, "merkle tree: %v", err)
	}
	if f := r.checkRoot(seq, e.ID); f != nil {
		return f
	}
	r.prev = head{Seq: seq, Hash: e.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
	return nil
}

// localNext applies rule 4 to workspace entry e (global view) and moves its
// workspace's head.
func (r *rules) localNext(seq uint64, e Entry, localPrev string) *Finding {
	ws := e.Workspace
	lh := r.local[ws]
	local := stored{Entry: e, LocalPrev: localPrev}.local()
	switch {
	case local.PrevHash != lh.Hash:
		return finding(seq, e.ID, ViolationChainBroken, "local prev_hash %q, previous local hash %q", local.PrevHash, lh.Hash)
	case fastHash(local) != local.Integrity.EntryHash:
		return finding(seq, e.ID, ViolationHashMismatch, "local view hashes to %s, recorded %s", fastHash(local), local.Integrity.EntryHash)
	case lh.Timestamp != "" && e.Timestamp <= lh.Timestamp:
		return finding(seq, e.ID, ViolationNotMonotonic, "timestamp %s not after %s, the previous entry of workspace %s", e.Timestamp, lh.Timestamp, ws)
	case r.terminal[ws]:
		return finding(seq, e.ID, ViolationAfterTerminal, "local entry of workspace %s after its terminal state", ws)
	}
	if e.EventType == EventWorkspaceStateChanged && terminalBody(e.Body) {
		r.terminal[ws] = true
	}
	r.local[ws] = head{Seq: lh.Seq + 1, Hash: local.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
	return nil
}

// terminalBody reports whether a workspace_state_changed body moves to a
// terminal state.
func terminalBody(body []byte) bool {
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

// checkRoot compares the root with the signed root once the tree has
// signedSize leaves.
func (r *rules) checkRoot(seq uint64, id string) *Finding {
	if seq != r.signedSize {
		return nil
	}
	root, err := r.rng.GetRootHash(nil)
	if err != nil {
		return finding(seq, id, ViolationRootMismatch, "merkle root: %v", err)
	}
	if !bytes.Equal(root, r.signedRoot) {
		return finding(seq, id, ViolationRootMismatch, "the first %d entries hash to root %s, the signed tree head says %s",
			seq, FormatHash(root), FormatHash(r.signedRoot))
	}
	r.signedCovered = true
	return nil
}

// Walker applies the trail's rule set (see Check) to entries handed to it
// one at a time, in global order and in their global view, as a bundle
// holds them: hashes, both chain kinds, per-workspace order, nothing after
// a terminal state, and the Merkle root at the signed size. What only the
// stored trail has (indexes, heads, Merkle nodes, local_prev_hash) is
// Check's.
type Walker struct {
	r *rules
}

// NewWalker returns a Walker that compares the root of the first
// signedSize entries with signedRoot (32 bytes; signedSize 0: no root).
func NewWalker(signedSize uint64, signedRoot []byte) *Walker {
	return &Walker{r: newRules(signedSize, signedRoot)}
}

// Next checks the next entry. It returns nil when the entry passed; after a
// finding the Walker must not be used again.
func (w *Walker) Next(e Entry) *Finding {
	seq := w.r.prev.Seq + 1
	localPrev := ""
	if e.Workspace != "" {
		localPrev = w.r.local[e.Workspace].Hash
	}
	return w.r.next(seq, e, localPrev, nil)
}

// Workspaces returns the number of workspace chains among them.
func (w *Walker) Workspaces() int { return len(w.r.local) }

// RootChecked reports whether the root at the signed size was checked and
// matched (true when the signed size is 0).
func (w *Walker) RootChecked() bool { return w.r.signedCovered }

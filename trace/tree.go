package trace

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/trail"
)

// Tree is the Merkle tree of a daemon's TRACE log: every event of every
// session, in the order they were committed, as RFC 6962 leaves (SHA-256)
// whose data is the event's 32-byte event_hash. Its signed root is what an
// auditor checks an exported log against (docs/audit.md); the chains of
// the sessions bind each event to its predecessor, the tree binds the
// whole log. A Tree keeps only the compact range (O(log n) hashes).
type Tree struct{ r *compact.Range }

var factory = &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}

// NewTree returns the empty tree.
func NewTree() *Tree { return &Tree{r: factory.NewEmptyRange(0)} }

// LoadTree returns the tree of size leaves whose compact range is hashes
// (as Hashes returned them).
func LoadTree(size uint64, hashes [][]byte) (*Tree, error) {
	r, err := factory.NewRange(0, size, hashes)
	if err != nil {
		return nil, fmt.Errorf("trace: tree of %d: %w", size, err)
	}
	return &Tree{r: r}, nil
}

// Clone returns an independent copy of t.
func (t *Tree) Clone() *Tree {
	hs := t.r.Hashes()
	cp := make([][]byte, len(hs))
	for i, h := range hs {
		cp[i] = append([]byte(nil), h...)
	}
	c, err := factory.NewRange(0, t.r.End(), cp)
	if err != nil {
		panic("trace: clone of a valid range: " + err.Error())
	}
	return &Tree{r: c}
}

// Append adds the event whose event_hash is eventHash.
func (t *Tree) Append(eventHash string) error {
	b, err := hex.DecodeString(eventHash)
	if err != nil || len(b) != 32 {
		return fmt.Errorf("trace: event_hash %q is not 64 hex digits", eventHash)
	}
	return t.r.Append(rfc6962.DefaultHasher.HashLeaf(b), nil)
}

// Size returns the number of events in the tree.
func (t *Tree) Size() uint64 { return t.r.End() }

// Hashes returns the compact range, for LoadTree.
func (t *Tree) Hashes() [][]byte { return t.r.Hashes() }

// Root returns the Merkle root (the empty tree's: SHA-256 of nothing).
func (t *Tree) Root() []byte {
	if t.r.End() == 0 {
		return rfc6962.DefaultHasher.EmptyRoot()
	}
	root, err := t.r.GetRootHash(nil)
	if err != nil {
		panic("trace: root of a range from 0: " + err.Error())
	}
	return root
}

// Root returns the Merkle root of events, a whole log in commit order.
func Root(events []Event) ([]byte, error) {
	t := NewTree()
	for i, e := range events {
		if err := t.Append(e.EventHash); err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
	}
	return t.Root(), nil
}

// TreeHead is a signed head of the TRACE log: its size and root at a
// moment, signed with the daemon's key in the same note format as the
// WACP trail's tree heads (golang.org/x/mod/sumdb/note; origin, size,
// base64 root, timestamp).
type TreeHead struct {
	Origin    string `json:"origin"`    // "wacpd/<root workspace id>/trace"
	Size      uint64 `json:"size"`      // number of events
	Root      string `json:"root"`      // "sha256:<hex>"
	Timestamp string `json:"timestamp"` // when it was signed
	Note      string `json:"note"`      // the signed note
}

// ErrBadTreeHead is returned by OpenTreeHead for a note that is not a
// well-formed head or whose signature does not verify: the trail's error,
// as the two heads share their note format (trail.OpenNote).
var ErrBadTreeHead = trail.ErrBadTreeHead

// SignTreeHead signs size and root in the note layout of the trail's heads
// (trail.TreeHeadText).
func SignTreeHead(signer note.Signer, origin string, size uint64, root []byte, timestamp string) (TreeHead, error) {
	msg, err := note.Sign(&note.Note{Text: trail.TreeHeadText(origin, size, root, timestamp)}, signer)
	if err != nil {
		return TreeHead{}, fmt.Errorf("sign trace tree head: %w", err)
	}
	return TreeHead{Origin: origin, Size: size, Root: "sha256:" + hex.EncodeToString(root), Timestamp: timestamp, Note: string(msg)}, nil
}

// OpenTreeHead verifies msg with the verifier key vkey and returns its
// content; a trail's head (its origin not ending in /trace) is refused.
func OpenTreeHead(msg, vkey string) (TreeHead, error) {
	origin, size, root, ts, err := trail.OpenNote(msg, vkey)
	if err != nil {
		return TreeHead{}, err
	}
	if !strings.HasSuffix(origin, "/trace") {
		return TreeHead{}, fmt.Errorf("%w: not a TRACE tree head", ErrBadTreeHead)
	}
	return TreeHead{Origin: origin, Size: size, Root: "sha256:" + hex.EncodeToString(root), Timestamp: ts, Note: msg}, nil
}

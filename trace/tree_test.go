package trace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// TestTreeRoot: the root is RFC 6962's over the event hashes (checked
// against a direct recursive computation), and a tree saved as its
// compact range and loaded again goes on to the same roots.
func TestTreeRoot(t *testing.T) {
	var leaves [][]byte
	tr := NewTree()
	if !bytes.Equal(tr.Root(), rfc6962.DefaultHasher.EmptyRoot()) {
		t.Fatal("empty root")
	}
	for i := range 13 {
		s := sha256.Sum256([]byte(fmt.Sprint(i)))
		leaves = append(leaves, s[:])
		if err := tr.Append(hex.EncodeToString(s[:])); err != nil {
			t.Fatal(err)
		}
		if got, want := tr.Root(), naive(leaves); !bytes.Equal(got, want) {
			t.Fatalf("size %d: root %x, want %x", i+1, got, want)
		}
		re, err := LoadTree(tr.Size(), tr.Clone().Hashes())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(re.Root(), tr.Root()) {
			t.Fatalf("size %d: reloaded root differs", i+1)
		}
	}
	if err := tr.Append("zz"); err == nil {
		t.Fatal("a bad event hash was appended")
	}
}

func naive(l [][]byte) []byte {
	h := rfc6962.DefaultHasher
	if len(l) == 1 {
		return h.HashLeaf(l[0])
	}
	k := 1
	for k*2 < len(l) {
		k *= 2
	}
	return h.HashChildren(naive(l[:k]), naive(l[k:]))
}

func TestTreeHeadSignOpen(t *testing.T) {
	skey, vkey, err := note.GenerateKey(nil, "wacpd-test")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	root := sha256.Sum256([]byte("r"))
	th, err := SignTreeHead(signer, "wacpd/root/trace", 7, root[:], "2026-11-27T00:00:00.000000Z")
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenTreeHead(th.Note, vkey)
	if err != nil || got.Size != 7 || got.Root != th.Root {
		t.Fatalf("open: %+v %v", got, err)
	}
	bad := bytes.Replace([]byte(th.Note), []byte("\n7\n"), []byte("\n8\n"), 1)
	if _, err := OpenTreeHead(string(bad), vkey); !errors.Is(err, ErrBadTreeHead) {
		t.Fatalf("a changed size verified: %v", err)
	}
}

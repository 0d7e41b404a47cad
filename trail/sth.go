package trail

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// TreeHead is a signed tree head: the size and Merkle root of the global
// trail at a moment, signed by the daemon's key.
type TreeHead struct {
	Origin    string `json:"origin"`    // "wacpd/<root workspace id>"
	Size      uint64 `json:"size"`      // number of entries
	Root      string `json:"root"`      // "blake3:<hex>" Merkle root
	Timestamp string `json:"timestamp"` // when it was signed
	Note      string `json:"note"`      // the signed note (golang.org/x/mod/sumdb/note)
}

// ErrBadTreeHead is returned by OpenTreeHead for a note that is not a
// well-formed tree head or whose signature does not verify.
var ErrBadTreeHead = errors.New("trail: invalid signed tree head")

// TreeHeadText returns the note text of a tree head, in the transparency-log
// checkpoint layout: origin, size, base64 root, then the timestamp as an
// extension line.
func TreeHeadText(origin string, size uint64, root []byte, timestamp string) string {
	return fmt.Sprintf("%s\n%d\n%s\n%s\n", origin, size, base64.StdEncoding.EncodeToString(root), timestamp)
}

// SignTreeHead signs a tree head with signer.
func SignTreeHead(signer note.Signer, origin string, size uint64, root []byte, timestamp string) (TreeHead, error) {
	msg, err := note.Sign(&note.Note{Text: TreeHeadText(origin, size, root, timestamp)}, signer)
	if err != nil {
		return TreeHead{}, fmt.Errorf("sign tree head: %w", err)
	}
	return TreeHead{Origin: origin, Size: size, Root: FormatHash(root), Timestamp: timestamp, Note: string(msg)}, nil
}

// OpenTreeHead verifies a signed tree head note with the public key vkey
// (note verifier key format) and returns its content.
func OpenTreeHead(msg, vkey string) (TreeHead, error) {
	origin, size, root, ts, err := OpenNote(msg, vkey)
	if err != nil {
		return TreeHead{}, err
	}
	return TreeHead{Origin: origin, Size: size, Root: FormatHash(root), Timestamp: ts, Note: msg}, nil
}

// OpenNote verifies a tree head note in the layout of TreeHeadText with
// vkey and returns its four lines: the trail's heads and the TRACE log's
// (package trace) are both of this form. Errors wrap ErrBadTreeHead.
func OpenNote(msg, vkey string) (origin string, size uint64, root []byte, timestamp string, err error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return "", 0, nil, "", fmt.Errorf("%w: public key: %v", ErrBadTreeHead, err)
	}
	n, err := note.Open([]byte(msg), note.VerifierList(v))
	if err != nil {
		return "", 0, nil, "", fmt.Errorf("%w: %v", ErrBadTreeHead, err)
	}
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) != 4 {
		return "", 0, nil, "", fmt.Errorf("%w: %d lines, want 4", ErrBadTreeHead, len(lines))
	}
	size, err = strconv.ParseUint(lines[1], 10, 64)
	if err != nil {
		return "", 0, nil, "", fmt.Errorf("%w: size %q", ErrBadTreeHead, lines[1])
	}
	root, err = base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != 32 {
		return "", 0, nil, "", fmt.Errorf("%w: root %q", ErrBadTreeHead, lines[2])
	}
	return lines[0], size, root, lines[3], nil
}

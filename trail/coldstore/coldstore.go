// Package coldstore is the trail's cold tier (WACP Trail §7–§8): the
// archives compaction writes and the records that say which workspaces
// were compacted.
//
// An archive holds the archivable entries (trail.Archivable) of one
// terminal workspace's local trail, each in its global view as
// trail.AppendJSON writes it, one per line, in trail order. Its hash is
// the BLAKE3 of those uncompressed lines ("blake3:<hex>", the
// trail_compacted entry's archive_hash), and it is stored zstd-compressed
// in <db>/cold/<hex>.zst: content-addressed, so writing it again gives the
// same file. The record tc/<workspace> → the id of the workspace's
// trail_compacted entry is written in the commit of that entry.
//
// The archived entries stay in the trail's log as well (docs/design.md,
// Trail tiers and compaction; docs/conformance.md deviation 62): the hash
// chains and the Merkle tree are computed over them, and reads find them
// there. Verify checks every archive against the log.
package coldstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/internal/atomicfile"
	"github.com/wacpd/wacpd/trail"
)

// Dir is the archives' directory inside the database directory.
const Dir = "cold"

// These errors can be returned by the functions of coldstore. Test with
// errors.Is.
var (
	// ErrNotFound is returned when no archive has the given hash.
	ErrNotFound = errors.New("coldstore: archive not found")
	// ErrCorrupt is returned when an archive's content does not hash to
	// its name, does not decompress, or does not decode.
	ErrCorrupt = errors.New("coldstore: archive does not match its hash")
)

// maxArchive bounds an archive's uncompressed size when it is read back.
const maxArchive = 1 << 30

// Summary is a trail_compacted body (Trail §8).
type Summary struct {
	Workspace string
	Archived  int    // entries_archived
	Preserved int    // entries_preserved
	From, To  string // archive_range: the first and last archived entry's timestamp ("" when none)
	Hash      string // archive_hash
}

// Body returns s as a trail_compacted body. archive_range's from and to
// are null when nothing was archived.
func (s Summary) Body() map[string]any {
	rng := map[string]any{"from": nil, "to": nil}
	if s.Archived > 0 {
		rng = map[string]any{"from": s.From, "to": s.To}
	}
	return map[string]any{
		"workspace": s.Workspace, "entries_archived": s.Archived, "entries_preserved": s.Preserved,
		"archive_range": rng, "archive_hash": s.Hash,
	}
}

// ParseSummary reads a trail_compacted body.
func ParseSummary(body []byte) (Summary, error) {
	var b struct {
		Workspace string `json:"workspace"`
		Archived  *int   `json:"entries_archived"`
		Preserved *int   `json:"entries_preserved"`
		Range     *struct {
			From *string `json:"from"`
			To   *string `json:"to"`
		} `json:"archive_range"`
		Hash string `json:"archive_hash"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return Summary{}, fmt.Errorf("coldstore: trail_compacted body: %w", err)
	}
	if b.Workspace == "" || b.Archived == nil || b.Preserved == nil || b.Range == nil || b.Hash == "" {
		return Summary{}, errors.New("coldstore: trail_compacted body: a field is missing")
	}
	s := Summary{Workspace: b.Workspace, Archived: *b.Archived, Preserved: *b.Preserved, Hash: b.Hash}
	if b.Range.From != nil {
		s.From = *b.Range.From
	}
	if b.Range.To != nil {
		s.To = *b.Range.To
	}
	return s, nil
}

// Plan splits the local trail of terminal workspace ws (its entries in
// trail order, global view) into the archive's lines and the summary of
// the compaction: pure, so that Verify computes what the summary and the
// archive must be from the log.
func Plan(ws string, local []trail.Entry) (raw []byte, s Summary) {
	s.Workspace = ws
	for _, e := range local {
		if !trail.Archivable(e) {
			s.Preserved++
			continue
		}
		if s.Archived == 0 {
			s.From = e.Timestamp
		}
		s.To = e.Timestamp
		s.Archived++
		raw = trail.AppendJSON(raw, e)
		raw = append(raw, '\n')
	}
	s.Hash = casstore.RefOf(raw).String()
	return raw, s
}

// path returns the file of the archive with hash h in dir.
func path(dir, h string) (string, error) {
	hex, ok := strings.CutPrefix(h, "blake3:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%w: %q is not an archive hash", ErrCorrupt, h)
	}
	return filepath.Join(dir, hex+".zst"), nil
}

// Name returns the archive's file name, relative to the database
// directory (cold/<hex>.zst), for reports.
func Name(h string) string {
	p, err := path(Dir, h)
	if err != nil {
		return Dir + "/" + h
	}
	return filepath.ToSlash(p)
}

// Write stores raw, whose hash is h, compressed in dir (created if need
// be), durably: a temporary file, synced, renamed to its name, and the
// directory synced. A crash leaves either no archive, a temporary file
// (*.tmp, which nothing reads), or the whole archive.
func Write(dir, h string, raw []byte) error {
	if got := casstore.RefOf(raw).String(); got != h {
		return fmt.Errorf("%w: content hashes to %s, not %s", ErrCorrupt, got, h)
	}
	name, err := path(dir, h)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	data := enc.EncodeAll(raw, nil)
	enc.Close()
	if err := atomicfile.WriteFile(name, data, 0o644); err != nil {
		return fmt.Errorf("write archive %s: %w", name, err)
	}
	return nil
}

// RemoveTemporary removes from dir the temporary files of archives whose
// write a crash cut ("." + the archive's name + a random suffix, and the
// "archive-*.tmp" files of the builds before 2026-11-27), and returns their
// names. Nothing reads them: an archive is only ever read under its final
// name, and the compaction that was cut writes it again. dir need not
// exist.
func RemoveTemporary(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, de := range ents {
		n := de.Name()
		old := strings.HasPrefix(n, "archive-") && strings.HasSuffix(n, ".tmp")
		if !de.Type().IsRegular() || !(old || (strings.HasPrefix(n, ".") && strings.Contains(n, ".zst."))) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, n)
	}
	if len(removed) > 0 {
		return removed, atomicfile.SyncDir(dir)
	}
	return nil, nil
}

// ReadRaw returns the uncompressed lines of the archive with hash h in dir,
// checked against h.
func ReadRaw(dir, h string) ([]byte, error) {
	name, err := path(dir, h)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("read archive: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxArchive))
	if err != nil {
		return nil, fmt.Errorf("read archive: %w", err)
	}
	defer dec.Close()
	raw, err := dec.DecodeAll(data, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if got := casstore.RefOf(raw).String(); got != h {
		return nil, fmt.Errorf("%w: %s hashes to %s", ErrCorrupt, name, got)
	}
	return raw, nil
}

// Read returns the entries of the archive with hash h in dir: the cold
// tier's read, checked against h.
func Read(dir, h string) ([]trail.Entry, error) {
	raw, err := ReadRaw(dir, h)
	if err != nil {
		return nil, err
	}
	return Decode(raw)
}

// Decode parses an archive's lines: each entry's JSON ended by a newline.
func Decode(raw []byte) ([]trail.Entry, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if raw[len(raw)-1] != '\n' {
		return nil, fmt.Errorf("%w: the last line has no newline", ErrCorrupt)
	}
	var out []trail.Entry
	for n, line := range bytes.Split(raw[:len(raw)-1], []byte{'\n'}) {
		var e trail.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrCorrupt, n+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

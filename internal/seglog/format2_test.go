package seglog

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// format2Block returns a block as the builds before format 3 wrote it
// (magic "WSB2"): the values zstd-compressed, the redo record S2.
func format2Block(t testing.TB, vals, redo []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	z := enc.EncodeAll(vals, nil)
	body := append(binary.BigEndian.AppendUint32(nil, uint32(len(z))), z...)
	if len(redo) > 0 {
		body = append(body, s2.Encode(nil, redo)...)
	}
	b := appendHeader(nil, body, len(vals))
	copy(b, magic2[:])
	return append(b, body...)
}

// TestReadsAndRedoesBlocksOfFormat2: a block an earlier build wrote (format
// 2, zstd values) past the end Badger records is redone at open like a
// block of format 3, its values read back through their pointers, and new
// blocks (format 3) follow it in the same file; after a reopen both read.
func TestReadsAndRedoesBlocksOfFormat2(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, Dir), 0o700); err != nil {
		t.Fatal(err)
	}
	ptr := Ptr{File: 1, Off: 0, Rec: 5, Len: 5}.Append(nil)
	redo := appendWrite(nil, opSet, Meta, []byte("a"), ptr)
	redo = appendWrite(redo, opSet, 0, []byte("b"), []byte("inline"))
	old := format2Block(t, []byte("helloworld"), redo)
	if err := os.WriteFile(filepath.Join(dir, Dir, fileName(1)), old, 0o600); err != nil {
		t.Fatal(err)
	}
	r := openRig(t, dir, Options{})
	if r.rec.Replay != 1 || r.redone.Blocks != 1 || r.redone.Writes != 2 {
		t.Fatalf("recovered %+v, redone %+v; want the format-2 block's 2 writes redone", r.rec, r.redone)
	}
	if got := r.end(); got != (Pos{File: 1, Off: uint64(len(old))}) {
		t.Fatalf("end %+v after the redo, want past the old block (%d bytes)", got, len(old))
	}
	check := func(kv map[string]string) {
		t.Helper()
		for k, want := range kv {
			if got, err := r.get(k); err != nil || got != want {
				t.Fatalf("%s: %q, %v; want %q", k, got, err, want)
			}
		}
	}
	olds := map[string]string{"a": "world", "b": "inline"}
	check(olds)
	kv := values(1, 10)
	r.commit(kv)
	if r.last.at != (Pos{File: 1, Off: uint64(len(old))}) || [4]byte(r.last.data[:4]) != magic {
		t.Fatalf("new block at %+v, magic %q; want format 3 after the old block", r.last.at, r.last.data[:4])
	}
	r.close()
	r = openRig(t, dir, Options{})
	if r.rec != (Recovered{}) {
		t.Fatalf("a clean reopen recovered %+v", r.rec)
	}
	check(olds)
	check(kv)
}

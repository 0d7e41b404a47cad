package seglog

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// The blocks' formats: what Seal writes, and the blocks of format 2
// (zstd) that earlier builds wrote.

// earlierZstdFrom is where builds before 2026-11-26 started writing blocks
// of format 2 (Log.zstdFrom): from 16 KiB of values.
const earlierZstdFrom = 16 << 10

// TestBlockFormats: every block is written in format 3 (its values
// compressed with S2), a small one and a large one alike; a large block
// of format 2 (zstd), as builds before wrote them, sits beside them; all
// read back, verify, and are redone after a crash that lost their
// commits.
func TestBlockFormats(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	small, large, earlier := values(0, 10), values(1, 200), values(4, 200) // about 1.5, 50 and 50 KB
	r.commit(small)
	smallAt := r.last.at
	r.commit(large)
	largeAt := r.last.at
	r.l.zstdFrom = earlierZstdFrom
	r.commit(earlier)
	earlierAt := r.last.at
	// Three more, written but never committed: a start redoes them.
	lostSmall, lostLarge, lostEarlier := values(2, 10), values(3, 200), values(5, 200)
	r.write(lostEarlier).Discard()
	r.l.zstdFrom = math.MaxInt
	for _, kv := range []map[string]string{lostSmall, lostLarge} {
		r.write(kv).Discard()
	}
	r.l = nil
	r.close()

	f, err := os.ReadFile(filepath.Join(dir, Dir, fileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		name string
		at   Pos
		want string
	}{{"small", smallAt, "WSB3"}, {"large", largeAt, "WSB3"}, {"earlier build's", earlierAt, "WSB2"}} {
		if got := string(f[b.at.Off : b.at.Off+4]); got != b.want {
			t.Errorf("the %s block's magic is %q, want %s", b.name, got, b.want)
		}
	}
	r = openRig(t, dir, Options{})
	if r.redone.Blocks != 3 {
		t.Errorf("redone %+v, want the 3 lost blocks", r.redone)
	}
	for _, kv := range []map[string]string{small, large, earlier, lostSmall, lostLarge, lostEarlier} {
		for k, want := range kv {
			if got, err := r.get(k); err != nil || got != want {
				t.Fatalf("%s: %q, %v; want %q", k, got, err, want)
			}
		}
	}
	if _, err := r.l.Verify(context.Background(), r.end()); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// TestZstdWithoutChecksum: a block of format 2 (zstd), as the builds that
// wrote them last did, carries no content checksum of zstd's own (the
// block's CRC covers the compressed bytes), and one an earlier release
// wrote with one reads back as before.
func TestZstdWithoutChecksum(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	earlier, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	r.l.zstdFrom = earlierZstdFrom // large blocks in format 2, as builds before wrote them
	ours := r.l.enc
	r.l.enc = earlier // with zstd's checksum, as releases before wrote
	before := values(0, 200)
	r.commit(before)
	beforeAt := r.last.at
	r.l.enc = ours
	after := values(1, 200)
	r.commit(after)
	afterAt := r.last.at
	r.close()

	f, err := os.ReadFile(filepath.Join(dir, Dir, fileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	// After the header and the values' length: the frame's magic, then its
	// descriptor, whose bit 2 says a content checksum ends the frame.
	checksummed := func(at Pos) bool {
		frame := f[at.Off+headerSize+4:]
		if string(frame[:4]) != "\x28\xb5\x2f\xfd" {
			t.Fatalf("no zstd frame at %d", at.Off)
		}
		return frame[4]&(1<<2) != 0
	}
	if !checksummed(beforeAt) || checksummed(afterAt) {
		t.Errorf("checksum flags: earlier block %v, this build's %v; want true, false", checksummed(beforeAt), checksummed(afterAt))
	}
	r = openRig(t, dir, Options{})
	for _, kv := range []map[string]string{before, after} {
		for k, want := range kv {
			if got, err := r.get(k); err != nil || got != want {
				t.Fatalf("%s: %q, %v; want %q", k, got, err, want)
			}
		}
	}
	if _, err := r.l.Verify(context.Background(), r.end()); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// TestZstdMadeWhenFirstNeeded: a log that writes and reads only blocks of
// format 3 makes no zstd encoder or decoder; reading a block of format 2
// makes the decoder.
func TestZstdMadeWhenFirstNeeded(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	kv := values(0, 200)
	r.commit(kv)
	for k, want := range kv {
		if got, err := r.get(k); err != nil || got != want {
			t.Fatalf("%s: %q, %v; want %q", k, got, err, want)
		}
	}
	if r.l.enc != nil || r.l.dec != nil {
		t.Fatalf("zstd encoder %v, decoder %v after blocks of format 3 only; want none", r.l.enc != nil, r.l.dec != nil)
	}
	r.l.zstdFrom = earlierZstdFrom
	old := values(1, 200)
	r.commit(old)
	r.close()
	r = openRig(t, dir, Options{})
	for k, want := range old {
		if got, err := r.get(k); err != nil || got != want {
			t.Fatalf("%s: %q, %v; want %q", k, got, err, want)
		}
	}
	if r.l.dec == nil {
		t.Error("no zstd decoder after reading a block of format 2")
	}
}

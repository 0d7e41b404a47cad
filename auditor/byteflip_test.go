package auditor_test

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/runtime"
)

var flips = flag.Int("flips", 0, "TestByteFlips: flip this many bytes (default: a quick set; every byte of the small files is flipped when this exceeds 1000)")

// TestByteFlips flips one byte at a time, at deterministic pseudo-random
// positions across every file of a stopped daemon's data dir (the Badger
// tables, value logs, MANIFEST, KEYREGISTRY, DISCARD, the segment files,
// and trail.pub), each
// in a fresh copy, and runs the offline verifier on the copy. Every flip
// must be caught or provably harmless, and nothing may panic:
//
//   - caught: datadir.Verify reports a violation with where it is
//     (FirstBad), or Badger refuses to open the database and says why (an
//     error from datadir.Verify);
//   - provably harmless: datadir.Verify says ok, and a full read of the
//     copy through Badger (every key and the value of its latest version,
//     with table block and value checksums checked, read from the segment
//     files where Badger holds a pointer) is byte for byte the
//     read of the original, and trail.pub is unchanged. wacpd reads the
//     data dir only through Badger, so a daemon started on the copy sees
//     exactly what it would have seen on the original (a flip in a
//     checksum-covered byte that Badger never reads, such as an unused
//     part of DISCARD or of a value log, is of this kind).
//
// -flips N runs N flips (the quick default runs a fixed set); a run with
// more than 1000 also flips every byte of the small files.
func TestByteFlips(t *testing.T) {
	d := richDataDir(t)
	orig, err := dump(filepath.Join(d.dir, datadir.DatabaseDir))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := datadir.Verify(copyDir(t, d.dir)); err != nil || !rep.OK {
		t.Fatalf("datadir.Verify(undamaged) = %+v, %v", rep, err)
	}
	files := dataFiles(t, d.dir)
	n := *flips
	if n == 0 {
		n = 200
		if raceEnabled {
			n = 120
		}
	}
	positions := flipPositions(files, n)
	counts := map[string]int{}
	for i, p := range positions {
		outcome := flipOnce(t, d, orig, p)
		counts[outcome]++
		if i%5 == 0 && !strings.HasSuffix(p.file, ".pub") {
			counts[fullCheckOnce(t, d, p, strings.HasPrefix(outcome, "harmless"))]++
		}
	}
	var summary []string
	for k, v := range counts {
		summary = append(summary, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(summary)
	t.Logf("%d flips over %d files: %s", len(positions), len(files), strings.Join(summary, ", "))
}

// flip is one byte to change: file (relative to the data dir), offset, and
// the mask to XOR it with (never 0).
type flip struct {
	file string
	off  int64
	mask byte
}

type dataFile struct {
	rel  string
	size int64
}

// dataFiles lists every file of the data dir, in a fixed order.
func dataFiles(t *testing.T, dir string) []dataFile {
	t.Helper()
	var out []dataFile
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, dataFile{rel, fi.Size()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b dataFile) int { return strings.Compare(a.rel, b.rel) })
	for _, want := range []string{"MANIFEST", ".sst", ".vlog", ".seg", "trail.pub"} {
		if !slices.ContainsFunc(out, func(f dataFile) bool { return strings.HasSuffix(f.rel, want) }) {
			t.Fatalf("the data dir has no %s file: %v", want, out)
		}
	}
	return out
}

// flipPositions picks n flips, deterministically: four in every file,
// the rest in the tables and segment files by their size (they hold every
// record); with
// n > 1000, also every byte of each file of 4 KiB or less.
func flipPositions(files []dataFile, n int) []flip {
	rng := rand.New(rand.NewPCG(11, 4))
	mask := func() byte { return byte(1 + rng.IntN(255)) }
	var out []flip
	var tables int64
	for _, f := range files {
		if f.size == 0 {
			continue
		}
		for range 4 {
			out = append(out, flip{f.rel, rng.Int64N(f.size), mask()})
		}
		if records(f.rel) {
			tables += f.size
		}
		if n > 1000 && f.size <= 4096 {
			for off := range f.size {
				out = append(out, flip{f.rel, off, mask()})
			}
		}
	}
	for rest := n - len(out); rest > 0; rest-- {
		pick := rng.Int64N(tables)
		for _, f := range files {
			if !records(f.rel) {
				continue
			}
			if pick < f.size {
				out = append(out, flip{f.rel, pick, mask()})
				break
			}
			pick -= f.size
		}
	}
	return out
}

// records reports whether the data dir's file rel holds records: a table
// or a segment file.
func records(rel string) bool {
	return strings.HasSuffix(rel, ".sst") || strings.HasSuffix(rel, ".seg")
}

// flipOnce applies p to a copy of the data dir and judges the verifier's
// answer; it returns the outcome's kind for the summary.
func flipOnce(t *testing.T, d dataDir, orig map[string][]byte, p flip) (outcome string) {
	t.Helper()
	dir := copyDir(t, d.dir)
	path := filepath.Join(dir, p.file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[p.off] ^= p.mask
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s byte %d ^ %#02x: panic: %v", p.file, p.off, p.mask, r)
			outcome = "panic"
		}
	}()
	rep, err := datadir.Verify(dir)
	switch {
	case err != nil:
		t.Logf("%s byte %d ^ %#02x: refused: %v", p.file, p.off, p.mask, err)
		return "refused at open (" + kind(p.file) + ")"
	case !rep.OK && rep.FirstBad == "":
		t.Errorf("%s byte %d ^ %#02x: datadir.Verify = %+v: a violation without where", p.file, p.off, p.mask, rep)
		return "unplaced"
	case !rep.OK:
		return "reported " + string(rep.Violation) + " (" + kind(p.file) + ")"
	}
	// Said ok: the flip must be harmless.
	got, err := dump(filepath.Join(dir, datadir.DatabaseDir))
	if err != nil {
		t.Errorf("%s byte %d ^ %#02x: datadir.Verify ok, but reading the database fails: %v", p.file, p.off, p.mask, err)
		return "missed"
	}
	pub, err := os.ReadFile(filepath.Join(dir, datadir.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	origPub, err := os.ReadFile(filepath.Join(d.dir, datadir.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if k, diff := dumpDiff(orig, got); diff != "" || !bytes.Equal(pub, origPub) {
		t.Errorf("%s byte %d ^ %#02x: datadir.Verify ok, but the data differs at %q: %s", p.file, p.off, p.mask, k, diff)
		return "missed"
	}
	return "harmless (" + kind(p.file) + ")"
}

// original returns the undamaged content of the data dir's file.
func original(t *testing.T, d dataDir, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kind names a data dir file for the summary: its extension, or its name.
func kind(file string) string {
	if ext := filepath.Ext(file); ext != "" {
		return ext
	}
	return filepath.Base(file)
}

// fullCheckOnce applies p to a copy of the data dir and starts an engine on
// it with FullCheck (wacpd -full-check): it must refuse to start when the
// flip is not harmless, and start when it is; never panic. (trail.pub is
// the Runtime's, not the engine's: flips there are left out.)
func fullCheckOnce(t *testing.T, d dataDir, p flip, harmless bool) (outcome string) {
	t.Helper()
	dir := copyDir(t, d.dir)
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, p.file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[p.off] ^= p.mask
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s byte %d ^ %#02x: Open with FullCheck panicked: %v", p.file, p.off, p.mask, r)
			outcome = "full check: panic"
		}
	}()
	if filepath.Base(p.file) == runtime.EnvelopeKeyFile {
		// The verifier does not read the engine's private envelope key;
		// the engine must refuse a damaged one (it no longer matches
		// envelope.pub), unless the flip only changed white space.
		harmless = bytes.Equal(bytes.TrimSpace(b), bytes.TrimSpace(original(t, d, p.file)))
	}
	e, err := runtime.Open(runtime.Config{DataDir: filepath.Join(dir, datadir.DatabaseDir), FullCheck: true})
	switch {
	case err != nil && harmless:
		t.Errorf("%s byte %d ^ %#02x: harmless, but Open with FullCheck = %v", p.file, p.off, p.mask, err)
		return "full check: refused a harmless flip"
	case err != nil:
		return "full check: refused"
	}
	e.Close()
	if !harmless {
		t.Errorf("%s byte %d ^ %#02x: damaged, but Open with FullCheck started", p.file, p.off, p.mask)
		return "full check: started on damage"
	}
	return "full check: started"
}

// dump reads every key of the database at dir, read-only, with the value
// of its latest version, as Badger gives them to wacpd; Badger's block and
// value checksums are checked. A panic is returned as an error.
func dump(dir string) (out map[string][]byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("badger panicked: %v", r)
		}
	}()
	db, err := badger.Open(badger.DefaultOptions(dir).WithReadOnly(true).WithLogger(nil).
		WithChecksumVerificationMode(options.OnBlockRead).WithVerifyValueChecksum(true))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	seg, _, err := seglog.Open(filepath.Join(dir, seglog.Dir), seglog.Pos{}, seglog.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer seg.Close()
	out = map[string][]byte{}
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := seg.ValueCopy(it.Item())
			if err != nil {
				return err
			}
			out[string(it.Item().Key())] = v
		}
		return nil
	})
	return out, err
}

// dumpDiff names the first key whose presence or value differs.
func dumpDiff(a, b map[string][]byte) (key, diff string) {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		va, oka := a[k]
		vb, okb := b[k]
		switch {
		case oka != okb:
			return k, fmt.Sprintf("present in the original %v, in the copy %v", oka, okb)
		case !bytes.Equal(va, vb):
			return k, "another value"
		}
	}
	return "", ""
}

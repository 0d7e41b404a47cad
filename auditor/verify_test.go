package auditor_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/trail"
)

func TestVerifyOK(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	rep := verify(t, b.data)
	workspaces := map[string]bool{}
	for _, en := range b.entries {
		if en.Workspace != "" {
			workspaces[en.Workspace] = true
		}
	}
	want := auditor.Report{
		OK: true, Entries: len(b.entries), Workspaces: len(workspaces), Objects: 2, Size: uint64(len(b.entries)),
		Root: b.sth.Root, Origin: b.sth.Origin, Timestamp: b.sth.Timestamp, PublicKey: b.key.vkey,
	}
	if rep != want {
		t.Errorf("Verify(untampered) = %+v, want %+v", rep, want)
	}
	if len(b.entries) < 10 || len(b.entries) > 15 || len(b.refs) != 2 || len(workspaces) != 2 {
		t.Errorf("the small trail has %d entries, %d objects, %d workspaces; want 10-15, 2, 2", len(b.entries), len(b.refs), len(workspaces))
	}
	if rep, err := auditor.VerifyWithKey(bytes.NewReader(b.data), b.key.vkey); err != nil || !rep.OK {
		t.Errorf("VerifyWithKey(its own key) = %+v, %v; want ok", rep, err)
	}
}

// TestTamperCorpus changes every byte of the entry lines of a small
// bundle, to byte^0x01 and to 'x', and checks that each change is found at
// the changed entry as a hash_mismatch. Under the race detector, which
// makes it take minutes and finds nothing here (Verify is sequential), it
// changes every byte of the first checkpoint_created entry and every 16th
// byte of the others.
func TestTamperCorpus(t *testing.T) {
	t.Parallel()
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	ls := lines(b.data)
	n := len(b.entries)
	start := len(ls[0])
	// owner[i] is the entry index of byte start+i.
	var owner []int
	for k := range n {
		for range ls[1+k] {
			owner = append(owner, k)
		}
	}
	var checked, failures atomic.Int64
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := bytes.Clone(b.data)
			for i := range work {
				off := start + i
				k := owner[i]
				orig := buf[off]
				for _, nb := range []byte{orig ^ 0x01, 'x'} {
					if nb == orig {
						continue
					}
					buf[off] = nb
					rep, err := auditor.Verify(bytes.NewReader(buf))
					checked.Add(1)
					id, line := b.entries[k].ID, fmt.Sprintf("line %d", k+2)
					if err != nil || rep.OK || rep.Violation != auditor.ViolationHashMismatch || !namesEntry(rep.FirstBad, id, line) {
						if failures.Add(1) <= 20 {
							t.Errorf("byte %d of entry #%d (%s) %q -> %q: Verify = %+v, %v; want hash_mismatch at %s or %s",
								off, k+1, id, orig, nb, rep, err, id, line)
						}
					}
				}
				buf[off] = orig
			}
		}()
	}
	full := -1 // the entry tampered byte by byte under the race detector
	for k, en := range b.entries {
		if en.EventType == trail.EventCheckpointCreated && full < 0 {
			full = k
		}
	}
	for i := range owner {
		if !raceEnabled || owner[i] == full || i%16 == 0 {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	t.Logf("%d single-byte changes over %d bytes of %d entries, %d missed or misreported", checked.Load(), len(owner), n, failures.Load())
}

// namesEntry reports whether firstBad names the entry with id at line: its
// id, the id as the tampered line spells it (one character off), or the
// line when nothing readable is left.
func namesEntry(firstBad, id, line string) bool {
	if firstBad == id || firstBad == line {
		return true
	}
	if len(firstBad) != len(id) {
		return false
	}
	diff := 0
	for i := range id {
		if firstBad[i] != id[i] {
			diff++
		}
	}
	return diff == 1
}

// TestVerifyEntryLines deletes, duplicates and reorders entry lines.
func TestVerifyEntryLines(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	ls := lines(b.data)
	n := len(b.entries)
	id := func(k int) string { return b.entries[k].ID }
	edit := func(f func(entries [][]byte) [][]byte) []byte {
		entries := make([][]byte, n)
		copy(entries, ls[1:1+n])
		out := [][]byte{ls[0]}
		out = append(out, f(entries)...)
		return join(append(out, ls[1+n:]...))
	}
	type tc struct {
		name     string
		data     []byte
		firstBad string
	}
	var tests []tc
	for k := range n {
		want := ""
		switch {
		case k == n-1:
			want = id(n - 2) // the trail ends early
		default:
			want = id(k + 1) // its successor no longer links
		}
		tests = append(tests, tc{fmt.Sprintf("delete #%d", k+1), edit(func(es [][]byte) [][]byte {
			return append(es[:k:k], es[k+1:]...)
		}), want})
		tests = append(tests, tc{fmt.Sprintf("duplicate #%d", k+1), edit(func(es [][]byte) [][]byte {
			out := append(es[:k+1:k+1], es[k])
			return append(out, es[k+1:]...)
		}), id(k)})
		if k+1 < n {
			tests = append(tests, tc{fmt.Sprintf("swap #%d and #%d", k+1, k+2), edit(func(es [][]byte) [][]byte {
				es[k], es[k+1] = es[k+1], es[k]
				return es
			}), id(k + 1)})
		}
	}
	tests = append(tests, tc{"first to last", edit(func(es [][]byte) [][]byte {
		return append(es[1:], es[0])
	}), id(1)})
	tests = append(tests, tc{"reverse", edit(func(es [][]byte) [][]byte {
		for i, j := 0, len(es)-1; i < j; i, j = i+1, j-1 {
			es[i], es[j] = es[j], es[i]
		}
		return es
	}), id(n - 1)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := verify(t, tt.data)
			if rep.OK || rep.Violation != auditor.ViolationChainBroken || rep.FirstBad != tt.firstBad {
				t.Errorf("Verify = %+v, want chain_broken at %s", rep, tt.firstBad)
			}
		})
	}
}

// TestVerifyNotCanonical: lines Go's JSON decoder reads as the same entry
// but that are not its canonical form.
func TestVerifyNotCanonical(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	ls := lines(b.data)
	k := 3
	id := b.entries[k].ID
	line := string(ls[1+k])
	tests := []struct{ name, from, to string }{
		{"key case", `"actor":`, `"Actor":`},
		{"outer key case", `{"entry":`, `{"Entry":`},
		{"whitespace", `"actor":`, `"actor": `},
		{"escaped letter", `"integrity":{"algorithm":"blake3-256"`, `"integrity":{"algorithm":"blake3\u002d256"`},
		{"unknown field", `{"entry":{`, `{"entry":{"zzz":1,`},
		{"duplicate key", `"actor":`, `"actor":"forged","actor":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(line, tt.from) {
				t.Fatalf("entry line %q has no %q", line, tt.from)
			}
			out := bytes.Clone(ls[0])
			for i, l := range ls[1:] {
				if i == k {
					l = []byte(strings.Replace(line, tt.from, tt.to, 1))
				}
				out = append(out, l...)
			}
			rep := verify(t, out)
			if rep.OK || rep.Violation != auditor.ViolationHashMismatch || rep.FirstBad != id {
				t.Errorf("Verify = %+v, want hash_mismatch at %s", rep, id)
			}
		})
	}
}

// TestVerifyConsistentRewrite rewrites an entry and recomputes every hash
// after it: the chains hold, the signed root does not.
func TestVerifyConsistentRewrite(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	entries := append([]trail.Entry(nil), b.entries...)
	k := 4
	entries[k].Actor = "forger"
	rechain(t, entries)
	ls := lines(b.data)
	out := bytes.Clone(ls[0])
	for _, en := range entries {
		out = append(out, canonicalLine(t, map[string]any{"entry": en})...)
	}
	out = append(out, join(ls[1+len(entries):])...)
	rep := verify(t, out)
	if rep.OK || rep.Violation != auditor.ViolationRootMismatch || rep.FirstBad != "sth" || rep.Entries != len(entries) {
		t.Errorf("Verify(consistent rewrite) = %+v, want root_mismatch at sth after %d entries", rep, len(entries))
	}
}

// rechain recomputes every local_hash, prev_hash and entry_hash of a
// global trail, as a forger would.
func rechain(t testing.TB, entries []trail.Entry) {
	t.Helper()
	prev, locals := "", map[string]string{}
	for i := range entries {
		en := &entries[i]
		en.Integrity = trail.Integrity{Algorithm: trail.Algorithm}
		if en.Workspace != "" {
			local := *en
			local.PrevHash = locals[en.Workspace]
			h, err := trail.Hash(local)
			if err != nil {
				t.Fatal(err)
			}
			en.Integrity.LocalHash, locals[en.Workspace] = h, h
		}
		en.PrevHash = prev
		h, err := trail.Hash(*en)
		if err != nil {
			t.Fatal(err)
		}
		en.Integrity.EntryHash, prev = h, h
	}
}

func TestVerifyTreeHead(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	ls := lines(b.data)
	withHeader := func(h auditor.Header) []byte {
		return append(canonicalLine(t, h), join(ls[1:])...)
	}
	header := auditor.Header{Format: auditor.Format, Origin: b.sth.Origin, PublicKey: b.key.vkey, STH: b.sth}
	other := newKey(t, "wacpd-test")
	n := uint64(len(b.entries))

	tamperedNote := header
	tamperedNote.STH.Note = strings.Replace(b.sth.Note, fmt.Sprintf("\n%d\n", n), fmt.Sprintf("\n%d\n", n+1), 1)
	tamperedNote.STH.Size = n + 1
	otherKey := header
	otherKey.STH = signHead(t, other, b.sth.Origin, b.entries, nil) // signed by a key the header does not name
	headerRoot := header
	headerRoot.STH.Root = "blake3:" + strings.Repeat("0", 64) // the note still says the real root
	headerOrigin := header
	headerOrigin.Origin = "wacpd/elsewhere"
	badKey := header
	badKey.PublicKey = "not a key"
	sigByte := header
	// Change a base64 character well inside the signature: the last ones
	// before the padding carry unused bits, and changing only those would
	// decode to the same signature.
	at := len(b.sth.Note) - 12
	sigByte.STH.Note = b.sth.Note[:at] + "A" + b.sth.Note[at+1:]
	if sigByte.STH.Note == b.sth.Note {
		sigByte.STH.Note = b.sth.Note[:at] + "B" + b.sth.Note[at+1:]
	}

	tests := []struct {
		name string
		data []byte
	}{
		{"note size changed", withHeader(tamperedNote)},
		{"signature byte changed", withHeader(sigByte)},
		{"signed by another key", withHeader(otherKey)},
		{"header root differs from the note", withHeader(headerRoot)},
		{"header origin differs", withHeader(headerOrigin)},
		{"malformed public key", withHeader(badKey)},
		{"wrong format", append(bytes.Replace(ls[0], []byte(auditor.Format), []byte("wacp-trail-bundle/2"), 1), join(ls[1:])...)},
		{"header not canonical", append(bytes.Replace(ls[0], []byte(`"format":`), []byte(`"Format":`), 1), join(ls[1:])...)},
		{"empty", nil},
		{"no header", join(ls[1:])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := verify(t, tt.data)
			if rep.OK || rep.Violation != auditor.ViolationSignatureInvalid || rep.FirstBad != "sth" {
				t.Errorf("Verify = %+v, want signature_invalid at sth", rep)
			}
		})
	}
	t.Run("untrusted key", func(t *testing.T) {
		rep, err := auditor.VerifyWithKey(bytes.NewReader(b.data), other.vkey)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationSignatureInvalid || rep.FirstBad != "sth" {
			t.Errorf("VerifyWithKey(another key) = %+v, %v; want signature_invalid at sth", rep, err)
		}
	})
}

func TestVerifyRoot(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	ls := lines(b.data)
	n := len(b.entries)
	header := func(sth trail.TreeHead) []byte {
		return canonicalLine(t, auditor.Header{Format: auditor.Format, Origin: sth.Origin, PublicKey: b.key.vkey, STH: sth})
	}

	t.Run("valid note over a wrong root", func(t *testing.T) {
		wrong := bytes.Repeat([]byte{0xab}, 32)
		sth := signHead(t, b.key, b.sth.Origin, b.entries, wrong)
		rep := verify(t, append(header(sth), join(ls[1:])...))
		if rep.OK || rep.Violation != auditor.ViolationRootMismatch || rep.FirstBad != "sth" || rep.Entries != n {
			t.Errorf("Verify = %+v, want root_mismatch at sth after %d entries", rep, n)
		}
	})
	t.Run("more entries than signed", func(t *testing.T) {
		sth := signHead(t, b.key, b.sth.Origin, b.entries[:n-1], nil)
		rep := verify(t, append(header(sth), join(ls[1:])...))
		if rep.OK || rep.Violation != auditor.ViolationChainBroken || rep.FirstBad != b.entries[n-1].ID {
			t.Errorf("Verify = %+v, want chain_broken at %s", rep, b.entries[n-1].ID)
		}
	})
	t.Run("signed prefix", func(t *testing.T) {
		// A bundle of the first n-3 entries under a head for them verifies
		// (without the objects its entries do not reference).
		m := n - 3
		sth := signHead(t, b.key, b.sth.Origin, b.entries[:m], nil)
		var buf bytes.Buffer
		bw := auditor.NewBundleWriter(&buf)
		if err := bw.Header(auditor.Header{PublicKey: b.key.vkey, STH: sth}); err != nil {
			t.Fatal(err)
		}
		for _, en := range b.entries[:m] {
			if err := bw.Entry(en); err != nil {
				t.Fatal(err)
			}
		}
		for _, ref := range bw.Referenced() {
			if err := bw.Object(ref.Digest, b.objects[ref.Digest.String()]); err != nil {
				t.Fatal(err)
			}
		}
		if err := bw.Close(); err != nil {
			t.Fatal(err)
		}
		if rep := verify(t, buf.Bytes()); !rep.OK || rep.Entries != m || rep.Size != uint64(m) {
			t.Errorf("Verify(prefix of %d) = %+v, want ok", m, rep)
		}
	})
}

func TestVerifyObjects(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	ls := lines(b.data)
	n := len(b.entries)
	head, objs := join(ls[:1+n]), ls[1+n:]
	if len(objs) != 2 {
		t.Fatalf("bundle has %d object lines, want 2", len(objs))
	}
	objectLine := func(digest string, data []byte) []byte {
		return canonicalLine(t, map[string]any{"object": map[string]string{"digest": digest, "data": base64.StdEncoding.EncodeToString(data)}})
	}
	ref0, ref1 := b.refs[0], b.refs[1]
	data0 := b.objects[ref0.Digest.String()]
	corrupt := bytes.Clone(data0)
	corrupt[len(corrupt)/2] ^= 0x01
	orphanRef, orphan := orphanAfter(ref1.Digest)
	// an object for ref0 that is a different, valid checkpoint
	other := b.objects[ref1.Digest.String()]

	tests := []struct {
		name     string
		data     []byte
		kind     auditor.Violation
		firstBad string
	}{
		{"first object removed", append(bytes.Clone(head), objs[1]...), auditor.ViolationMissingObject, ref0.Entry},
		{"second object removed", append(bytes.Clone(head), objs[0]...), auditor.ViolationMissingObject, ref1.Entry},
		{"all objects removed", head, auditor.ViolationMissingObject, earlier(b, ref0, ref1).Entry},
		{"object corrupted", append(append(bytes.Clone(head), objectLine(ref0.Digest.String(), corrupt)...), objs[1]...), auditor.ViolationHashMismatch, ref0.Entry},
		{"object swapped for another checkpoint", append(append(bytes.Clone(head), objectLine(ref0.Digest.String(), other)...), objs[1]...), auditor.ViolationHashMismatch, ref0.Entry},
		{"object line damaged", append(append(bytes.Clone(head), bytes.Replace(objs[0], []byte(`"data":`), []byte(`"Data":`), 1)...), objs[1]...), auditor.ViolationHashMismatch, ref0.Entry},
		{"orphan object", append(bytes.Clone(b.data), objectLine(orphanRef.String(), orphan)...), auditor.ViolationHashMismatch, orphanRef.String()},
		{"objects out of order", append(append(bytes.Clone(head), objs[1]...), objs[0]...), auditor.ViolationMissingObject, ref0.Entry},
		{"object twice", append(bytes.Clone(b.data), objs[1]...), auditor.ViolationHashMismatch, ref1.Digest.String()},
		{"entry after the objects", append(bytes.Clone(b.data), ls[n]...), auditor.ViolationHashMismatch, b.entries[n-1].ID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := verify(t, tt.data)
			if rep.OK || rep.Violation != tt.kind || rep.FirstBad != tt.firstBad {
				t.Errorf("Verify = %+v, want %s at %s", rep, tt.kind, tt.firstBad)
			}
		})
	}
}

// earlier returns the reference whose entry comes first in the trail.
func earlier(b bundle, r1, r2 auditor.Reference) auditor.Reference {
	for _, en := range b.entries {
		switch en.ID {
		case r1.Entry:
			return r1
		case r2.Entry:
			return r2
		}
	}
	return r1
}

// orphanAfter returns an object no entry references whose digest sorts
// after last, so that its line can come last.
func orphanAfter(last casstore.Ref) (casstore.Ref, []byte) {
	for i := 0; ; i++ {
		data := []byte(fmt.Sprintf(`{"not":"a checkpoint","n":%d}`, i))
		if r := casstore.RefOf(data); r.Compare(last) > 0 {
			return r, data
		}
	}
}

func TestBundleWriterOrder(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	h := auditor.Header{PublicKey: b.key.vkey, STH: b.sth}
	tests := []struct {
		name string
		do   func(bw *auditor.BundleWriter) error
	}{
		{"entry before header", func(bw *auditor.BundleWriter) error { return bw.Entry(b.entries[0]) }},
		{"header twice", func(bw *auditor.BundleWriter) error {
			bw.Header(h)
			return bw.Header(h)
		}},
		{"object before the entries", func(bw *auditor.BundleWriter) error {
			bw.Header(h)
			return bw.Object(b.refs[0].Digest, nil)
		}},
		{"too many entries", func(bw *auditor.BundleWriter) error {
			bw.Header(h)
			for _, en := range b.entries {
				bw.Entry(en)
			}
			return bw.Entry(b.entries[0])
		}},
		{"objects out of order", func(bw *auditor.BundleWriter) error {
			bw.Header(h)
			for _, en := range b.entries {
				bw.Entry(en)
			}
			return bw.Object(b.refs[1].Digest, nil)
		}},
		{"close without objects", func(bw *auditor.BundleWriter) error {
			bw.Header(h)
			for _, en := range b.entries {
				bw.Entry(en)
			}
			return bw.Close()
		}},
		{"close early", func(bw *auditor.BundleWriter) error {
			bw.Header(h)
			return bw.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(auditor.NewBundleWriter(&bytes.Buffer{})); !errors.Is(err, auditor.ErrBundle) {
				t.Errorf("err = %v, want ErrBundle", err)
			}
		})
	}
}

// TestBundleRoundTrip reads a bundle and writes its records again: the
// bytes are the same.
func TestBundleRoundTrip(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	got := rewrite(t, b.data)
	if !bytes.Equal(got, b.data) {
		t.Errorf("rewritten bundle differs:\n%s\nwant\n%s", got, b.data)
	}
}

func rewrite(t testing.TB, data []byte) []byte {
	t.Helper()
	br := auditor.NewBundleReader(bytes.NewReader(data))
	h, err := br.Header()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	bw := auditor.NewBundleWriter(&buf)
	if err := bw.Header(h); err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := br.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Entry != nil {
			err = bw.Entry(*rec.Entry)
		} else {
			err = bw.Object(rec.Object.Digest, rec.Object.Data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestVerifyLineEnds(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	ls := lines(b.data)
	n := len(b.entries)
	noObjects := join(ls[:1+n])
	long := append(bytes.Clone(noObjects[:len(noObjects)-1]), bytes.Repeat([]byte{' '}, auditor.MaxLine)...)
	tests := []struct {
		name     string
		data     []byte
		kind     auditor.Violation
		firstBad string
	}{
		{"no final newline", b.data[:len(b.data)-1], auditor.ViolationHashMismatch, b.refs[1].Entry},
		{"entry cut short", noObjects[:len(noObjects)-10], auditor.ViolationHashMismatch, b.entries[n-1].ID},
		{"line too long", long, auditor.ViolationHashMismatch, fmt.Sprintf("line %d", n+1)},
		{"blank line", append(bytes.Clone(ls[0]), append([]byte("\n"), join(ls[1:])...)...), auditor.ViolationHashMismatch, "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := verify(t, tt.data)
			if rep.OK || rep.Violation != tt.kind || rep.FirstBad != tt.firstBad {
				t.Errorf("Verify = %+v, want %s at %s", rep, tt.kind, tt.firstBad)
			}
		})
	}
}

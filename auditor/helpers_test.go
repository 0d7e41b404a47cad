package auditor_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
)

var ctx = context.Background()

// openEngine opens a real engine (Badger in a temp dir) at dir, or in a
// fresh temp dir when dir is "".
func openEngine(t testing.TB, dir string) *runtime.Engine {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	e, err := runtime.Open(runtime.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("runtime.Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// worker creates a worker under parent; with directive it also sends it a
// directive, which makes it active.
func worker(t testing.TB, e *runtime.Engine, parent string, directive bool, extra ...map[string]any) string {
	t.Helper()
	req := map[string]any{"role": "worker"}
	for _, x := range extra {
		for k, v := range x {
			req[k] = v
		}
	}
	actor := e.Root()
	if parent != actor {
		req["parent"] = parent
	}
	w, err := e.CreateWorkspace(ctx, actor, mustJSON(t, req))
	if err != nil {
		t.Fatalf("CreateWorkspace(%v) = %v", req, err)
	}
	if directive {
		send(t, e, e.Root(), w.ID, "directive")
	}
	return w.ID
}

func send(t testing.TB, e *runtime.Engine, from, to, typ string) {
	t.Helper()
	_, err := e.SendEnvelope(ctx, from, mustJSON(t, map[string]any{
		"to": to, "type": typ, "payload": map[string]any{"content": "do the work"},
	}))
	if err != nil {
		t.Fatalf("SendEnvelope(%s to %s) = %v", typ, to, err)
	}
}

func checkpoint(t testing.TB, e *runtime.Engine, ws string, parent *string, status string) checkpointchain.Checkpoint {
	t.Helper()
	cp, err := e.CreateCheckpoint(ctx, ws, mustJSON(t, map[string]any{
		"type": "artifact", "intent": "record progress", "parent": parent, "status": status, "confidence": "high",
		"payload": map[string]any{"files_changed": []string{"a.go"}, "content": "work", "artifacts": []string{}},
	}))
	if err != nil {
		t.Fatalf("CreateCheckpoint(%s) = %v", ws, err)
	}
	return cp
}

// smallTrail drives e through a worker that gets a directive and writes
// two checkpoints: a dozen entries, two objects.
func smallTrail(t testing.TB, e *runtime.Engine) {
	t.Helper()
	w := worker(t, e, e.Root(), true)
	c1 := checkpoint(t, e, w, nil, checkpointchain.StatusProvisional)
	checkpoint(t, e, w, &c1.ID, checkpointchain.StatusFinal)
}

// readAll returns the whole global trail.
func readAll(t testing.TB, l interface {
	Read(context.Context, trail.Query) ([]trail.Entry, string, error)
}) []trail.Entry {
	t.Helper()
	var out []trail.Entry
	after := ""
	for {
		page, next, err := l.Read(ctx, trail.Query{After: after, Limit: 7}) // small pages: exercise paging
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		after = next
	}
}

// key is a tree-head signing key.
type key struct {
	signer note.Signer
	vkey   string
}

func newKey(t testing.TB, name string) key {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return key{s, vkey}
}

// signHead signs a tree head over entries, or over root when it is set.
func signHead(t testing.TB, k key, origin string, entries []trail.Entry, root []byte) trail.TreeHead {
	t.Helper()
	if root == nil {
		hashes := make([]string, len(entries))
		for i, e := range entries {
			hashes[i] = e.Integrity.EntryHash
		}
		r, err := auditor.Root(hashes)
		if err != nil {
			t.Fatal(err)
		}
		if root, err = trail.HashBytes(r); err != nil {
			t.Fatal(err)
		}
	}
	sth, err := trail.SignTreeHead(k.signer, origin, uint64(len(entries)), root, time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		t.Fatal(err)
	}
	return sth
}

// bundle is a bundle built from a real engine, with its parts.
type bundle struct {
	data    []byte
	entries []trail.Entry
	sth     trail.TreeHead
	key     key
	refs    []auditor.Reference
	objects map[string][]byte // by digest
}

// makeBundle builds the bundle of e's whole trail, the way an exporter
// does, with a tree head signed by a fresh key.
func makeBundle(t testing.TB, e *runtime.Engine) bundle {
	t.Helper()
	k := newKey(t, "wacpd-test")
	entries := readAll(t, e.Trail())
	origin := "wacpd/" + e.Root()
	b := bundle{entries: entries, key: k, sth: signHead(t, k, origin, entries, nil), objects: map[string][]byte{}}
	var buf bytes.Buffer
	bw := auditor.NewBundleWriter(&buf)
	if err := bw.Header(auditor.Header{PublicKey: k.vkey, STH: b.sth}); err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if err := bw.Entry(en); err != nil {
			t.Fatal(err)
		}
	}
	b.refs = bw.Referenced()
	for _, ref := range b.refs {
		cp, err := e.GetCheckpoint(ctx, e.Root(), ref.Checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		data, err := checkpointchain.Encode(cp)
		if err != nil {
			t.Fatal(err)
		}
		b.objects[ref.Digest.String()] = data
		if err := bw.Object(ref.Digest, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	b.data = buf.Bytes()
	return b
}

// lines splits a bundle into its lines, each with its "\n".
func lines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return append(out, b)
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func join(ls [][]byte) []byte { return bytes.Join(ls, nil) }

func canonicalLine(t testing.TB, v any) []byte {
	t.Helper()
	b, err := trail.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func verify(t testing.TB, data []byte) auditor.Report {
	t.Helper()
	rep, err := auditor.Verify(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Verify = %v, want a report", err)
	}
	return rep
}

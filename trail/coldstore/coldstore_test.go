package coldstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wacpd/wacpd/trail"
)

func entry(id string, typ trail.EventType, body string) trail.Entry {
	return trail.Entry{ID: id, Timestamp: "2026-01-01T00:00:0" + id + "Z", Workspace: "w", Actor: "protocol", EventType: typ, Body: []byte(body)}
}

// TestPlanAndRoundTrip: Plan archives exactly §8's archivable entries; the
// archive written reads back as them, and a changed byte is ErrCorrupt.
func TestPlanAndRoundTrip(t *testing.T) {
	local := []trail.Entry{
		entry("1", trail.EventWorkspaceCreated, `{"workspace_id":"w"}`),
		entry("2", trail.EventWorkspaceStateChanged, `{"to_state":"active"}`),
		entry("3", trail.EventEnvelopeDelivered, `{"envelope_id":"e"}`),
		entry("4", trail.EventCheckpointCreated, `{"checkpoint_id":"c"}`),
		entry("5", trail.EventWorkspaceStateChanged, `{"to_state":"failed"}`),
	}
	raw, s := Plan("w", local)
	if s.Archived != 2 || s.Preserved != 3 || s.From != local[1].Timestamp || s.To != local[2].Timestamp {
		t.Fatalf("Plan = %+v", s)
	}
	dir := t.TempDir()
	if err := Write(dir, s.Hash, raw); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir, s.Hash)
	if err != nil || len(got) != 2 || got[0].ID != "2" || got[1].ID != "3" {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	if err := Write(dir, s.Hash, append(raw, '\n')); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Write of content that is not its hash = %v, want ErrCorrupt", err)
	}
	name := filepath.Join(dir, filepath.Base(Name(s.Hash)))
	b, _ := os.ReadFile(name)
	b[len(b)-2] ^= 1
	os.WriteFile(name, b, 0o644)
	if _, err := Read(dir, s.Hash); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read of a changed archive = %v, want ErrCorrupt", err)
	}
	os.Remove(name)
	if _, err := Read(dir, s.Hash); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Read of a missing archive = %v, want ErrNotFound", err)
	}
	if back, err := ParseSummary(mustBody(t, s)); err != nil || back != s {
		t.Fatalf("ParseSummary(Body) = %+v, %v; want %+v", back, err, s)
	}
}

func mustBody(t *testing.T, s Summary) []byte {
	t.Helper()
	b, err := trail.Canonical(s.Body())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestArchivable is §8's two tables.
func TestArchivable(t *testing.T) {
	for _, c := range []struct {
		typ  trail.EventType
		body string
		want bool
	}{
		{trail.EventWorkspaceStateChanged, `{"to_state":"blocked"}`, true},
		{trail.EventWorkspaceStateChanged, `{"to_state":"closed"}`, false},
		{trail.EventWorkspaceStateChanged, `{"to_state":"failed"}`, false},
		{trail.EventEnvelopeDelivered, `{}`, true},
		{trail.EventSignalDelivered, `{}`, true},
		{trail.EventBudgetWarning, `{}`, true},
		{trail.EventLivenessWarning, `{}`, true},
		{trail.EventPriorityChanged, `{}`, true},
		{trail.EventVisibilityGranted, `{"reason":"review"}`, true},
		{trail.EventEnvelopeDelivered, `{"error":"x"}`, false},
		{trail.EventWorkspaceCreated, `{}`, false},
		{trail.EventCheckpointCreated, `{}`, false},
		{trail.EventGateResolved, `{}`, false},
		{trail.EventTaskCompleted, `{}`, false},
		{trail.EventEnvelopeDelivered, `not json`, false},
	} {
		if got := trail.Archivable(trail.Entry{EventType: c.typ, Body: []byte(c.body)}); got != c.want {
			t.Errorf("Archivable(%s %s) = %v, want %v", c.typ, c.body, got, c.want)
		}
	}
}

// FuzzDecode: the archive and summary decoders return errors, never panic.
func FuzzDecode(f *testing.F) {
	raw, _ := Plan("w", []trail.Entry{entry("2", trail.EventEnvelopeDelivered, `{"envelope_id":"e"}`)})
	f.Add(raw)
	f.Add([]byte(`{"workspace":"w","entries_archived":1,"entries_preserved":0,"archive_range":{"from":null,"to":null},"archive_hash":"blake3:00"}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Decode(b)
		ParseSummary(b)
	})
}

// TestRemoveTemporary: the temporary files a cut write leaves (this
// build's and the earlier builds') are removed, and nothing else: the
// archive, a file of another name and a directory stay.
func TestRemoveTemporary(t *testing.T) {
	if got, err := RemoveTemporary(filepath.Join(t.TempDir(), "absent")); err != nil || got != nil {
		t.Fatalf("RemoveTemporary of a missing dir = %v, %v; want nothing", got, err)
	}
	raw, s := Plan("w", []trail.Entry{entry("2", trail.EventEnvelopeDelivered, `{"envelope_id":"e"}`)})
	dir := t.TempDir()
	if err := Write(dir, s.Hash, raw); err != nil {
		t.Fatal(err)
	}
	name, _ := path(dir, s.Hash)
	leftovers := []string{"." + filepath.Base(name) + ".123456", "archive-987.tmp"}
	for _, n := range append(leftovers, "notes.txt") {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("part"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".x.zst.dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := RemoveTemporary(dir)
	if err != nil || len(got) != 2 || got[0] != leftovers[0] || got[1] != leftovers[1] {
		t.Fatalf("RemoveTemporary = %v, %v; want %v", got, err, leftovers)
	}
	for _, n := range []string{filepath.Base(name), "notes.txt", ".x.zst.dir"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s after RemoveTemporary: %v; want it kept", n, err)
		}
	}
	if _, err := Read(dir, s.Hash); err != nil {
		t.Fatalf("the archive after RemoveTemporary: %v", err)
	}
}

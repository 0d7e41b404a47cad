package auditor_test

import (
	"bytes"
	"testing"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/trail"
)

// signedBundle writes a bundle of entries (rechained, as their signer
// would) signed by k, with b's objects: a bundle whose signature, hashes
// and chains all verify, so that only the trail's other rules can fail it.
func signedBundle(t *testing.T, b bundle, entries []trail.Entry) []byte {
	t.Helper()
	rechain(t, entries)
	sth := signHead(t, b.key, b.sth.Origin, entries, nil)
	out := canonicalLine(t, auditor.Header{Format: auditor.Format, Origin: sth.Origin, PublicKey: b.key.vkey, STH: sth})
	for _, en := range entries {
		out = append(out, canonicalLine(t, map[string]any{"entry": en})...)
	}
	ls := lines(b.data)
	return append(out, join(ls[1+len(b.entries):])...)
}

// TestVerifyAppliesTheTrailsRuleSet: a bundle is checked with the rules the
// daemon checks its stored trail with, per-workspace timestamps and nothing
// after a terminal state included (before issue 11, only the daemon's
// check at start had these two). Each bundle is signed and rechained, so
// only these rules can fail it.
func TestVerifyAppliesTheTrailsRuleSet(t *testing.T) {
	e := openEngine(t, "")
	smallTrail(t, e)
	b := makeBundle(t, e)
	if rep := verify(t, signedBundle(t, b, append([]trail.Entry(nil), b.entries...))); !rep.OK {
		t.Fatalf("Verify(re-signed, unchanged) = %+v, want ok", rep)
	}
	t.Run("timestamp repeated in a workspace", func(t *testing.T) {
		entries := append([]trail.Entry(nil), b.entries...)
		k := -1
		for i := 1; i < len(entries); i++ {
			if entries[i].Workspace != "" && entries[i].Workspace == entries[i-1].Workspace {
				k = i
				break
			}
		}
		if k < 0 {
			t.Fatal("no two adjacent entries of one workspace")
		}
		entries[k].Timestamp = entries[k-1].Timestamp // globally still non-decreasing
		rep := verify(t, signedBundle(t, b, entries))
		if rep.OK || rep.Violation != auditor.ViolationNotMonotonic || rep.FirstBad != entries[k].ID {
			t.Errorf("Verify = %+v, want not_monotonic at %s", rep, entries[k].ID)
		}
	})
	t.Run("entry after the workspace closed", func(t *testing.T) {
		entries := append([]trail.Entry(nil), b.entries...)
		k := -1
		for i, en := range entries {
			if en.EventType == trail.EventWorkspaceStateChanged && bytes.Contains(en.Body, []byte(`"to_state":"active"`)) {
				k = i
				break
			}
		}
		if k < 0 {
			t.Fatal("no move to active")
		}
		entries[k].Body = bytes.Replace(entries[k].Body, []byte(`"to_state":"active"`), []byte(`"to_state":"closed"`), 1)
		next := ""
		for _, en := range entries[k+1:] {
			if en.Workspace == entries[k].Workspace {
				next = en.ID
				break
			}
		}
		rep := verify(t, signedBundle(t, b, entries))
		if rep.OK || rep.Violation != auditor.ViolationAfterTerminal || rep.FirstBad != next {
			t.Errorf("Verify = %+v, want after_terminal at %s", rep, next)
		}
	})
}

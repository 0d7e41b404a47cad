package traillog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/internal/fixture"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

func TestTrail_FirstEntryPrevHashNull(t *testing.T) {
	tl := newTestLog(t)
	es := tl.append(tl.sysEv(), tl.wsEv("ws-a"), tl.wsEv("ws-b"), tl.wsEv("ws-a"), tl.wsEv("ws-b"))

	if es[0].PrevHash != "" {
		t.Errorf("first global entry prev_hash = %q, want empty", es[0].PrevHash)
	}
	global := tl.readAll(trail.Query{})
	if len(global) != 5 {
		t.Fatalf("Read returned %d entries, want 5", len(global))
	}
	if got := fixture.RawField(t, global[0], "prev_hash"); got != "null" {
		t.Errorf("first global entry JSON prev_hash = %s, want null", got)
	}
	for i, e := range global[1:] {
		if e.PrevHash == "" {
			t.Errorf("global entry #%d prev_hash is empty, want the previous entry's hash", i+2)
		}
	}
	for _, ws := range []string{"ws-a", "ws-b"} {
		local := tl.readLocal(ws)
		if len(local) != 2 {
			t.Fatalf("ReadLocal(%q) returned %d entries, want 2", ws, len(local))
		}
		if local[0].PrevHash != "" {
			t.Errorf("ReadLocal(%q)[0].PrevHash = %q, want empty (start of scope)", ws, local[0].PrevHash)
		}
		if got := fixture.RawField(t, local[0], "prev_hash"); got != "null" {
			t.Errorf("ReadLocal(%q)[0] JSON prev_hash = %s, want null", ws, got)
		}
		// The first local entry is not the first global entry: its global
		// prev_hash is set while its local one is null.
		g, err := tl.log.Get(local[0].ID)
		if err != nil {
			t.Fatalf("Get(%s): %v", local[0].ID, err)
		}
		if g.PrevHash == "" {
			t.Errorf("global view of first %s entry has empty prev_hash, want the global predecessor", ws)
		}
		if local[1].PrevHash != local[0].Integrity.EntryHash {
			t.Errorf("ReadLocal(%q)[1].PrevHash = %q, want %q", ws, local[1].PrevHash, local[0].Integrity.EntryHash)
		}
	}
}

func TestTrail_GlobalChainLinks(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(23, "ws-a", "ws-b", "ws-c")
	global := tl.readAll(trail.Query{})
	if len(global) != 23 {
		t.Fatalf("Read returned %d entries, want 23", len(global))
	}
	prev := ""
	for i, e := range global {
		if e.PrevHash != prev {
			t.Errorf("entry #%d prev_hash = %q, want %q", i+1, e.PrevHash, prev)
		}
		if !hashRE.MatchString(e.Integrity.EntryHash) {
			t.Errorf("entry #%d entry_hash = %q, want blake3:<64 hex>", i+1, e.Integrity.EntryHash)
		}
		if e.Integrity.Algorithm != trail.Algorithm {
			t.Errorf("entry #%d algorithm = %q, want %q", i+1, e.Integrity.Algorithm, trail.Algorithm)
		}
		got, err := trail.Hash(e)
		if err != nil {
			t.Fatalf("Hash(entry #%d): %v", i+1, err)
		}
		if got != e.Integrity.EntryHash {
			t.Errorf("Hash(entry #%d) = %s, want recorded %s", i+1, got, e.Integrity.EntryHash)
		}
		if i > 0 && e.ID <= global[i-1].ID {
			t.Errorf("entry #%d id %s not after %s", i+1, e.ID, global[i-1].ID)
		}
		prev = e.Integrity.EntryHash
	}
	if got := tl.log.Len(); got != 23 {
		t.Errorf("Len() = %d, want 23", got)
	}
	if id, ts := tl.log.Last(); id != global[22].ID || ts != global[22].Timestamp {
		t.Errorf("Last() = %s, %s, want %s, %s", id, ts, global[22].ID, global[22].Timestamp)
	}
	tl.verifyOK("")
}

func TestTrail_LocalHashAnchorsLocalChain(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(30, "ws-a", "ws-b", "ws-c")
	global := tl.readAll(trail.Query{})
	for _, ws := range []string{"ws-a", "ws-b", "ws-c"} {
		local := tl.readLocal(ws)
		var mine []trail.Entry
		for _, e := range global {
			if e.Workspace == ws {
				mine = append(mine, e)
			}
		}
		if len(local) != len(mine) || len(local) == 0 {
			t.Fatalf("ReadLocal(%q) has %d entries, global trail has %d of %s", ws, len(local), len(mine), ws)
		}
		prev := ""
		for i, l := range local {
			g := mine[i]
			if g.Integrity.LocalHash != l.Integrity.EntryHash {
				t.Errorf("%s #%d: global local_hash = %q, local entry_hash = %q", ws, i+1, g.Integrity.LocalHash, l.Integrity.EntryHash)
			}
			if l.Integrity.LocalHash != "" {
				t.Errorf("%s #%d: local view carries local_hash %q, want none", ws, i+1, l.Integrity.LocalHash)
			}
			if l.PrevHash != prev {
				t.Errorf("%s #%d: local prev_hash = %q, want %q", ws, i+1, l.PrevHash, prev)
			}
			if got, err := trail.Hash(l); err != nil || got != l.Integrity.EntryHash {
				t.Errorf("Hash(local %s #%d) = %s, %v, want %s", ws, i+1, got, err, l.Integrity.EntryHash)
			}
			if l.Integrity.EntryHash == g.Integrity.EntryHash {
				t.Errorf("%s #%d: local and global entry_hash are equal (%s), want distinct chains", ws, i+1, l.Integrity.EntryHash)
			}
			prev = l.Integrity.EntryHash
		}
		if got := tl.log.LocalLen(ws); got != uint64(len(local)) {
			t.Errorf("LocalLen(%q) = %d, want %d", ws, got, len(local))
		}
		tl.verifyOK(ws)
	}
}

func TestTrail_ProjectionInvariant(t *testing.T) {
	tl := newTestLog(t)
	wss := []string{"ws-a", "ws-b", "ws-c"}
	tl.interleaved(37, wss...)
	// A few appends out of the round-robin pattern.
	tl.append(tl.wsEv("ws-c"), tl.wsEv("ws-c"), tl.sysEv(), tl.wsEv("ws-a"))
	global := tl.readAll(trail.Query{})
	total := 0
	for _, ws := range wss {
		local := tl.readLocal(ws)
		filtered := tl.readAll(trail.Query{Workspace: ws})
		var byHand []string
		for _, e := range global {
			if e.Workspace == ws {
				byHand = append(byHand, e.ID)
			}
		}
		if got, want := ids(local), ids(filtered); !slices.Equal(got, want) {
			t.Errorf("ReadLocal(%q) ids = %v, Read(Workspace: %q) ids = %v", ws, got, ws, want)
		}
		if got := ids(filtered); !slices.Equal(got, byHand) {
			t.Errorf("Read(Workspace: %q) ids = %v, global trail filtered by hand = %v", ws, got, byHand)
		}
		for i := range local {
			l, g := local[i], filtered[i]
			l.PrevHash, g.PrevHash = "", ""
			l.Integrity, g.Integrity = trail.Integrity{}, trail.Integrity{}
			if !reflect.DeepEqual(l, g) {
				t.Errorf("%s #%d: local view %+v and global view %+v differ beyond the chain fields", ws, i+1, l, g)
			}
		}
		total += len(local)
	}
	system := 0
	for _, e := range global {
		if e.Workspace == "" {
			system++
		}
	}
	if system == 0 || total+system != len(global) {
		t.Errorf("local trails hold %d entries and %d are system-level, global trail has %d", total, system, len(global))
	}
	tl.verifyOK("")
}

func TestTrail_SystemEntriesHaveNoLocalHash(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(12, "ws-a", "ws-b")
	n := 0
	for _, e := range tl.readAll(trail.Query{}) {
		if e.Workspace != "" {
			if e.Integrity.LocalHash == "" {
				t.Errorf("workspace entry %s has no local_hash", e.ID)
			}
			continue
		}
		n++
		if e.Integrity.LocalHash != "" {
			t.Errorf("system entry %s local_hash = %q, want none", e.ID, e.Integrity.LocalHash)
		}
		if got := fixture.RawField(t, e, "workspace"); got != "null" {
			t.Errorf("system entry %s JSON workspace = %s, want null", e.ID, got)
		}
		b, _ := json.Marshal(e)
		if bytes.Contains(b, []byte("local_hash")) {
			t.Errorf("system entry JSON %s mentions local_hash", b)
		}
	}
	if n != 3 {
		t.Errorf("found %d system entries, want 3", n)
	}
	if got := tl.log.LocalLen(""); got != 0 {
		t.Errorf(`LocalLen("") = %d, want 0`, got)
	}
}

// rejectCase is an Append that must fail with wantErr.
type rejectCase struct {
	name    string
	ev      func(tl *testLog) Event
	wantErr error
}

// checkRejected appends one good entry, then for each case opens a new
// transaction and batch, checks that Append fails with the case's error and
// stages nothing, discards the transaction, and checks that the trail is
// unchanged.
func checkRejected(t *testing.T, tests []rejectCase) {
	tl := newTestLog(t)
	tl.append(tl.wsEv("ws-a"), tl.sysEv())
	keysBefore := tl.keys()
	lenBefore, localBefore := tl.log.Len(), tl.log.LocalLen("ws-a")
	lastID, lastTS := tl.log.Last()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev(tl)
			txn := tl.db.NewTransaction(true)
			b := tl.log.NewBatch(tl.seg.Txn(txn))
			got, err := b.Append(ev)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Append(%+v) = %v, want %v", ev, err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, trail.Entry{}) {
				t.Errorf("Append returned entry %+v with the error, want zero", got)
			}
			if n := len(b.Entries()); n != 0 {
				t.Errorf("batch holds %d entries after a rejected Append, want 0", n)
			}
			txn.Discard()
			tl.seg.Discard()
			if got := tl.keys(); !slices.Equal(got, keysBefore) {
				t.Errorf("keys after discard = %q, want %q", got, keysBefore)
			}
			if tl.log.Len() != lenBefore || tl.log.LocalLen("ws-a") != localBefore {
				t.Errorf("Len, LocalLen = %d, %d, want %d, %d", tl.log.Len(), tl.log.LocalLen("ws-a"), lenBefore, localBefore)
			}
			if id, ts := tl.log.Last(); id != lastID || ts != lastTS {
				t.Errorf("Last() = %s, %s, want %s, %s", id, ts, lastID, lastTS)
			}
		})
	}
	tl.verifyOK("")
	tl.verifyOK("ws-a")
}

func TestTrail_RejectsUnknownEventType(t *testing.T) {
	checkRejected(t, []rejectCase{
		{"unregistered", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.Type = "workspace_exploded"
			return ev
		}, trail.ErrUnknownEvent},
		{"wrong case", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.Type = "Workspace_Created"
			return ev
		}, trail.ErrUnknownEvent},
		{"empty", func(tl *testLog) Event {
			ev := tl.sysEv()
			ev.Type = ""
			return ev
		}, trail.ErrUnknownEvent},
	})
}

func TestTrail_RejectsMissingBodyField(t *testing.T) {
	checkRejected(t, []rejectCase{
		{"missing required field", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			delete(ev.Body.(map[string]any), "to_state")
			return ev
		}, trail.ErrBodyInvalid},
		{"null non-nullable field", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.Body.(map[string]any)["workspace_id"] = nil
			return ev
		}, trail.ErrBodyInvalid},
		{"empty body", func(tl *testLog) Event {
			ev := tl.sysEv()
			ev.Body = map[string]any{}
			return ev
		}, trail.ErrBodyInvalid},
		{"body not an object", func(tl *testLog) Event {
			ev := tl.sysEv()
			ev.Body = []string{"reason"}
			return ev
		}, trail.ErrBodyInvalid},
		{"nil body", func(tl *testLog) Event {
			ev := tl.sysEv()
			ev.Body = nil
			return ev
		}, trail.ErrBodyInvalid},
		{"missing id", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.ID = ""
			return ev
		}, trail.ErrBodyInvalid},
		{"missing timestamp", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.Timestamp = ""
			return ev
		}, trail.ErrBodyInvalid},
		{"missing actor", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.Actor = ""
			return ev
		}, trail.ErrBodyInvalid},
	})
}

func TestTrail_RejectsOutOfOrder(t *testing.T) {
	checkRejected(t, []rejectCase{
		{"same id as last", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.ID, _ = tl.log.Last()
			return ev
		}, ErrOrder},
		{"id before last", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.ID = "00000000000000000000000000"
			return ev
		}, ErrOrder},
		{"timestamp before last", func(tl *testLog) Event {
			ev := tl.wsEv("ws-a")
			ev.Timestamp = clock.Format(testBase)
			return ev
		}, ErrOrder},
	})

	t.Run("within one batch", func(t *testing.T) {
		tl := newTestLog(t)
		first, second := tl.wsEv("ws-a"), tl.wsEv("ws-b")
		txn := tl.db.NewTransaction(true)
		defer txn.Discard()
		b := tl.log.NewBatch(tl.seg.Txn(txn))
		if _, err := b.Append(second); err != nil {
			t.Fatalf("Append(second): %v", err)
		}
		if _, err := b.Append(first); !errors.Is(err, ErrOrder) {
			t.Errorf("Append(first after second) = %v, want %v", err, ErrOrder)
		}
	})

	t.Run("equal timestamps are allowed", func(t *testing.T) {
		// Ties are concurrent events (Trail §2); only ids must increase.
		tl := newTestLog(t)
		a, b := tl.wsEv("ws-a"), tl.wsEv("ws-b")
		b.Timestamp = a.Timestamp
		if es := tl.append(a, b); len(es) != 2 {
			t.Fatalf("appended %d entries, want 2", len(es))
		}
		tl.verifyOK("")
	})
}

func TestTrail_RejectedAppendInCommittedTxn(t *testing.T) {
	// A rejected Append stages nothing, so the rest of the batch commits alone.
	tl := newTestLog(t)
	good1 := tl.wsEv("ws-a")
	bad := tl.wsEv("ws-a")
	bad.Type = "not_an_event"
	good2 := tl.wsEv("ws-a")

	txn := tl.db.NewTransaction(true)
	defer txn.Discard()
	b := tl.log.NewBatch(tl.seg.Txn(txn))
	if _, err := b.Append(good1); err != nil {
		t.Fatalf("Append(good1): %v", err)
	}
	if _, err := b.Append(bad); !errors.Is(err, trail.ErrUnknownEvent) {
		t.Fatalf("Append(bad) = %v, want %v", err, trail.ErrUnknownEvent)
	}
	if _, err := b.Append(good2); err != nil {
		t.Fatalf("Append(good2): %v", err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	tl.commit(txn)
	b.Commit()
	if got, want := ids(tl.readAll(trail.Query{})), []string{good1.ID, good2.ID}; !slices.Equal(got, want) {
		t.Errorf("trail ids = %v, want %v", got, want)
	}
	if _, err := tl.log.Get(bad.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(rejected id) = %v, want %v", err, ErrNotFound)
	}
	tl.verifyOK("")
	tl.verifyOK("ws-a")
}

func TestTrail_DiscardedBatchChangesNothing(t *testing.T) {
	tl := newTestLog(t)
	committed := tl.append(tl.wsEv("ws-a"), tl.wsEv("ws-b"), tl.sysEv())
	keysBefore := tl.keys()
	lastID, lastTS := tl.log.Last()

	txn := tl.db.NewTransaction(true)
	b := tl.log.NewBatch(tl.seg.Txn(txn))
	for _, ev := range []Event{tl.wsEv("ws-a"), tl.wsEv("ws-c"), tl.sysEv()} {
		if _, err := b.Append(ev); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if n := len(b.Entries()); n != 3 {
		t.Fatalf("batch holds %d entries, want 3", n)
	}
	// Heads move only on Batch.Commit.
	if got := tl.log.Len(); got != 3 {
		t.Errorf("Len() before commit = %d, want 3", got)
	}
	txn.Discard()
	tl.seg.Discard()

	if got := tl.log.Len(); got != 3 {
		t.Errorf("Len() = %d, want 3", got)
	}
	for ws, want := range map[string]uint64{"ws-a": 1, "ws-b": 1, "ws-c": 0} {
		if got := tl.log.LocalLen(ws); got != want {
			t.Errorf("LocalLen(%q) = %d, want %d", ws, got, want)
		}
	}
	if id, ts := tl.log.Last(); id != lastID || ts != lastTS {
		t.Errorf("Last() = %s, %s, want %s, %s", id, ts, lastID, lastTS)
	}
	if got := tl.keys(); !slices.Equal(got, keysBefore) {
		t.Errorf("keys after discard = %q, want %q", got, keysBefore)
	}

	next := tl.append(tl.wsEv("ws-a"), tl.wsEv("ws-c"))
	if next[0].PrevHash != committed[2].Integrity.EntryHash {
		t.Errorf("first entry after the discarded batch prev_hash = %q, want the old trail.Head %q", next[0].PrevHash, committed[2].Integrity.EntryHash)
	}
	local := tl.readLocal("ws-a")
	if len(local) != 2 || local[1].PrevHash != local[0].Integrity.EntryHash {
		t.Errorf("ws-a local trail = %+v, want 2 linked entries", local)
	}
	if local := tl.readLocal("ws-c"); len(local) != 1 || local[0].PrevHash != "" {
		t.Errorf("ws-c local trail = %+v, want 1 entry with null prev_hash", local)
	}
	if got := tl.log.Len(); got != 5 {
		t.Errorf("Len() = %d, want 5", got)
	}
	tl.verifyOK("")
	for _, ws := range []string{"ws-a", "ws-b", "ws-c"} {
		tl.verifyOK(ws)
	}
}

func TestTrail_Reopen(t *testing.T) {
	tl := newTestLog(t)
	first := tl.interleaved(14, "ws-a", "ws-b", "ws-c")
	wantLen := tl.log.Len()
	wantID, wantTS := tl.log.Last()
	wantLocal := map[string]uint64{}
	for _, ws := range []string{"ws-a", "ws-b", "ws-c", "ws-none"} {
		wantLocal[ws] = tl.log.LocalLen(ws)
	}

	tl.reopen()

	if got := tl.log.Len(); got != wantLen || got != 14 {
		t.Errorf("Len() after reopen = %d, want %d", got, wantLen)
	}
	if id, ts := tl.log.Last(); id != wantID || ts != wantTS {
		t.Errorf("Last() after reopen = %s, %s, want %s, %s", id, ts, wantID, wantTS)
	}
	for ws, want := range wantLocal {
		if got := tl.log.LocalLen(ws); got != want {
			t.Errorf("LocalLen(%q) after reopen = %d, want %d", ws, got, want)
		}
	}

	more := tl.append(tl.wsEv("ws-a"), tl.sysEv(), tl.wsEv("ws-d"))
	if more[0].PrevHash != first[len(first)-1].Integrity.EntryHash {
		t.Errorf("first entry after reopen prev_hash = %q, want %q", more[0].PrevHash, first[len(first)-1].Integrity.EntryHash)
	}
	local := tl.readLocal("ws-a")
	if n := len(local); n != int(wantLocal["ws-a"])+1 || local[n-1].PrevHash != local[n-2].Integrity.EntryHash {
		t.Errorf("ws-a local trail after reopen does not chain: %+v", local)
	}
	if got := tl.log.LocalLen("ws-d"); got != 1 {
		t.Errorf(`LocalLen("ws-d") = %d, want 1`, got)
	}
	tl.verifyOK("")
	for _, ws := range []string{"ws-a", "ws-b", "ws-c", "ws-d"} {
		tl.verifyOK(ws)
	}

	tl.reopen()
	if got := tl.log.Len(); got != 17 {
		t.Errorf("Len() after second reopen = %d, want 17", got)
	}
	tl.verifyOK("")
}

func TestTrail_OpenEmpty(t *testing.T) {
	tl := newMemLog(t)
	if got := tl.log.Len(); got != 0 {
		t.Errorf("Len() = %d, want 0", got)
	}
	if id, ts := tl.log.Last(); id != "" || ts != "" {
		t.Errorf("Last() = %q, %q, want empty", id, ts)
	}
	es, next, err := tl.log.Read(context.Background(), trail.Query{})
	if err != nil || len(es) != 0 || next != "" {
		t.Errorf("Read(empty) = %v, %q, %v, want no entries", es, next, err)
	}
	res, err := tl.log.Verify(context.Background(), "")
	if err != nil || !res.OK || res.Entries != 0 {
		t.Errorf("Verify(empty) = %+v, %v, want ok with 0 entries", res, err)
	}
}

// TestTrail_FlushWritesTheHeads: a batch writes the chains' heads once, at
// Flush; a reopened log reads its length and each workspace's from them.
func TestTrail_FlushWritesTheHeads(t *testing.T) {
	tl := newTestLog(t)
	tl.append(tl.wsEv("ws-a"), tl.wsEv("ws-b"), tl.wsEv("ws-a"), tl.sysEv())
	tl.reopen()
	if got := tl.log.Len(); got != 4 {
		t.Errorf("Len() after reopen = %d, want 4", got)
	}
	for ws, want := range map[string]uint64{"ws-a": 2, "ws-b": 1} {
		if got := tl.log.LocalLen(ws); got != want {
			t.Errorf("LocalLen(%q) after reopen = %d, want %d", ws, got, want)
		}
	}
	tl.verifyOK("")

	// Without Flush neither the batch's heads nor its entries' key (their
	// group is written at Flush) are stored: the next batch's entries,
	// chained onto them, are found after a gap.
	txn := tl.db.NewTransaction(true)
	defer txn.Discard()
	b := tl.log.NewBatch(tl.seg.Txn(txn))
	if _, err := b.Append(tl.wsEv("ws-c")); err != nil {
		t.Fatal(err)
	}
	tl.commit(txn)
	b.Commit()
	tl.append(tl.wsEv("ws-c"))
	if res, err := tl.log.Verify(context.Background(), ""); err != nil || res.OK {
		t.Errorf("a batch committed without Flush verifies: %+v, %v", res, err)
	}
}

// storedHead returns the local head stored under t/h/w/<ws>.
func (tl *testLog) storedHead(ws string) trail.Head {
	tl.t.Helper()
	var h trail.Head
	if err := json.Unmarshal(tl.get(append(bytes.Clone(prefixHeadWS), ws...)), &h); err != nil {
		tl.t.Fatalf("stored head of %s: %v", ws, err)
	}
	return h
}

// TestTrail_LocalHeadWrittenOnce: a workspace's local head is stored by
// the batch that gives it its first entry and not rewritten (layout 4);
// a reopened log derives each head from the local index and the entry at
// its last position, chains new entries onto it, and reads a head of
// layout 3 (the workspace's last) as it is.
func TestTrail_LocalHeadWrittenOnce(t *testing.T) {
	tl := newTestLog(t)
	wss := []string{"ws-a", "ws-b", "ws-c"}
	tl.interleaved(40, wss...) // batches of 5: ws-a gets one entry in the first
	last := map[string]trail.Head{}
	for _, ws := range wss {
		tl.log.mu.Lock()
		last[ws] = tl.log.local[ws]
		tl.log.mu.Unlock()
		if last[ws].Seq < 8 {
			t.Fatalf("%s has %d entries, want at least 8", ws, last[ws].Seq)
		}
	}
	if h := tl.storedHead("ws-a"); h.Seq != 1 {
		t.Fatalf("stored head of ws-a = %+v, want the one at the end of the first batch (1 entry)", h)
	}
	tl.reopen()
	for _, ws := range wss {
		tl.log.mu.Lock()
		got := tl.log.local[ws]
		tl.log.mu.Unlock()
		if got != last[ws] {
			t.Errorf("head of %s after reopen = %+v, want %+v", ws, got, last[ws])
		}
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check = %+v, want OK", res)
	}
	more := tl.append(tl.wsEv("ws-a"), tl.wsEv("ws-b"))
	if more[0].Integrity.LocalHash == "" {
		t.Fatal("no local hash")
	}
	for _, ws := range wss {
		tl.verifyOK(ws)
	}

	// A head of layout 3, the workspace's last, reads as it is.
	tl.log.mu.Lock()
	h := tl.log.local["ws-c"]
	tl.log.mu.Unlock()
	tl.set(append(bytes.Clone(prefixHeadWS), "ws-c"...), appendHead(nil, h))
	tl.reopen()
	if got := tl.log.LocalLen("ws-c"); got != h.Seq {
		t.Errorf("LocalLen(ws-c) with its last head stored = %d, want %d", got, h.Seq)
	}
	if res := tl.check(0); !res.OK() {
		t.Fatalf("Check with a head of layout 3 = %+v, want OK", res)
	}
}

// TestTrail_OpenNamesAnUnreadableLastEntry: a head derived from an entry
// that is not stored fails Open with an error naming the workspace and
// the entry.
func TestTrail_OpenNamesAnUnreadableLastEntry(t *testing.T) {
	tl := newTestLog(t)
	tl.interleaved(10, "ws-a", "ws-b")
	tl.append(tl.wsEv("ws-a"))
	tl.del(globalKey(11))
	tl.log = nil
	tl.seg.Close()
	if err := tl.db.Close(); err != nil {
		t.Fatal(err)
	}
	tl.db = openBadger(t, tl.dir)
	end, err := seglog.End(tl.db)
	if err != nil {
		t.Fatal(err)
	}
	if tl.seg, _, err = seglog.Open(filepath.Join(tl.dir, seglog.Dir), end, seglog.Options{}); err != nil {
		t.Fatal(err)
	}
	_, err = Open(tl.db, tl.seg)
	if err == nil || !strings.Contains(err.Error(), "local head of ws-a") || !strings.Contains(err.Error(), "entry #11") {
		t.Fatalf("Open with ws-a's last entry gone = %v, want an error naming ws-a and entry #11", err)
	}
}

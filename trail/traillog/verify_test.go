package traillog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/zeebo/blake3"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/internal/trailtest"
	"github.com/wacpd/wacpd/trail"
)

var update = flag.Bool("update", false, "rewrite testdata/entry.golden from the current encoding")

// Raw key layout of the trail (doc: prefix "t/"). The tests spell it out
// instead of calling the package's helpers, so a layout change shows here.
func rawGlobalKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("t/g/"), seq)
}

func rawLocalKey(ws string, n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("t/w/"+ws+"/"), n)
}

// rawLocalGroup returns the local index key of ws that holds position n,
// the position of its first and its value: since layout 3 a key holds the
// positions one batch gave the workspace, 8 bytes of global seq each.
func rawLocalGroup(t testing.TB, db *badger.DB, ws string, n uint64) (key []byte, first uint64, v []byte) {
	t.Helper()
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("t/w/" + ws + "/"), Reverse: true})
		defer it.Close()
		it.Seek(rawLocalKey(ws, n))
		if !it.Valid() {
			return badger.ErrKeyNotFound
		}
		key = it.Item().KeyCopy(nil)
		first = binary.BigEndian.Uint64(key[len(key)-8:])
		var err error
		v, err = it.Item().ValueCopy(nil)
		if err == nil && n >= first+uint64(len(v)/8) {
			err = badger.ErrKeyNotFound
		}
		return err
	})
	if err != nil {
		t.Fatalf("local index of %s, position %d: %v", ws, n, err)
	}
	return key, first, v
}

// rawLocalPos returns the global seq under position n of ws's local index.
func rawLocalPos(t testing.TB, db *badger.DB, ws string, n uint64) uint64 {
	t.Helper()
	_, first, v := rawLocalGroup(t, db, ws, n)
	return binary.BigEndian.Uint64(v[8*(n-first):])
}

// rawSetLocalPos sets position n of ws's local index to seq, in the key
// that holds it, and returns what restores it.
func rawSetLocalPos(t testing.TB, db *badger.DB, ws string, n, seq uint64) (restore func()) {
	t.Helper()
	key, first, v := rawLocalGroup(t, db, ws, n)
	mut := bytes.Clone(v)
	binary.BigEndian.PutUint64(mut[8*(n-first):], seq)
	rawSet(t, db, key, mut)
	return func() { rawSet(t, db, key, v) }
}

// entrySeq returns the seq a t/g/ key names, ok false for another key:
// the raw helpers read and write a trail entry wherever it is stored (a
// key of its own, or a group: trailtest), under the key that names it.
func entrySeq(key []byte) (uint64, bool) {
	if len(key) != 12 || !bytes.HasPrefix(key, []byte("t/g/")) {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[4:]), true
}

func rawGet(t testing.TB, db *badger.DB, key []byte) []byte {
	t.Helper()
	var v []byte
	err := db.View(func(txn *badger.Txn) error {
		if seq, ok := entrySeq(key); ok {
			s, _ := testSegs.Load(db)
			seg, _ := s.(*seglog.Log)
			var err error
			v, err = trailtest.EntryValue(txn, seg, seq)
			return err
		}
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		s, _ := testSegs.Load(db)
		seg, _ := s.(*seglog.Log)
		v, err = seg.ValueCopy(item) // a pointer's value, from the test log's segments
		return err
	})
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return v
}

// testSegs maps each test database to its segments (testLog.open), for
// rawGet: a *badger.DB to a *seglog.Log, or to a nil one.
var testSegs sync.Map

func rawSet(t testing.TB, db *badger.DB, key, val []byte) {
	t.Helper()
	err := db.Update(func(txn *badger.Txn) error {
		if seq, ok := entrySeq(key); ok {
			if has, err := trailtest.HasEntry(txn, seq); err != nil || has {
				if err != nil {
					return err
				}
				return trailtest.SetEntry(txn, seq, val)
			}
		}
		return txn.Set(key, val)
	})
	if err != nil {
		t.Fatalf("set %q: %v", key, err)
	}
}

func rawDelete(t testing.TB, db *badger.DB, key []byte) {
	t.Helper()
	rawGet(t, db, key) // it must exist
	err := db.Update(func(txn *badger.Txn) error {
		if seq, ok := entrySeq(key); ok {
			return trailtest.DeleteEntry(txn, seq)
		}
		return txn.Delete(key)
	})
	if err != nil {
		t.Fatalf("delete %q: %v", key, err)
	}
}

// mutateStored decodes the value under t/g/<seq> ({"entry":{...},
// "local_prev_hash":...}), lets fn change it, and writes it back.
func mutateStored(t *testing.T, db *badger.DB, seq uint64, fn func(stored, entry map[string]any)) {
	t.Helper()
	key := rawGlobalKey(seq)
	dec := json.NewDecoder(bytes.NewReader(rawGet(t, db, key)))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("decode stored entry #%d: %v", seq, err)
	}
	entry, ok := s["entry"].(map[string]any)
	if !ok {
		t.Fatalf("stored entry #%d has no entry object: %v", seq, s)
	}
	fn(s, entry)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	rawSet(t, db, key, b)
}

// forgeStored changes the entry under t/g/<seq> the way a forger with
// storage access would: it recomputes the local hash and the entry hash so the
// entry itself verifies.
func forgeStored(t *testing.T, db *badger.DB, seq uint64, fn func(*stored)) {
	t.Helper()
	var s stored
	if err := json.Unmarshal(rawGet(t, db, rawGlobalKey(seq)), &s); err != nil {
		t.Fatal(err)
	}
	fn(&s)
	var err error
	if s.Entry.Workspace != "" {
		local := s.local()
		local.Integrity.EntryHash = ""
		if s.Entry.Integrity.LocalHash, err = trail.Hash(local); err != nil {
			t.Fatal(err)
		}
	}
	if s.Entry.Integrity.EntryHash, err = trail.Hash(s.Entry); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	rawSet(t, db, rawGlobalKey(seq), b)
}

// flipBodyByte flips the lowest bit of the first byte of one body value.
func flipBodyByte(entry map[string]any) {
	body := entry["body"].(map[string]any)
	for _, f := range trail.EventType(entry["event_type"].(string)).RequiredFields() {
		if s, ok := body[f].(string); ok && s != "" {
			b := []byte(s)
			b[0] ^= 1
			body[f] = string(b)
			return
		}
	}
	panic("no string body field to flip")
}

// tamperTrail builds a trail of 30 entries over three workspaces plus
// system-level entries, on disk.
func tamperTrail(t *testing.T) (*testLog, []trail.Entry) {
	t.Helper()
	tl := newTestLog(t)
	es := tl.interleaved(30, "ws-a", "ws-b", "ws-c")
	tl.verifyOK("")
	return tl, es
}

// seqOfWS returns the 1-based global seq and the local position of the
// n-th (0-based) entry of ws.
func seqOfWS(t *testing.T, es []trail.Entry, ws string, n int) (seq uint64, local uint64) {
	t.Helper()
	for i, e := range es {
		if e.Workspace != ws {
			continue
		}
		if n == 0 {
			return uint64(i + 1), local + 1
		}
		n--
		local++
	}
	t.Fatalf("%s has too few entries", ws)
	return 0, 0
}

func TestVerify_Tamper(t *testing.T) {
	tests := []struct {
		name string
		// tamper changes the database and returns the expected first bad
		// entry ("" to skip the check) and the workspace whose single-scope
		// Verify must also fail ("" to skip).
		tamper        func(t *testing.T, tl *testLog, es []trail.Entry) (firstBad, ws string)
		wantViolation trail.Violation
		wantWS        trail.Violation // expected violation of Verify(ws)
	}{
		{
			name: "body byte flipped in a workspace entry",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				seq, _ := seqOfWS(t, es, "ws-b", 3)
				mutateStored(t, tl.db, seq, func(_, e map[string]any) { flipBodyByte(e) })
				return es[seq-1].ID, "ws-b"
			},
			wantViolation: trail.ViolationHashMismatch, wantWS: trail.ViolationHashMismatch,
		},
		{
			name: "body byte flipped in the first entry",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				mutateStored(t, tl.db, 1, func(_, e map[string]any) { flipBodyByte(e) })
				return es[0].ID, es[0].Workspace
			},
			wantViolation: trail.ViolationHashMismatch, wantWS: trail.ViolationHashMismatch,
		},
		{
			name: "body byte flipped in a system entry",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				mutateStored(t, tl.db, 8, func(_, e map[string]any) { flipBodyByte(e) })
				if es[7].Workspace != "" {
					t.Fatalf("entry #8 is in %q, want a system entry", es[7].Workspace)
				}
				return es[7].ID, ""
			},
			wantViolation: trail.ViolationHashMismatch,
		},
		{
			name: "actor changed",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				mutateStored(t, tl.db, 14, func(_, e map[string]any) { e["actor"] = "coordinator" })
				return es[13].ID, es[13].Workspace
			},
			wantViolation: trail.ViolationHashMismatch, wantWS: trail.ViolationHashMismatch,
		},
		{
			name: "workspace moved to another workspace",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				mutateStored(t, tl.db, 1, func(_, e map[string]any) { e["workspace"] = "ws-c" })
				return es[0].ID, ""
			},
			wantViolation: trail.ViolationHashMismatch,
		},
		{
			name: "system entry changed and entry_hash recomputed",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				// A forger who rehashes the entry breaks the link to the next one.
				forgeStored(t, tl.db, 4, func(s *stored) { s.Entry.Actor = "forger" })
				return es[4].ID, ""
			},
			wantViolation: trail.ViolationChainBroken,
		},
		{
			name: "workspace entry changed and both hashes recomputed",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				// Rewriting the local chain consistently changes the anchor
				// (local_hash), so the global chain breaks (Security §5.3).
				seq, _ := seqOfWS(t, es, "ws-a", 2)
				forgeStored(t, tl.db, seq, func(s *stored) { s.Entry.Body = json.RawMessage(`{"forged":true}`) })
				return es[seq].ID, ""
			},
			wantViolation: trail.ViolationChainBroken,
		},
		{
			name: "prev_hash changed",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				mutateStored(t, tl.db, 12, func(_, e map[string]any) { e["prev_hash"] = es[9].Integrity.EntryHash })
				return es[11].ID, ""
			},
			wantViolation: trail.ViolationHashMismatch, // the entry itself changed: its hash is checked first
		},
		{
			name: "prev_hash nulled",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				mutateStored(t, tl.db, 20, func(_, e map[string]any) { e["prev_hash"] = nil })
				return es[19].ID, ""
			},
			wantViolation: trail.ViolationHashMismatch, // the entry itself changed: its hash is checked first
		},
		{
			name: "entry deleted",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				rawDelete(t, tl.db, rawGlobalKey(17))
				return "#17", "" // the missing entry
			},
			wantViolation: trail.ViolationChainBroken,
		},
		{
			name: "first entry deleted",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				rawDelete(t, tl.db, rawGlobalKey(1))
				return "#1", ""
			},
			wantViolation: trail.ViolationChainBroken,
		},
		{
			name: "last entry deleted",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				rawDelete(t, tl.db, rawGlobalKey(30))
				return "#30", "" // the trail.Head counts it
			},
			wantViolation: trail.ViolationChainBroken,
		},
		{
			name: "two entries swapped",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				a, b := rawGet(t, tl.db, rawGlobalKey(6)), rawGet(t, tl.db, rawGlobalKey(22))
				rawSet(t, tl.db, rawGlobalKey(6), b)
				rawSet(t, tl.db, rawGlobalKey(22), a)
				return es[21].ID, ""
			},
			wantViolation: trail.ViolationChainBroken,
		},
		{
			name: "adjacent entries swapped",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				a, b := rawGet(t, tl.db, rawGlobalKey(10)), rawGet(t, tl.db, rawGlobalKey(11))
				rawSet(t, tl.db, rawGlobalKey(10), b)
				rawSet(t, tl.db, rawGlobalKey(11), a)
				return es[10].ID, ""
			},
			wantViolation: trail.ViolationChainBroken,
		},
		{
			name: "local_hash changed",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				seq, _ := seqOfWS(t, es, "ws-a", 4)
				other, _ := seqOfWS(t, es, "ws-a", 2)
				mutateStored(t, tl.db, seq, func(_, e map[string]any) {
					e["integrity"].(map[string]any)["local_hash"] = es[other-1].Integrity.LocalHash
				})
				return es[seq-1].ID, "ws-a"
			},
			wantViolation: trail.ViolationHashMismatch, wantWS: trail.ViolationHashMismatch,
		},
		{
			name: "local_hash removed",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				seq, _ := seqOfWS(t, es, "ws-c", 1)
				mutateStored(t, tl.db, seq, func(_, e map[string]any) {
					delete(e["integrity"].(map[string]any), "local_hash")
				})
				return es[seq-1].ID, "ws-c"
			},
			wantViolation: trail.ViolationHashMismatch, wantWS: trail.ViolationHashMismatch,
		},
		{
			name: "local_hash added to a system entry",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				mutateStored(t, tl.db, 4, func(_, e map[string]any) {
					e["integrity"].(map[string]any)["local_hash"] = es[0].Integrity.LocalHash
				})
				return es[3].ID, ""
			},
			wantViolation: trail.ViolationHashMismatch,
		},
		{
			name: "local prev_hash changed",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				seq, _ := seqOfWS(t, es, "ws-b", 5)
				first, _ := seqOfWS(t, es, "ws-b", 0)
				mutateStored(t, tl.db, seq, func(s, _ map[string]any) {
					s["local_prev_hash"] = es[first-1].Integrity.LocalHash
				})
				return es[seq-1].ID, "ws-b"
			},
			wantViolation: trail.ViolationChainBroken, wantWS: trail.ViolationChainBroken,
		},
		{
			name: "undecodable entry",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				rawSet(t, tl.db, rawGlobalKey(9), []byte(`{"entry":`))
				return "", ""
			},
			wantViolation: trail.ViolationHashMismatch,
		},
		{
			name: "local index key deleted",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				_, n := seqOfWS(t, es, "ws-a", 3)
				rawDelete(t, tl.db, rawLocalKey("ws-a", n))
				return "", "ws-a"
			},
			wantViolation: trail.ViolationChainBroken, wantWS: trail.ViolationChainBroken,
		},
		{
			name: "local index points at another workspace's entry",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				_, n := seqOfWS(t, es, "ws-a", 2)
				seqB, _ := seqOfWS(t, es, "ws-b", 2)
				rawSetLocalPos(t, tl.db, "ws-a", n, seqB)
				return "", "ws-a"
			},
			wantViolation: trail.ViolationChainBroken, wantWS: trail.ViolationChainBroken,
		},
		{
			name: "local index entry added",
			tamper: func(t *testing.T, tl *testLog, es []trail.Entry) (string, string) {
				seqB, _ := seqOfWS(t, es, "ws-b", 0)
				rawSet(t, tl.db, rawLocalKey("ws-a", 1000), binary.BigEndian.AppendUint64(nil, seqB))
				return "", "ws-a"
			},
			wantViolation: trail.ViolationChainBroken, wantWS: trail.ViolationChainBroken,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, es := tamperTrail(t)
			firstBad, ws := tt.tamper(t, tl, es)

			res, err := tl.log.Verify(context.Background(), "")
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if res.OK || res.Violation != tt.wantViolation {
				t.Errorf("Verify = %+v, want violation %s", res, tt.wantViolation)
			}
			if firstBad != "" && res.FirstBad != firstBad {
				t.Errorf("Verify first_bad = %q, want %q", res.FirstBad, firstBad)
			}
			if res.FirstBad == "" || res.Detail == "" {
				t.Errorf("Verify = %+v, want first_bad and detail set", res)
			}

			if ws == "" {
				return
			}
			res, err = tl.log.Verify(context.Background(), ws)
			if err != nil {
				t.Fatalf("Verify(%q): %v", ws, err)
			}
			if res.OK || res.Violation != tt.wantWS {
				t.Errorf("Verify(%q) = %+v, want violation %s", ws, res, tt.wantWS)
			}
			if firstBad != "" && res.FirstBad != firstBad {
				t.Errorf("Verify(%q) first_bad = %q, want %q", ws, res.FirstBad, firstBad)
			}
			// The other workspaces' chains are untouched.
			for _, other := range []string{"ws-a", "ws-b", "ws-c"} {
				if other == ws || strings.HasPrefix(tt.name, "local index") {
					continue
				}
				if res, err := tl.log.Verify(context.Background(), other); err != nil || !res.OK {
					t.Errorf("Verify(%q) = %+v, %v, want ok", other, res, err)
				}
			}
		})
	}
}

func TestVerify_WorkspaceSeesBrokenGlobalEntry(t *testing.T) {
	// The workspace index points at a global entry that is gone or garbled:
	// the single-workspace check reports a violation, not an I/O error.
	tests := []struct {
		name   string
		tamper func(t *testing.T, db *badger.DB, seq uint64)
		want   trail.Violation
	}{
		{"entry deleted", func(t *testing.T, db *badger.DB, seq uint64) { rawDelete(t, db, rawGlobalKey(seq)) }, trail.ViolationChainBroken},
		{"entry undecodable", func(t *testing.T, db *badger.DB, seq uint64) { rawSet(t, db, rawGlobalKey(seq), []byte(`{"entry":[`)) }, trail.ViolationHashMismatch},
		{"entry of the wrong type", func(t *testing.T, db *badger.DB, seq uint64) {
			rawSet(t, db, rawGlobalKey(seq), []byte(`{"entry":{"id":7}}`))
		}, trail.ViolationHashMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, es := tamperTrail(t)
			seq, _ := seqOfWS(t, es, "ws-b", 2)
			tt.tamper(t, tl.db, seq)
			for _, ws := range []string{"ws-b", ""} {
				res, err := tl.log.Verify(context.Background(), ws)
				if err != nil {
					t.Fatalf("Verify(%q): %v", ws, err)
				}
				if res.OK || res.Violation == "" || res.FirstBad == "" {
					t.Errorf("Verify(%q) = %+v, want a violation", ws, res)
				}
				if ws != "" && res.Violation != tt.want {
					t.Errorf("Verify(%q) violation = %s, want %s", ws, res.Violation, tt.want)
				}
			}
		})
	}
}

func TestVerify_Counts(t *testing.T) {
	tl, es := tamperTrail(t)
	if res := tl.verifyOK(""); res.Entries != uint64(len(es)) {
		t.Errorf("Verify().Entries = %d, want %d", res.Entries, len(es))
	}
	for _, ws := range []string{"ws-a", "ws-b", "ws-c"} {
		if res := tl.verifyOK(ws); res.Entries != tl.log.LocalLen(ws) {
			t.Errorf("Verify(%q).Entries = %d, want %d", ws, res.Entries, tl.log.LocalLen(ws))
		}
	}
	if res := tl.verifyOK("ws-unknown"); res.Entries != 0 {
		t.Errorf("Verify(unknown ws).Entries = %d, want 0", res.Entries)
	}
	// VerifyResult is the wire reply of audit.trail.verify.
	b, err := json.Marshal(tl.verifyOK(""))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ok":true,"entries":30}`; string(b) != want {
		t.Errorf("json.Marshal(ok result) = %s, want %s", b, want)
	}
}

// TestEntryGolden freezes the entry hash format: the canonical bytes that are
// hashed and the resulting "blake3:<hex>" hashes of a fixed two-entry trail
// (a system entry, then a workspace entry with its local chain anchor).
// Regenerate with go test ./trail -run TestEntryGolden -update.
func TestEntryGolden(t *testing.T) {
	tl := newMemLog(t)
	es := tl.append(
		Event{ID: "01JDAXQ5Z0B2C3D4E5F6G7H8J9", Timestamp: "2026-11-21T22:48:25.123456789Z",
			Actor: trail.ActorProtocol, Type: trail.EventSystemDegraded, Body: map[string]any{
				"reason": "test", "scope": "global", "affected_workspaces": []string{},
				"coordinator_action": "none", "hash_algorithm": trail.Algorithm}},
		Event{ID: "01JDAXQ5Z1B2C3D4E5F6G7H8J9", Timestamp: "2026-11-21T22:48:25.223456789Z",
			Workspace: "01JDAXQ5Z0AAAAAAAAAAAAAAAA", Actor: "worker", Type: trail.EventCheckpointCreated,
			Body: map[string]any{
				"checkpoint_id": "01JDAXQ5Z1CCCCCCCCCCCCCCCC", "workspace": "01JDAXQ5Z0AAAAAAAAAAAAAAAA",
				"type": "artifact", "status": "final", "confidence": 0.75, "parent": nil,
				"timestamp": "2026-11-21T22:48:25.223456789Z", "note": "ünïcödé <&> \u2028 1e21",
				"big": 1e21, "int": 42}},
	)
	local, err := tl.log.ReadLocal(context.Background(), es[1].Workspace, "", 0)
	if err != nil || len(local) != 1 {
		t.Fatalf("ReadLocal = %v, %v", local, err)
	}

	var out bytes.Buffer
	out.WriteString("# Trail entry hash format (go test ./trail -run TestEntryGolden -update).\n")
	out.WriteString("# Each hash is \"blake3:\" + hex(BLAKE3-256(canonical)), canonical = RFC 8785 JSON of the\n")
	out.WriteString("# entry without integrity.entry_hash, integrity.signature and integrity.signer.\n")
	section := func(name string, e trail.Entry) {
		hashed := e
		hashed.Integrity.EntryHash, hashed.Integrity.Signature, hashed.Integrity.Signer = "", "", ""
		c, err := trail.Canonical(hashed)
		if err != nil {
			t.Fatalf("Canonical(%s): %v", name, err)
		}
		sum := blake3.Sum256(c)
		want := "blake3:" + hex.EncodeToString(sum[:])
		if e.Integrity.EntryHash != want {
			t.Errorf("%s entry_hash = %s, want blake3 of its canonical form %s", name, e.Integrity.EntryHash, want)
		}
		full, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("\n## " + name + " canonical\n")
		out.Write(c)
		out.WriteString("\n## " + name + " entry_hash\n" + e.Integrity.EntryHash + "\n")
		out.WriteString("## " + name + " json\n")
		out.Write(full)
		out.WriteString("\n")
	}
	section("global #1 (system)", es[0])
	section("local #1 (workspace view)", local[0])
	section("global #2 (workspace entry)", es[1])
	if es[1].Integrity.LocalHash != local[0].Integrity.EntryHash {
		t.Errorf("global #2 local_hash = %s, want %s", es[1].Integrity.LocalHash, local[0].Integrity.EntryHash)
	}

	// The golden file is the format's: it lives with package trail.
	path := filepath.Join("..", "testdata", "entry.golden")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("entry encoding changed; got:\n%s\nwant:\n%s\n(an intended change needs -update and a new format version)", out.Bytes(), want)
	}
}

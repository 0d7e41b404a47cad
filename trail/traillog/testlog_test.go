package traillog

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

// testBase is the wall-clock start of every test trail; the test clock
// advances one second per timestamp so Since/Until bounds are easy to pick.
var testBase = time.Date(2026, 11, 21, 22, 48, 25, 123456789, time.UTC)

// testLog is a Log on a real Badger database with the runtime's clock and ID
// generators.
type testLog struct {
	t   testing.TB
	dir string // "" for an in-memory database
	db  *badger.DB
	seg *seglog.Log // on disk: the entries' bytes, as the engine keeps them
	log *Log
	clk *clock.Clock
	ids *clock.IDs
}

func openBadger(t testing.TB, dir string) *badger.DB {
	t.Helper()
	opts := badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(true)
	if dir == "" {
		opts = badger.DefaultOptions("").WithInMemory(true).WithLogger(nil)
	}
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatalf("badger.Open(%q): %v", dir, err)
	}
	return db
}

func newTestClock() *clock.Clock {
	var mu sync.Mutex
	n := 0
	return clock.New(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return testBase.Add(time.Duration(n) * time.Second)
	})
}

// newTestLog opens a trail on an on-disk Badger database in t.TempDir().
func newTestLog(t testing.TB) *testLog {
	t.Helper()
	return startTestLog(t, t.TempDir())
}

// newMemLog opens a trail on an in-memory Badger database (for pure reads).
func newMemLog(t testing.TB) *testLog {
	t.Helper()
	return startTestLog(t, "")
}

func startTestLog(t testing.TB, dir string) *testLog {
	t.Helper()
	tl := &testLog{t: t, dir: dir, clk: newTestClock(), ids: clock.NewIDs(nil)}
	tl.open()
	t.Cleanup(func() {
		if tl.seg != nil {
			tl.seg.Close()
		}
		if tl.db != nil {
			tl.db.Close()
		}
	})
	return tl
}

func (tl *testLog) open() {
	tl.t.Helper()
	tl.db = openBadger(tl.t, tl.dir)
	if _, err := Upgrade(tl.db); err != nil {
		tl.t.Fatalf("Upgrade: %v", err)
	}
	tl.seg = nil
	if tl.dir != "" {
		end, err := seglog.End(tl.db)
		if err != nil {
			tl.t.Fatal(err)
		}
		seg, _, err := seglog.Open(filepath.Join(tl.dir, seglog.Dir), end, seglog.Options{})
		if err != nil {
			tl.t.Fatalf("segments: %v", err)
		}
		tl.seg = seg
	}
	testSegs.Store(tl.db, tl.seg)
	l, err := Open(tl.db, tl.seg)
	if err != nil {
		tl.t.Fatalf("Open: %v", err)
	}
	tl.log = l
}

// reopen closes the database and opens it and the trail again.
func (tl *testLog) reopen() {
	tl.t.Helper()
	if tl.dir == "" {
		tl.t.Fatal("reopen needs an on-disk database")
	}
	if tl.seg != nil {
		tl.seg.Close()
	}
	if err := tl.db.Close(); err != nil {
		tl.t.Fatalf("close badger: %v", err)
	}
	tl.open()
}

// fullBody returns a body with every field the registry requires for typ,
// each a distinct non-null string.
func fullBody(typ trail.EventType) map[string]any {
	body := map[string]any{}
	for _, f := range typ.RequiredFields() {
		body[f] = "v-" + f
	}
	return body
}

// ev returns an event with the next id and timestamp and a full body.
// ws "" makes a system-level event.
func (tl *testLog) ev(ws, actor string, typ trail.EventType) Event {
	ts := tl.clk.Next()
	return Event{
		ID: tl.ids.New(ts), Timestamp: clock.Format(ts), Workspace: ws,
		Actor: actor, Type: typ, Body: fullBody(typ),
	}
}

// wsEv returns an event of workspace ws, acted by a worker.
func (tl *testLog) wsEv(ws string) Event {
	return tl.ev(ws, "worker", trail.EventWorkspaceStateChanged)
}

// sysEv returns a system-level event.
func (tl *testLog) sysEv() Event {
	return tl.ev("", trail.ActorProtocol, trail.EventSystemDegraded)
}

// append appends evs in one batch inside one transaction, commits the
// transaction and then the batch, and returns the appended entries.
func (tl *testLog) append(evs ...Event) []trail.Entry {
	tl.t.Helper()
	txn := tl.db.NewTransaction(true)
	defer txn.Discard()
	b := tl.log.NewBatch(tl.seg.Txn(txn))
	for _, ev := range evs {
		if _, err := b.Append(ev); err != nil {
			tl.t.Fatalf("Append(%s %s in %q): %v", ev.ID, ev.Type, ev.Workspace, err)
		}
	}
	if err := b.Flush(); err != nil {
		tl.t.Fatal(err)
	}
	tl.commit(txn)
	b.Commit()
	return slices.Clone(b.Entries())
}

// commit writes the block of txn's values to the segments, then commits
// txn, as the engine's committer does.
func (tl *testLog) commit(txn *badger.Txn) {
	tl.t.Helper()
	blk, err := tl.seg.Seal(txn)
	if err != nil {
		tl.t.Fatalf("seal: %v", err)
	}
	if blk != nil {
		if err := tl.seg.Write(blk); err != nil {
			tl.t.Fatalf("write segment: %v", err)
		}
	}
	if err := txn.Commit(); err != nil {
		tl.t.Fatalf("txn.Commit: %v", err)
	}
}

// interleaved appends n entries cycling over the workspaces and, every
// fourth entry, a system-level entry. It commits in batches of 5.
func (tl *testLog) interleaved(n int, wss ...string) []trail.Entry {
	tl.t.Helper()
	var out []trail.Entry
	var batch []Event
	for i := range n {
		if i%4 == 3 {
			batch = append(batch, tl.sysEv())
		} else {
			batch = append(batch, tl.wsEv(wss[i%len(wss)]))
		}
		if len(batch) == 5 || i == n-1 {
			out = append(out, tl.append(batch...)...)
			batch = nil
		}
	}
	return out
}

func (tl *testLog) readAll(q trail.Query) []trail.Entry {
	tl.t.Helper()
	var out []trail.Entry
	for {
		page, next, err := tl.log.Read(context.Background(), q)
		if err != nil {
			tl.t.Fatalf("Read(%+v): %v", q, err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		q.After = next
	}
}

func (tl *testLog) readLocal(ws string) []trail.Entry {
	tl.t.Helper()
	var out []trail.Entry
	after := ""
	for {
		page, err := tl.log.ReadLocal(context.Background(), ws, after, trail.MaxLimit)
		if err != nil {
			tl.t.Fatalf("ReadLocal(%q, %q): %v", ws, after, err)
		}
		out = append(out, page...)
		if len(page) < trail.MaxLimit {
			return out
		}
		after = page[len(page)-1].ID
	}
}

func (tl *testLog) verifyOK(ws string) trail.VerifyResult {
	tl.t.Helper()
	res, err := tl.log.Verify(context.Background(), ws)
	if err != nil {
		tl.t.Fatalf("Verify(%q): %v", ws, err)
	}
	if !res.OK || res.Violation != "" || res.FirstBad != "" {
		tl.t.Fatalf("Verify(%q) = %+v, want ok", ws, res)
	}
	return res
}

// keys returns every key under the trail's prefix "t/".
func (tl *testLog) keys() []string {
	tl.t.Helper()
	var out []string
	err := tl.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("t/")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			out = append(out, string(it.Item().KeyCopy(nil)))
		}
		return nil
	})
	if err != nil {
		tl.t.Fatalf("list keys: %v", err)
	}
	return out
}

func ids(es []trail.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

var hashRE = regexp.MustCompile(`^blake3:[0-9a-f]{64}$`)

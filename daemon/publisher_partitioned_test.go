package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/signal/outboxstore"
)

// The publisher in perWorkspace mode, as several daemons run it against
// one stream: real engines (Badger in a temp dir), a real NATS server.

// runJetStreamServer runs a NATS server with JetStream and returns its URL.
func runJetStreamServer(t *testing.T) string {
	t.Helper()
	ns := runNATSServer(t, &natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true, NoLog: true,
		JetStream: true, StoreDir: t.TempDir(), DisableJetStreamBanner: true})
	return ns.ClientURL()
}

// testSignalStream is the WACP_SIGNALS stream as the daemon makes it, with
// replicas replicas, and a connection of the test's own to it.
type testSignalStream struct {
	nc *nats.Conn
	st jetstream.Stream
}

func newTestSignalStream(t *testing.T, url string, replicas int) *testSignalStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := createPlacedStream(t, ctx, js, jetstream.StreamConfig{
		Name: signalStream, Subjects: []string{"wacp.v1.sig.>"}, Storage: jetstream.FileStorage,
		Duplicates: signalsDedupeWindow, Discard: jetstream.DiscardOld, Replicas: replicas,
	})
	if replicas > 1 {
		waitReplicasCurrent(t, ctx, st, replicas)
	}
	return &testSignalStream{nc: nc, st: st}
}

// streamSignal is a message of the stream.
type streamSignal struct {
	seq      uint64
	id, from string
}

// all returns the stream's messages in order.
func (s *testSignalStream) all(t *testing.T) []streamSignal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := s.st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []streamSignal
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("GetMsg(%d): %v", seq, err)
		}
		var sig struct {
			ID   string `json:"id"`
			From string `json:"from"`
		}
		if err := json.Unmarshal(m.Data, &sig); err != nil {
			t.Fatal(err)
		}
		if id := m.Header.Get(jetstream.MsgIDHeader); id != sig.ID {
			t.Fatalf("message %d has Nats-Msg-Id %s and signal id %s", seq, id, sig.ID)
		}
		out = append(out, streamSignal{seq: seq, id: sig.ID, from: sig.From})
	}
	return out
}

// waitMsgs waits until the stream holds n messages, for at most 20s.
func (s *testSignalStream) waitMsgs(t *testing.T, n uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for deadline := time.Now().Add(20 * time.Second); ; {
		info, err := s.st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream holds %d signals after 20s, want %d", info.State.Msgs, n)
		}
		time.Sleep(10 * time.Millisecond) // polling the stream's state
	}
}

// checkStored checks that the stream holds each signal of want once and
// nothing else, each workspace's in the order of want (its emission
// order), and returns where each is stored.
func (s *testSignalStream) checkStored(t *testing.T, want map[string][]string) map[string]uint64 {
	t.Helper()
	got := map[string][]string{}
	at := map[string]uint64{}
	for _, m := range s.all(t) {
		if _, ok := at[m.id]; ok {
			t.Errorf("signal %s stored twice (again at %d)", m.id, m.seq)
		}
		at[m.id] = m.seq
		got[m.from] = append(got[m.from], m.id)
	}
	for ws, ids := range want {
		if !slices.Equal(got[ws], ids) {
			t.Errorf("the stream holds %s's signals\n%v\nwant, in emission order,\n%v", ws, got[ws], ids)
		}
	}
	for ws := range got {
		if _, ok := want[ws]; !ok {
			t.Errorf("the stream holds signals from %s: %v; want none", ws, got[ws])
		}
	}
	return at
}

// publishCounts counts every publish of a signal the server sees, stored or
// refused: a plain subscription on the signal subjects sees each.
type publishCounts struct {
	nc  *nats.Conn
	sub *nats.Subscription
	n   map[string]int // by signal id
}

func countPublishes(t *testing.T, url string) *publishCounts {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync("wacp.v1.sig.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &publishCounts{nc: nc, sub: sub, n: map[string]int{}}
}

// counts returns the publishes so far, by signal id. Called once every
// publish was answered, it has them all: the server queued each to this
// connection before it answered the publish, so before it answers this
// connection's flush, and the client queued each to the subscription
// before it took the answer.
func (a *publishCounts) counts(t *testing.T) map[string]int {
	t.Helper()
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		n, _, err := a.sub.Pending()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return maps.Clone(a.n)
		}
		m, err := a.sub.NextMsg(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		a.n[m.Header.Get(jetstream.MsgIDHeader)]++
	}
}

// warnLog keeps the publisher's log records at warning level and above.
type warnLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	w.mu.Lock()
	w.msgs = append(w.msgs, b.String())
	w.mu.Unlock()
	return nil
}
func (w *warnLog) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnLog) WithGroup(string) slog.Handler      { return w }

func (w *warnLog) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// wsPublisher is a publisher in perWorkspace mode on its own NATS
// connection, its signal loop running until stop.
type wsPublisher struct {
	p      *publisher
	warns  *warnLog
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	nc     *nats.Conn
}

// startWSPublisher starts a publisher of eng in perWorkspace mode; known, if
// not nil, is what it knows at start of each workspace's last signal.
func startWSPublisher(t *testing.T, eng *runtime.Engine, url string, known map[string]lastSignal) *wsPublisher {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	r := &wsPublisher{warns: &warnLog{}, done: make(chan struct{}), nc: nc}
	if r.p, err = newPublisher(eng, js, nc, slog.New(r.warns), nil); err != nil {
		t.Fatal(err)
	}
	r.p.perWorkspace = true
	if known != nil {
		r.p.lastFrom = newLastSignals(maxLastFrom)
		for ws, last := range known {
			r.p.lastFrom.put(ws, last)
		}
	}
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	go func() { defer close(r.done); r.p.runSignals(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// flush waits until the publisher has published and confirmed what it has.
func (r *wsPublisher) flush() { r.p.flush(10 * time.Second) }

// stop stops the signal loop, waits for it, and closes the connection.
func (r *wsPublisher) stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
		r.nc.Close()
	})
}

// noRetries fails the test if the publisher logged a failed publish.
func (r *wsPublisher) noRetries(t *testing.T) {
	t.Helper()
	for _, w := range r.warns.all() {
		if strings.Contains(w, "will retry") {
			t.Errorf("the publisher logged %q; want no failed publish", w)
		}
	}
}

// emitReady emits n ready signals from each workspace of from, one
// goroutine per workspace, and returns the ids of each one's signals in
// emission order. It may run outside the test's goroutine: a failed emit
// marks the test failed (see mustEmitReady).
func emitReady(t *testing.T, eng *runtime.Engine, from []string, n int) map[string][]string {
	t.Helper()
	out := make(map[string][]string, len(from))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ws := range from {
		wg.Go(func() {
			var ids []string
			for range n {
				s, err := eng.EmitSignal(ctx, ws, []byte(`{"type":"ready"}`))
				if err != nil {
					t.Errorf("EmitSignal(%s): %v", ws, err)
					return
				}
				ids = append(ids, s.ID)
			}
			mu.Lock()
			out[ws] = ids
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// mustEmitReady is emitReady, which must succeed, from the test's goroutine.
func mustEmitReady(t *testing.T, eng *runtime.Engine, from []string, n int) map[string][]string {
	t.Helper()
	out := emitReady(t, eng, from, n)
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// readyWorkers creates n directed workers under eng's root and returns
// their ids and the ids of the signals in the outbox (each worker's
// acknowledged signal), by workspace.
func readyWorkers(t *testing.T, eng *runtime.Engine, n int) ([]string, map[string][]string) {
	t.Helper()
	var ws []string
	for range n {
		ws = append(ws, newWorker(t, eng).ID)
	}
	items, err := eng.OutboxAfter("", 0)
	if err != nil {
		t.Fatal(err)
	}
	sigs := map[string][]string{}
	for _, it := range items {
		sigs[it.Signal.From] = append(sigs[it.Signal.From], it.ID)
	}
	return ws, sigs
}

// joinSignals appends each workspace's ids of more to those of m.
func joinSignals(m, more map[string][]string) map[string][]string {
	out := map[string][]string{}
	for ws, ids := range m {
		out[ws] = append(out[ws], ids...)
	}
	for ws, ids := range more {
		out[ws] = append(out[ws], ids...)
	}
	return out
}

func signalCount(m map[string][]string) (n uint64) {
	for _, ids := range m {
		n += uint64(len(ids))
	}
	return n
}

// TestPublishersPerWorkspaceShareAStream: two engines, each with its
// publisher in perWorkspace mode on its own connection, publish signals of
// three workspaces each, concurrently, to one stream (R1 on one server,
// R3 on a 3-node cluster): the stream holds every signal once, each
// workspace's in emission order, and each signal was published once (no
// refusal, no failure). The stream-wide expected sequence of the
// single-daemon mode cannot do this (the other daemon's signals move the
// stream's last sequence).
func TestPublishersPerWorkspaceShareAStream(t *testing.T) {
	for _, replicas := range []int{1, 3} {
		t.Run(fmt.Sprintf("R%d", replicas), func(t *testing.T) {
			var url string
			if replicas == 1 {
				url = runJetStreamServer(t)
			} else {
				log := &serverLog{}
				url = runNATSCluster(t, "", log)
				t.Cleanup(func() {
					if bad := log.matching(brokenStream...); len(bad) > 0 {
						t.Errorf("the servers logged a broken stream:\n%s", strings.Join(bad, "\n"))
					}
				})
			}
			stream := newTestSignalStream(t, url, replicas)
			tried := countPublishes(t, url)
			e1, e2 := openTest(t), openTest(t)
			w1, acked1 := readyWorkers(t, e1, 3)
			w2, acked2 := readyWorkers(t, e2, 3)
			p1, p2 := startWSPublisher(t, e1, url, nil), startWSPublisher(t, e2, url, nil)

			const n = 40
			var want1, want2 map[string][]string
			var wg sync.WaitGroup
			wg.Go(func() { want1 = emitReady(t, e1, w1, n) })
			wg.Go(func() { want2 = emitReady(t, e2, w2, n) })
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			want := joinSignals(joinSignals(acked1, acked2), joinSignals(want1, want2))
			stream.waitMsgs(t, signalCount(want))
			p1.flush()
			p2.flush()
			stream.checkStored(t, want)
			for id, c := range tried.counts(t) {
				if c != 1 {
					t.Errorf("signal %s published %d times, want once", id, c)
				}
			}
			p1.noRetries(t)
			p2.noRetries(t)
		})
	}
}

// reopenWithMark closes eng, sets its outbox's mark to m (m.Seq 0: before every
// signal), as a run that stopped before it saw the stream's
// acknowledgements leaves it, and opens the engine again.
func reopenWithMark(t *testing.T, eng *runtime.Engine, m outboxstore.Mark) *runtime.Engine {
	t.Helper()
	cfg := eng.Config()
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := badger.Open(badger.DefaultOptions(cfg.DataDir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error { return outboxstore.PutMark(seglog.Direct(txn), m) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	e, err := runtime.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// outboxIDs returns the ids of items.
func outboxIDs(items []runtime.OutboxItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// TestPerWorkspaceRestartPublishesNothingTwice: a publisher in
// perWorkspace mode that starts with an outbox holding signals the stream
// has (their acknowledgements not seen before the last run stopped) and
// signals never published, while another daemon's publisher shares the
// stream, publishes only those never published, once each, after the
// others of their workspace: it reads each workspace's last signal in the
// stream and takes those up to it as confirmed. The stream's window for
// repeats would drop the others; the attempts show none was sent.
func TestPerWorkspaceRestartPublishesNothingTwice(t *testing.T) {
	url := runJetStreamServer(t)
	stream := newTestSignalStream(t, url, 1)
	e1, e2 := openTest(t), openTest(t)
	w1, acked1 := readyWorkers(t, e1, 3)
	w2, acked2 := readyWorkers(t, e2, 2)
	p1 := startWSPublisher(t, e1, url, nil)
	startWSPublisher(t, e2, url, nil)
	published := joinSignals(joinSignals(acked1, acked2), joinSignals(mustEmitReady(t, e1, w1, 5), mustEmitReady(t, e2, w2, 5)))
	stream.waitMsgs(t, signalCount(published))
	p1.stop()

	// Not published: e1's publisher is stopped.
	unpublished := mustEmitReady(t, e1, w1, 3)
	e1 = reopenWithMark(t, e1, outboxstore.Mark{})
	items, err := e1.OutboxAfter("", 0)
	if err != nil || len(items) != 3*9 {
		t.Fatalf("after the restart the outbox holds %d signals, %v; want %d", len(items), err, 3*9)
	}

	tried := countPublishes(t, url)
	p1 = startWSPublisher(t, e1, url, nil)
	more := mustEmitReady(t, e2, w2, 4) // the other daemon goes on meanwhile
	want := joinSignals(joinSignals(published, unpublished), more)
	stream.waitMsgs(t, signalCount(want))
	p1.flush()
	stream.checkStored(t, want)
	counts := tried.counts(t)
	for _, ws := range w1 {
		for _, id := range published[ws] {
			if c := counts[id]; c != 0 {
				t.Errorf("signal %s, stored before the restart, published %d times after it", id, c)
			}
		}
		for _, id := range unpublished[ws] {
			if c := counts[id]; c != 1 {
				t.Errorf("signal %s, not published before the restart, published %d times after it; want once", id, c)
			}
		}
	}
	p1.noRetries(t)
}

// TestPerWorkspaceStaleLastSequence: a publisher whose idea of a
// workspace's last signal in the stream is stale (here: another instance
// that knew it before two more were stored) is refused for a wrong last
// sequence, reads the workspace's last signal again and goes on, without
// a failure or a pause:
//   - a signal not stored is published again, expecting the last one
//     read, and stored once, after the others;
//   - a signal the stream holds (its acknowledgement lost before a
//     restart) is the last one read, and is confirmed with it, not
//     published again.
func TestPerWorkspaceStaleLastSequence(t *testing.T) {
	url := runJetStreamServer(t)
	stream := newTestSignalStream(t, url, 1)
	eng := openTest(t)
	w, acked := readyWorkers(t, eng, 1)
	ws := w[0]
	var mu sync.Mutex
	seqOf := map[string]uint64{} // trail position of each signal
	record := func(c runtime.Commit) {
		mu.Lock()
		for _, it := range c.Outbox {
			seqOf[it.ID] = it.Seq
		}
		mu.Unlock()
	}
	eng.OnCommit(record)

	p1 := startWSPublisher(t, eng, url, nil)
	first := append(acked[ws], mustEmitReady(t, eng, []string{ws}, 2)[ws]...)
	stream.waitMsgs(t, 3)
	p1.flush()
	at := stream.checkStored(t, map[string][]string{ws: first})
	stale := map[string]lastSignal{ws: {id: first[0], seq: at[first[0]]}}
	p1.stop()

	// The outbox's mark rides on the next commit, past the two.
	s3 := mustEmitReady(t, eng, []string{ws}, 1)[ws]
	if items, err := eng.OutboxAfter("", 0); err != nil || !slices.Equal(outboxIDs(items), s3) {
		t.Fatalf("the outbox holds %v, %v; want %v", outboxIDs(items), err, s3)
	}
	tried := countPublishes(t, url)
	p2 := startWSPublisher(t, eng, url, stale)
	stream.waitMsgs(t, 4)
	p2.flush()
	want := append(slices.Clone(first), s3...)
	stream.checkStored(t, map[string][]string{ws: want})
	if c := tried.counts(t)[s3[0]]; c != 2 {
		t.Errorf("signal %s published %d times; want twice (refused, then stored)", s3[0], c)
	}
	p2.noRetries(t)
	p2.stop()

	// A restart: the acknowledgement of the third was not seen, and a
	// fourth was never published.
	s4 := mustEmitReady(t, eng, []string{ws}, 1)[ws]
	mu.Lock()
	mark := outboxstore.Mark{Seq: seqOf[first[2]], Signal: first[2]}
	mu.Unlock()
	eng = reopenWithMark(t, eng, mark)
	if items, err := eng.OutboxAfter("", 0); err != nil || !slices.Equal(outboxIDs(items), append(slices.Clone(s3), s4...)) {
		t.Fatalf("after the restart the outbox holds %v, %v; want %v", outboxIDs(items), err, append(s3, s4...))
	}
	tried = countPublishes(t, url)
	p3 := startWSPublisher(t, eng, url, stale)
	stream.waitMsgs(t, 5)
	p3.flush()
	stream.checkStored(t, map[string][]string{ws: append(want, s4...)})
	counts := tried.counts(t)
	if counts[s3[0]] != 1 || counts[s4[0]] != 1 {
		t.Errorf("after the restart signals %s and %s published %d and %d times; want once each (the first refused)",
			s3[0], s4[0], counts[s3[0]], counts[s4[0]])
	}
	p3.noRetries(t)
}

package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/wire"
)

// Bounds are what this machine allows any server of the wire contract's
// checkpoint path, measured with the daemon's concurrency and message sizes
// on the same disk: each request is a NATS request and reply over TCP, and
// each answered request publishes one signal to a JetStream stream with
// file storage, which a consumer follows. Neither server checks, hashes or
// indexes anything.
type Bounds struct {
	// Transport stores nothing but the signal: no server that stores its
	// checkpoints can be faster.
	Transport BoundRun `json:"transport"`
	// HandBuilt also writes each request to Badger in a synchronous
	// transaction of its own before answering (concurrent transactions,
	// batched only by Badger): what a service built in an afternoon from
	// the same parts does.
	HandBuilt BoundRun `json:"hand_built"`
	// Contract is the volume bound with what the wire contract asks of
	// every checkpoint on the transport besides: token authentication with
	// NATS permissions that keep each requester to its own subject and its
	// token's inbox prefix (wire-v1 §2), the service served with nats.go
	// micro (§3), the signal published with its id as Nats-Msg-Id (§5),
	// and the three live-feed messages of the checkpoint's three trail
	// entries (§5); its requesters send the client library's token header
	// and its consumer acknowledges each signal, as the bench's agents and
	// coordinator do. No server of the wire contract that stores what the
	// daemon stores, in Badger, is faster; the daemon's distance to it is
	// its own work (validation, hashes, chains, the Merkle tree, records,
	// and the accounts it puts each principal in). Measured with the volume
	// bound.
	Contract *BoundRun `json:"contract,omitempty"`
	// Volume is the hand-built service with group commit (one transaction
	// for every request waiting, the next built while one is written) that
	// stores, per request, as many keys and bytes as the daemon gave Badger
	// per checkpoint in this run's load, and as many bytes as it gave its
	// segment files, appended to a file and synced before the transaction,
	// which Badger then writes without syncing, as the daemon's (Shape);
	// and does nothing else. No server that stores what the daemon stores,
	// as it stores it, is faster. Measured after the load (it needs the
	// load's figures), only with the in-process daemon.
	Volume *BoundRun `json:"volume,omitempty"`
	Shape  *Shape    `json:"volume_shape,omitempty"`
}

// boundSpec says what a bound's server does for each request.
type boundSpec struct {
	store boundStore
	shape Shape // with storeGrouped
	// contract adds the wire contract's obligations on the transport:
	// Bounds.Contract.
	contract bool
	// window cuts a long run into windows of that many requests, as the
	// load's (Config.Window).
	window int
}

// boundStore is how a bound's server stores a request before answering.
type boundStore int

const (
	storeNothing boundStore = iota // the transport bound
	storeEach                      // the hand-built bound: a transaction per request
	storeGrouped                   // the volume bound: group commit, a Shape per request
	// storeSegmented is storeGrouped with each group's values appended to
	// a segment file (written and synced before the transaction) and
	// only a 12-byte pointer per key in Badger: a probe of a store that
	// does not rewrite immutable data (BenchmarkVolumeSoak), not a bound.
	storeSegmented
)

// BoundRun is one bound's load figures.
type BoundRun struct {
	Acks    Latency       `json:"ack"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"requests_per_s"`
	Signals int           `json:"signals_consumed"`
	// SignalLatency is from the moment the server took the request (before
	// its write, as the daemon stamps a checkpoint) to the signal's
	// delivery to the consumer: what the daemon's signal row measures.
	SignalLatency Latency `json:"signal"`
	Stored        int     `json:"stored"` // requests stored durably (the hand-built, volume and contract bounds)
	// PeakRSS is this process's peak resident set during the bound's run
	// (VmHWM, reset at its start; 0 where it cannot be reset): server,
	// NATS, Badger and requesters.
	PeakRSS int64 `json:"peak_rss_bytes,omitempty"`
	// Windows and Growth are the run's windows of requests and its last
	// over its first, for a run of two windows or more (a soak's -n).
	Windows []Window `json:"windows,omitempty"`
	Growth  *Growth  `json:"growth,omitempty"`
	// CPU is this process's CPU time (all threads: server, requesters,
	// NATS, Badger) per request over the bound's run.
	CPU time.Duration `json:"cpu_per_request_ns"`
}

// boundSignalSize is the size of a bound's signal: the daemon's signal
// record is a few hundred bytes.
const boundSignalSize = 512

// boundMessages are what a bound's requesters send and its server answers:
// the agents' own checkpoint request, which each requester encodes for
// every request as the client library does, and a checkpoint record as the
// daemon would answer it, which each requester decodes.
type boundMessages struct {
	req   client.CheckpointRequest
	reply []byte
}

// boundTimeout bounds each request of a bound.
const boundTimeout = 30 * time.Second

// newBoundMessages returns the bounds' messages for a payload of size
// bytes.
func newBoundMessages(size int) (boundMessages, error) {
	req := checkpointRequest(string(payload(size)), nil)
	cp := checkpointchain.Checkpoint{
		ID: "01M80000000000000000000000", Workspace: "01M80000000000000000000001", Type: req.Type,
		Payload: req.Payload, Intent: req.Intent, Status: req.Status, Confidence: req.Confidence,
		Timestamp: clock.Format(time.Now()),
	}
	if _, err := checkpointchain.Seal(&cp); err != nil {
		return boundMessages{}, err
	}
	reply, err := json.Marshal(cp)
	if err != nil {
		return boundMessages{}, err
	}
	return boundMessages{req: req, reply: reply}, nil
}

// measureBounds runs the transport bound, then the hand-built one, each in
// its own directory under dir, with clients requesters for d or, if n is
// positive, n requests in all.
func measureBounds(ctx context.Context, dir string, clients, size int, d time.Duration, n, window int) (Bounds, error) {
	msgs, err := newBoundMessages(size)
	if err != nil {
		return Bounds{}, err
	}
	var b Bounds
	if b.Transport, err = runBound(ctx, filepath.Join(dir, "transport"), clients, msgs, d, n, boundSpec{window: window}); err != nil {
		return Bounds{}, fmt.Errorf("transport bound: %w", err)
	}
	if b.HandBuilt, err = runBound(ctx, filepath.Join(dir, "hand-built"), clients, msgs, d, n, boundSpec{store: storeEach, window: window}); err != nil {
		return Bounds{}, fmt.Errorf("hand-built bound: %w", err)
	}
	return b, nil
}

// runBound starts a NATS server with JetStream under dir, serves requests
// (storing them in Badger under dir as spec says), runs the requesters and
// waits for the consumer to have every signal.
func runBound(ctx context.Context, dir string, clients int, msgs boundMessages, d time.Duration, n int, spec boundSpec) (_ BoundRun, err error) {
	opts := &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: filepath.Join(dir, "jetstream"),
		NoLog: true, NoSigs: true,
	}
	if spec.contract {
		opts.CustomClientAuthentication = boundAuth{}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return BoundRun{}, fmt.Errorf("nats server: %w", err)
	}
	go ns.Start()
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	if !ns.ReadyForConnections(10 * time.Second) {
		return BoundRun{}, errors.New("nats server not ready after 10s")
	}
	var db *badger.DB
	if spec.store != storeNothing {
		// With a segment file, its sync is a group's only one, as the
		// daemon's (its block holds the redo record of the group's Badger
		// writes): Badger then writes without syncing.
		segmented := spec.store == storeSegmented || spec.shape.Segment > 0
		if db, err = badger.Open(badger.DefaultOptions(filepath.Join(dir, "db")).WithSyncWrites(!segmented).WithLogger(nil)); err != nil {
			return BoundRun{}, fmt.Errorf("open badger: %w", err)
		}
		defer func() {
			if cerr := db.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("close badger: %w", cerr)
			}
		}()
	}
	var seg *segFile
	if spec.store == storeSegmented || spec.shape.Segment > 0 {
		f, err := os.OpenFile(filepath.Join(dir, "segment"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return BoundRun{}, fmt.Errorf("open segment: %w", err)
		}
		seg = &segFile{f: f}
		defer seg.close()
	}
	srv, err := startBoundServer(ctx, ns.ClientURL(), db, seg, spec, msgs.reply)
	if err != nil {
		return BoundRun{}, err
	}
	defer srv.close()

	// What earlier phases left is returned to the system first, so that
	// the peak is this run's.
	debug.FreeOSMemory()
	reset := resetPeakRSS()
	p := newPlan(d, n)
	start, cpu0 := time.Now(), processCPU()
	acks, err := boundRequesters(ctx, ns.ClientURL(), clients, msgs.req, p, spec.contract)
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	if err != nil {
		return BoundRun{}, err
	}
	if err := srv.wait(ctx, len(acks)); err != nil {
		return BoundRun{}, err
	}
	ds := make([]time.Duration, len(acks))
	for i, a := range acks {
		ds[i] = a.d
	}
	run := BoundRun{Acks: Summarize(ds), Elapsed: elapsed, Rate: rate(len(acks), elapsed), Signals: int(srv.consumed.Load()),
		SignalLatency: srv.signalLatency(), Stored: int(srv.stored.Load()), CPU: perOp(cpu, len(acks))}
	if reset {
		run.PeakRSS = peakRSS()
	}
	if spec.window > 0 && len(acks) >= 2*spec.window {
		run.Windows = windows(acks, spec.window, nil, start)
		run.Growth = growth(run.Windows)
	}
	return run, nil
}

// boundServer answers requests on bound.req.<client> and publishes one
// signal per request to the stream BOUND; a consumer on another connection
// counts them.
type boundServer struct {
	nc, coord *nats.Conn
	js        jetstream.JetStream
	consumed  atomic.Int64
	stored    atomic.Int64
	cc        jetstream.ConsumeContext
	handlers  sync.WaitGroup
	failed    atomic.Pointer[error]

	// With storeGrouped: requests wait in queue for the committer, which
	// stops when done is closed.
	queue     chan boundReq
	done      chan struct{}
	committer sync.WaitGroup
	seg       *segFile // with storeSegmented, or a shape with Segment bytes
	pointers  bool     // storeSegmented: every value in seg, a pointer in Badger

	mu      sync.Mutex      // guards latency
	latency []time.Duration // of each signal consumed
}

// signalLatency summarizes the signals' publish-to-delivery times.
func (s *boundServer) signalLatency() Latency {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Summarize(s.latency)
}

// stamp writes the time into the first 8 bytes of a signal.
func stamp(signal []byte, t time.Time) []byte {
	out := make([]byte, len(signal))
	copy(out, signal)
	binary.BigEndian.PutUint64(out, uint64(t.UnixNano()))
	return out
}

func startBoundServer(ctx context.Context, url string, db *badger.DB, seg *segFile, spec boundSpec, reply []byte) (_ *boundServer, err error) {
	store, shape := spec.store, spec.shape
	s := &boundServer{seg: seg, pointers: store == storeSegmented}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.nc, err = nats.Connect(url, nats.Token(boundServerToken)); err != nil {
		return nil, fmt.Errorf("server connection: %w", err)
	}
	if s.coord, err = nats.Connect(url, nats.Token(boundServerToken)); err != nil {
		return nil, fmt.Errorf("consumer connection: %w", err)
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		return nil, err
	}
	if _, err = s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "BOUND", Subjects: []string{"bound.sig.>"}, Storage: jetstream.FileStorage,
	}); err != nil {
		return nil, fmt.Errorf("create stream: %w", err)
	}
	cjs, err := jetstream.New(s.coord)
	if err != nil {
		return nil, err
	}
	ackPolicy := jetstream.AckNonePolicy
	if spec.contract {
		ackPolicy = jetstream.AckExplicitPolicy
	}
	cons, err := cjs.CreateOrUpdateConsumer(ctx, "BOUND", jetstream.ConsumerConfig{
		Durable: "coordinator", DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: ackPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer: %w", err)
	}
	consume := func(m jetstream.Msg) {
		if d := m.Data(); len(d) >= 8 {
			at := time.Unix(0, int64(binary.BigEndian.Uint64(d)))
			s.mu.Lock()
			s.latency = append(s.latency, time.Since(at))
			s.mu.Unlock()
		}
		if spec.contract {
			// As the client library's Watch: acknowledged without
			// waiting for the server's confirmation.
			if err := m.Ack(); err != nil {
				s.fail(err)
			}
		}
		s.consumed.Add(1)
	}
	if s.cc, err = cons.Consume(consume); err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	signal := payload(boundSignalSize)
	feed := payload(boundFeedSize)
	var sigID atomic.Uint64
	answer := func(r boundReq) {
		who := r.subject[len("bound.req."):]
		sig := nats.NewMsg("bound.sig." + who)
		sig.Data = stamp(signal, r.took)
		if spec.contract {
			sig.Header.Set(jetstream.MsgIDHeader, strconv.FormatUint(sigID.Add(1), 10))
		}
		if _, err := s.js.PublishMsgAsync(sig); err != nil {
			s.fail(err)
			return
		}
		if spec.contract {
			for _, ev := range []string{"checkpoint_created", "signal_emitted", "signal_delivered"} {
				if err := s.nc.Publish("bound.trail."+who+"."+ev, feed); err != nil {
					s.fail(err)
					return
				}
			}
		}
		if err := r.respond(reply); err != nil {
			s.fail(err)
		}
	}
	if store == storeGrouped || store == storeSegmented {
		s.queue, s.done = make(chan boundReq, 1024), make(chan struct{})
		s.committer.Go(func() { s.commitGroups(db, shape, answer) })
	}
	var seq atomic.Uint64
	handle := func(r boundReq) {
		s.handlers.Add(1)
		if store == storeGrouped || store == storeSegmented {
			s.queue <- r // the committer answers
			return
		}
		go func() {
			defer s.handlers.Done()
			if store == storeEach {
				key := binary.BigEndian.AppendUint64([]byte("cp/"), seq.Add(1))
				if err := db.Update(func(txn *badger.Txn) error { return txn.Set(key, r.data) }); err != nil {
					s.fail(err)
					return
				}
				s.stored.Add(1)
			}
			answer(r)
		}()
	}
	if spec.contract {
		// The wire contract serves its API with nats.go micro (wire-v1 §3).
		var svc micro.Service
		if svc, err = micro.AddService(s.nc, micro.Config{Name: "bound", Version: "0.0.1"}); err == nil {
			err = svc.AddEndpoint("req", micro.HandlerFunc(func(req micro.Request) {
				r := boundReq{subject: req.Subject(), data: req.Data(), took: time.Now(), respond: func(b []byte) error { return req.Respond(b) }}
				if req.Headers().Get(client.TokenHeader) == "" {
					s.fail(fmt.Errorf("request on %s without a token", r.subject))
				}
				handle(r)
			}), micro.WithEndpointSubject("bound.req.*"))
		}
	} else {
		_, err = s.nc.QueueSubscribe("bound.req.*", "bound", func(m *nats.Msg) {
			handle(boundReq{subject: m.Subject, data: m.Data, took: time.Now(), respond: m.Respond})
		})
	}
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	// The requesters connect on other connections: the server must have
	// the subscription before the first request, or it answers "no
	// responders". A flush's round trip is that guarantee.
	if err := s.nc.Flush(); err != nil {
		return nil, fmt.Errorf("flush subscription: %w", err)
	}
	return s, nil
}

func (s *boundServer) fail(err error) { s.failed.CompareAndSwap(nil, &err) }

// boundReq is a request to a bound's server.
type boundReq struct {
	subject string
	data    []byte
	took    time.Time // when the server took it
	respond func([]byte) error
}

// wait returns once the consumer has n signals, or the server's first
// error.
func (s *boundServer) wait(ctx context.Context, n int) error {
	s.handlers.Wait()
	if p := s.failed.Load(); p != nil {
		return *p
	}
	select {
	case <-s.js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.consumed.Load() < int64(n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("consumer has %d of %d signals after 30s", s.consumed.Load(), n)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// close stops the consumer and the connections, and waits for the
// handlers still running (after a failed run), so none outlives the
// database they write to.
func (s *boundServer) close() {
	if s.cc != nil {
		s.cc.Stop()
	}
	if s.nc != nil {
		s.nc.Close()
	}
	s.handlers.Wait()
	if s.done != nil {
		close(s.done)
		s.committer.Wait()
	}
	if s.coord != nil {
		s.coord.Close()
	}
}

// boundRequesters runs clients connections, each sending requests one at a
// time until p says stop, and returns every request's latency. Like the
// client library, each request is encoded and each reply decoded as it
// goes.
func boundRequesters(ctx context.Context, url string, clients int, req client.CheckpointRequest, p plan, contract bool) ([]ack, error) {
	conns := make([]*nats.Conn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		tok := requesterToken(i)
		c, err := nats.Connect(url, nats.Token(tok), nats.CustomInboxPrefix(wire.InboxPrefix(tok)))
		if err != nil {
			return nil, fmt.Errorf("requester %d: %w", i, err)
		}
		conns[i] = c
	}
	lats := make([][]ack, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			subject := fmt.Sprintf("bound.req.%d", i)
			for p.next() {
				t0 := time.Now()
				if err := ctx.Err(); err != nil {
					errs[i] = err
					return
				}
				body, err := jsonv1.Marshal(req) // the client library's codec
				if err != nil {
					errs[i] = err
					return
				}
				msg := nats.NewMsg(subject)
				msg.Data = body
				if contract {
					msg.Header.Set(client.TokenHeader, requesterToken(i))
				}
				m, err := c.RequestMsg(msg, boundTimeout)
				if err != nil {
					errs[i] = fmt.Errorf("requester %d: %w", i, err)
					return
				}
				if _, err := client.DecodeCheckpoint(m.Data); err != nil { // the client library's decoder
					errs[i] = fmt.Errorf("requester %d: decode reply: %w", i, err)
					return
				}
				end := time.Now()
				lats[i] = append(lats[i], ack{end: end, d: end.Sub(t0)})
			}
		})
	}
	wg.Wait()
	var all []ack
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, errors.Join(errs...)
}

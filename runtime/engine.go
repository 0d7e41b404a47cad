package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/integrity"
	"github.com/wacpd/wacpd/internal/dbupkeep"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/runtime/opqueue"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/signal/outboxstore"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/coldstore"
	"github.com/wacpd/wacpd/trail/traillog"
	"github.com/wacpd/wacpd/workspace"
	"github.com/wacpd/wacpd/workspace/wsstore"
)

// Engine is the transactional core of wacpd: workspaces, checkpoint chains,
// signals, envelopes, integration and the trail, over one Badger database.
// Every operation that changes anything writes its effect and its trail
// entries into the committer's current Badger transaction, committed with
// synchronous writes before the operation returns (committer.go). Engine
// methods are safe for concurrent use.
type Engine struct {
	cfg   Config
	db    *badger.DB
	seg   *seglog.Log // the segment files of the trail's entries and the objects (nil in memory)
	log   *traillog.Log
	clock *clock.Clock
	ids   *clock.IDs
	tax   *taxonomy.Taxonomy
	lg    *slog.Logger
	// envKey proves and verifies envelopes (integrity_env.go); set at
	// open, then only read.
	envKey *envelopeKey

	queue   opqueue.Queue // operations for the committer goroutine (committer.go)
	ackKick chan struct{} // AckOutbox has a confirmation to write (outbox.go)
	// leaseKick tells the timer loop a delivery lease was taken (lease.go).
	leaseKick chan struct{}
	// pipelinedOps counts operations run in a batch built while another
	// was being written.
	pipelinedOps atomic.Uint64
	receivedOps  atomic.Uint64     // operations the committer has received from its queue
	bg           sync.WaitGroup    // background goroutines other than the committer (GC, the running check)
	gcPasses     atomic.Uint64     // value-log GC passes run
	marks        atomic.Uint64     // marks the running check moved (mark.go)
	settleWaits  atomic.Uint64     // reads that waited for Badger's commit of an answered batch (settle.go)
	marker       *integrity.Marker // the running check's passes and full verifies, one at a time (mark.go)
	opened       *integrity.Opened // noted before the engine's first write: what a full verify's storage step may skip
	gcInterval   time.Duration     // the GC loop's period; 0 when none runs (set by Open)
	stop         chan struct{}     // closed by Close: the committer stops
	loopDone     chan struct{}     // closed when the committer has stopped
	closeOnce    sync.Once         // runs close
	closeErr     error             // close's result, set inside closeOnce

	mu     sync.Mutex // guards everything below; the committer holds it while it runs operations
	open   *openBatch // the batch being filled; set only while the committer runs operations
	closed bool
	// degradedSince is when degraded mode began (degraded.go); zero when
	// the engine admits work.
	degradedSince time.Time
	// unsettled is open while the callers of the batch in flight have
	// their answers and Badger's commit of it has not landed (settle.go);
	// nil otherwise.
	unsettled chan struct{}
	// unsettledLost is set when Badger's commit of that batch failed: it
	// is read once degraded mode's probe has redone its block.
	unsettledLost bool
	root          string
	ws            map[string]*workspace.Workspace
	chains        map[string]checkpointchain.Chain
	inboxSig      map[string]chan struct{} // closed and replaced when an envelope lands in a workspace's inbox
	outMark       outboxstore.Mark         // the outbox's mark as written (outbox.go)
	outAck        outboxstore.Mark         // the last confirmation, written with the next batch (outbox.go)
	onCommit      []func(Commit)
	gov           govState      // task graphs, tasks, gates, users (gov.go)
	carp          carpState     // atlases, grants, executions (carp.go)
	appr          apprState     // envelopes, checkpoints, permits, trust (approvals.go)
	stew          stewardState  // sessions' steward checkpoint state (steward.go)
	trace         traceState    // the TRACE log's heads and tree (tracelog.go)
	gateKick      chan struct{} // a gate opened or was resolved: the timers look at the next deadline (gates.go)
}

// Commit describes one committed transaction, for observers (the daemon
// publishes its entries and outbox signals).
type Commit struct {
	Entries []trail.Entry
	Outbox  []agentsignal.OutboxItem
	// Reloaded is set on the commit that ends degraded mode: the engine
	// reloaded its state from the database, where a write reported failed
	// may have landed with entries and outbox items no commit announced.
	Reloaded bool
}

var keyRoot = []byte("m/root")

// Open opens (or creates) the database, recovers the in-memory state from
// it, and on a new database creates the root workspace, whose
// workspace_created is trail entry #1. With Config.RootID set, a database
// whose root has another id is refused (ErrRootMismatch).
func Open(cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	opts := dbupkeep.OptionsWithin(cfg.DataDir, cfg.MemoryLimit) // checksums checked on every read
	if cfg.InMemory {
		opts = badger.DefaultOptions("").WithInMemory(true).WithLogger(nil)
	} else if where, detail := integrity.CheckTableFiles(cfg.DataDir, opts, cfg.FullCheck); detail != "" {
		// Badger opens tables on goroutines of its own, where a damaged
		// table's panic cannot be recovered: they are opened here first
		// (every block with FullCheck).
		return nil, fmt.Errorf("%w: the database's table %s is damaged: %s; the data dir is left as it is: restore it from a backup (docs/operations.md)",
			ErrTrailCorrupt, where, detail)
	}
	if !cfg.InMemory {
		// A kill while Badger created a value log leaves it empty, and
		// Badger refuses such a file once (docs/operations.md §5).
		removed, err := dbupkeep.RemoveEmptyValueLogs(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", cfg.DataDir, err)
		}
		if len(removed) > 0 {
			cfg.Logger.Info("removed empty value log files a crash left", "files", removed)
		}
		// A kill while compaction wrote an archive leaves its temporary file.
		if removed, err = coldstore.RemoveTemporary(filepath.Join(cfg.DataDir, coldstore.Dir)); err != nil {
			return nil, fmt.Errorf("open database %s: %w", cfg.DataDir, err)
		}
		if len(removed) > 0 {
			cfg.Logger.Info("removed the temporary archive files a cut compaction left", "files", removed)
		}
	}
	db, err := openBadger(opts)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", cfg.DataDir, err)
	}
	e, err := open(cfg, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return e, nil
}

// openBadger is badger.Open, with a panic inside it (Badger panics on some
// damaged tables while it opens them) returned as ErrTrailCorrupt.
func openBadger(opts badger.Options) (db *badger.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			db, err = nil, fmt.Errorf("%w: badger failed reading its files: %v", ErrTrailCorrupt, p)
		}
	}()
	return badger.Open(opts)
}

func open(cfg Config, db *badger.DB) (_ *Engine, err error) {
	e := &Engine{
		cfg: cfg, db: db, opened: integrity.NoteOpen(db), clock: clock.New(cfg.Now), ids: clock.NewIDs(cfg.Entropy),
		tax: cfg.Taxonomy, lg: cfg.Logger, inboxSig: map[string]chan struct{}{},
		ackKick: make(chan struct{}, 1), leaseKick: make(chan struct{}, 1), gateKick: make(chan struct{}, 1), stop: make(chan struct{}), loopDone: make(chan struct{}),
	}
	if !cfg.InMemory {
		if e.seg, err = openSegments(cfg, db); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				e.seg.Close()
			}
		}()
	}
	e.marker = integrity.NewMarker(db, e.seg)
	if e.envKey, err = loadEnvelopeKey(cfg); err != nil {
		return nil, err
	}
	e.queue = opqueue.Queue{C: make(chan *opqueue.Op, maxBatchOps), Stop: e.stop, Stopped: e.loopDone, Closed: ErrClosed, NotTaken: ErrNotTaken}
	// The trail's key layout first (a data dir of an earlier release keeps
	// records this build derives instead), then recovery step 1, the
	// integrity check, before anything reads the trail (recovery.go).
	up, err := traillog.Upgrade(db)
	if err != nil {
		return nil, err
	}
	if up.From != 0 && up.From != traillog.Layout {
		cfg.Logger.Info("upgraded the trail's key layout", "from", up.From, "to", traillog.Layout,
			"removed_id_keys", up.IDKeys, "removed_merkle_nodes", up.Nodes)
	}
	rec, err := checkTrail(cfg, db, e.seg)
	if err != nil {
		return nil, err
	}
	running := false
	defer func() {
		if err != nil && running {
			e.stopLoop()
		}
		if err != nil && !rec.unclean {
			e.clearOpen() // this open never served: the data dir stays clean
		}
	}()
	if e.log, err = traillog.Open(db, e.seg); err != nil {
		return nil, err
	}
	if err = e.openOutbox(); err != nil {
		return nil, err
	}
	if err = e.loadState(); err != nil {
		return nil, err
	}
	// The clock and ids also resume above the last signed tree head and any
	// quarantined entry (Recovery §3.5).
	if !rec.last.IsZero() {
		e.clock.Observe(rec.last)
	}
	if rec.lastID != "" {
		e.ids.Observe(rec.lastID)
	}
	err = db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keyRoot)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		e.root = string(v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read root: %w", err)
	}
	if e.root != "" && cfg.RootID != "" && e.root != cfg.RootID {
		return nil, fmt.Errorf("%w: the data dir belongs to root %s, the deployment's root is %s", ErrRootMismatch, e.root, cfg.RootID)
	}
	go e.loop() // stopped by Close (or by the deferred cleanup, when open fails)
	running = true
	if iv := cfg.GCInterval; iv >= 0 && !cfg.InMemory {
		if iv == 0 {
			iv = defaultGCInterval
		}
		e.bg.Add(1)
		e.gcInterval = iv
		go e.runGC(iv) // stopped with the committer, waited for by stopLoop
	}
	if iv := cfg.MarkInterval; iv >= 0 && !cfg.InMemory {
		if iv == 0 {
			iv = defaultMarkInterval
		}
		e.bg.Add(1)
		go e.runMarks(iv) // stopped with the committer, waited for by stopLoop
	}
	if e.root == "" {
		if e.log.Len() != 0 {
			return nil, fmt.Errorf("open: trail has %d entries but no root workspace", e.log.Len())
		}
		if err := e.bootstrap(); err != nil {
			return nil, err
		}
	} else if err := e.checkTaxonomy(); err != nil {
		return nil, err
	}
	if err := e.proveLegacyEnvelopes(context.Background()); err != nil { // integrity_env.go: once, for an earlier release's data dir
		return nil, err
	}
	if err := e.buildRights(context.Background()); err != nil { // rights.go: once, for an earlier release's data dir
		return nil, err
	}
	if err := e.startMeters(context.Background()); err != nil { // budget.go
		return nil, fmt.Errorf("open: exclude the outage from compute time: %w", err)
	}
	if err := e.finishRecovery(rec); err != nil {
		return nil, err
	}
	if err := e.interruptedExecutions(); err != nil {
		return nil, fmt.Errorf("open: record the interrupted executions: %w", err)
	}
	return e, nil
}

// loadState reads the workspaces and chain registers from the database,
// and moves the clock and ids above the trail's last entry (Clock spec §7).
// It runs at open and when degraded mode ends (degraded.go).
func (e *Engine) loadState() error {
	ws, err := wsstore.LoadAll(e.db)
	if err != nil {
		return err
	}
	chains, err := chainstore.LoadChains(e.db)
	if err != nil {
		return err
	}
	e.deriveMeters(ws, chains)
	if err := e.loadGov(); err != nil {
		return err
	}
	if err := e.loadApprovals(); err != nil {
		return err
	}
	if err := e.loadSteward(); err != nil {
		return err
	}
	if err := e.loadCarp(); err != nil {
		return err
	}
	if err := e.loadTrace(); err != nil {
		return err
	}
	e.ws, e.chains = ws, chains
	if id, ts := e.log.Last(); id != "" {
		t, err := clock.Parse(ts)
		if err != nil {
			return fmt.Errorf("recover clock: %w", err)
		}
		e.clock.Observe(t)
		e.ids.Observe(id)
	}
	return nil
}

// deriveMeters restarts the meter of each active workspace at its chain's
// last checkpoint when that came after the interval its record holds: a
// checkpoint restarts the interval (checkUsage) without rewriting the
// record. A head that cannot be read (the integrity check reports it)
// leaves the record's meter, which only the wall-time comparison of
// resource_discrepancy reads, as it is; so does a panic of Badger on a
// damaged block.
func (e *Engine) deriveMeters(ws map[string]*workspace.Workspace, chains map[string]checkpointchain.Chain) {
	defer func() {
		if p := recover(); p != nil {
			e.lg.Warn("meter: reading the chains' heads", "panic", p)
		}
	}()
	err := e.db.View(func(txn *badger.Txn) error {
		for id, w := range ws {
			head := chains[id].Head
			if w.Meter.ActiveSince == "" || head == "" {
				continue
			}
			cp, err := chainstore.Get(txn, e.seg, head)
			if err != nil {
				e.lg.Warn("meter: the chain's head is unreadable; the interval stays as recorded", "workspace", id, "checkpoint", head, "err", err)
				continue
			}
			at, err1 := clock.Parse(cp.Timestamp)
			since, err2 := clock.Parse(w.Meter.ActiveSince)
			if err1 == nil && err2 == nil && at.After(since) {
				w.Meter.ActiveNanos, w.Meter.ActiveSince = 0, cp.Timestamp
			}
		}
		return nil
	})
	if err != nil {
		e.lg.Warn("meter: reading the chains' heads", "err", err)
	}
}

// bootstrap creates the root workspace as trail entry #1, recording the hash
// algorithm and the taxonomy. The root's id is Config.RootID when set.
func (e *Engine) bootstrap() error {
	return e.run(context.Background(), 0, func() error {
		return e.commit(func(t *tx) error {
			ts := t.next()
			id := e.cfg.RootID // the deployment's (placement.go)
			if id == "" {
				id = e.ids.New(ts)
			} else {
				e.ids.Observe(id) // the ids that follow, entry #1's first, are greater
			}
			root := workspace.Root(id, e.cfg.RootOwner, clock.Format(ts))
			t.created[id] = root
			if err := t.put(root); err != nil {
				return err
			}
			body := createdBody(root)
			body["hash_algorithm"] = trail.Algorithm
			body["protocol_version"] = taxonomy.ProtocolVersion
			body["taxonomy_id"] = e.tax.ID()
			body["taxonomy_version"] = e.tax.Version()
			body["taxonomy_checksum"] = e.tax.Checksum()
			if err := t.appendAt(ts, id, trail.ActorProtocol, trail.EventWorkspaceCreated, body); err != nil {
				return err
			}
			if err := t.txn.Set(keyRoot, []byte(id)); err != nil {
				return err
			}
			t.after(func() { e.root = id })
			return nil
		})
	})
}

// checkTaxonomy refuses to resume a run under another taxonomy (TAXONOMY §9:
// immutable for the run).
func (e *Engine) checkTaxonomy() error {
	entries, _, err := e.log.Read(context.Background(), trail.Query{Limit: 1})
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return fmt.Errorf("open: root exists but the trail is empty")
	}
	var body struct {
		Checksum string `json:"taxonomy_checksum"`
		ID       string `json:"taxonomy_id"`
	}
	if err := json.Unmarshal(entries[0].Body, &body); err != nil {
		return fmt.Errorf("open: read trail entry #1: %w", err)
	}
	if body.Checksum != e.tax.Checksum() {
		return fmt.Errorf("%w: the run started with %s (%s), now %s (%s)", ErrTaxonomyChanged,
			body.ID, body.Checksum, e.tax.ID(), e.tax.Checksum())
	}
	return nil
}

// Close stops accepting operations and closes the database, returning
// Badger's error if its final flush fails. Operations in flight finish
// first. It may be called more than once and concurrently: every call
// returns the first one's result.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() { e.closeErr = e.close() })
	return e.closeErr
}

// close is Close, run once: concurrent Close calls wait for it and share
// its result.
func (e *Engine) close() error {
	e.stopLoop() // operations in flight finish their batch first
	e.clearOpen()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, ch := range e.inboxSig {
		close(ch)
	}
	for _, ch := range e.appr.sig {
		close(ch)
	}
	var serr error
	if e.seg != nil {
		serr = e.seg.Close()
	}
	return errors.Join(e.db.Close(), serr)
}

// openSegments opens the segment files of db, in DataDir/seg, and redoes in
// db the whole blocks past the end it records (batches whose commits Badger,
// which writes without syncing, lost in a crash); it cuts off what a crash
// tore.
func openSegments(cfg Config, db *badger.DB) (*seglog.Log, error) {
	end, err := seglog.End(db)
	if err != nil {
		return nil, fmt.Errorf("%w: the segments' end (%s): %v", ErrTrailCorrupt, seglog.KeyEnd, err)
	}
	seg, rec, err := seglog.Open(filepath.Join(cfg.DataDir, seglog.Dir), end, seglog.Options{})
	var redone seglog.Replayed
	if err == nil {
		if rec.Bytes > 0 {
			cfg.Logger.Info("removed segment bytes no whole block holds (torn by a crash, or written ahead)", "bytes", rec.Bytes, "files", rec.Files)
		}
		if redone, err = seg.Replay(db); err != nil {
			seg.Close()
		}
	}
	switch {
	case errors.Is(err, seglog.ErrDamaged):
		return nil, fmt.Errorf("%w: %v; the data dir is left as it is: restore it from a backup (docs/operations.md)", ErrTrailCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("open segments: %w", err)
	}
	if redone.Blocks > 0 {
		cfg.Logger.Info("redid the batches whose commits Badger lost in a crash", "blocks", redone.Blocks, "writes", redone.Writes)
	}
	return seg, nil
}

// Root returns the root workspace's id.
func (e *Engine) Root() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.root
}

// Ended reports whether workspace id exists and has reached a terminal
// state (closed or failed): its agent's token then no longer connects.
func (e *Engine) Ended(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.ws[id]
	return w != nil && w.State.Terminal()
}

// Live reports whether workspace id exists and is not terminal (an agent
// token of a workspace a gate still holds, or one that ended, connects to
// nothing).
func (e *Engine) Live(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.ws[id]
	return w != nil && !w.State.Terminal()
}

// Taxonomy returns the run's taxonomy.
func (e *Engine) Taxonomy() *taxonomy.Taxonomy { return e.tax }

// TrailReader is the trail as the engine's users see it: read-only. Only
// the committer writes it, so nothing outside the engine holds a writer
// that could bypass group commit.
type TrailReader interface {
	Len() uint64
	At(seq uint64) (trail.Entry, error)
	Seq(id string) (uint64, error)
	Read(ctx context.Context, q trail.Query) ([]trail.Entry, string, error)
	ReadLocal(ctx context.Context, ws, after string, limit int) ([]trail.Entry, error)
	Root(size uint64) ([]byte, error)
	InclusionProof(index, size uint64) ([][]byte, error)
	ConsistencyProof(size1, size2 uint64) ([][]byte, error)
}

// Errors of TrailReader's methods, for errors.Is: the trail's own, so that
// callers need not import its storage.
var (
	ErrNoSuchEntry = traillog.ErrNotFound // Seq: no entry has the id
	ErrTreeSize    = traillog.ErrTreeSize // Root and the proofs: no such tree size or index
)

// Trail returns the run's trail, for reading.
func (e *Engine) Trail() TrailReader { return settledTrail{e} }

// OnCommit registers fn to be called, in commit order and with the engine's
// lock held, after every successful commit. fn must not block or call the
// Engine.
func (e *Engine) OnCommit(fn func(Commit)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onCommit = append(e.onCommit, fn)
}

// stopLoop stops the committer and waits for it.
func (e *Engine) stopLoop() {
	select {
	case <-e.stop:
	default:
		close(e.stop)
	}
	<-e.loopDone
	e.bg.Wait()
}

// get returns workspace id's record as the running operation sees it (with
// the open batch's changes), or the committed one outside operations. Caller
// holds e.mu.
func (e *Engine) get(id string) *workspace.Workspace {
	if e.open != nil {
		return e.open.tx.peek(id)
	}
	return e.ws[id]
}

// chainOf returns a workspace's chain register as get does.
func (e *Engine) chainOf(id string) checkpointchain.Chain {
	if e.open != nil {
		return e.open.tx.chain(id)
	}
	return e.chains[id]
}

// Config returns the engine's configuration with its defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

package daemon

import (
	"context"
	"errors"
	"fmt"
	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/atlas/atlasfile"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/highway/hwfile"
	"github.com/wacpd/wacpd/placement"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/taxonomy/taxfile"
	"github.com/wacpd/wacpd/wire"
)

// Daemon is the wacpd daemon: the runtime.Engine served over NATS (wire-v1). New
// validates the configuration and starts nothing; Run serves until its
// context ends, then shuts down in reverse start order.
type Daemon struct {
	cfg Config

	// Set by Run before anything is served; read-only afterwards.
	eng      *runtime.Engine
	ns       *server.Server // nil when NATSURL is set
	nc       *nats.Conn
	js       jetstream.JetStream
	url      string
	tok      *tokens
	external bool
	replicas int         // of the daemon's streams (streamReplicas)
	adm      *admission  // request slots (admission.go)
	accts    *accounts   // the principals' accounts; nil on an external server
	routes   *routes     // the agent requests routed to the daemon (routes.go); nil on an external server
	parts    *partitions // the partitions served, on a deployment of several daemons (deployment.go); else nil

	metrics      *metrics      // nil unless MetricsAddr is set
	metricsURL   string        // where the metrics are served
	authFailures *authFailures // refused connections, counted for the trail (authfail.go)
	signer       note.Signer   // signs tree heads
	publicKey    string        // its note verifier key

	handlersMu sync.Mutex         // guards closing and handlers.Add
	closing    bool               // set when shutdown begins: no new handler starts
	handlers   sync.WaitGroup     // request handlers in flight
	workers    *workers           // the goroutines they run on
	reqCtx     context.Context    // given to handlers; cancelled when shutdown begins
	cancelReqs context.CancelFunc // ends waits (inbox.next); commits in flight still finish
	ready      chan struct{}      // closed once requests are accepted

	atlases []*atlas.Manifest // loaded from Config.AtlasPaths by New
	tools   *toolCalls        // executions forwarded to tool services (carp.go)
	httpURL string            // the CARP HTTP listener's base URL, when HTTPAddr is set

	byOpOnce sync.Once           // builds byOp
	byOp     map[string]endpoint // the endpoints by op, for in-process requests (invoke.go)
}

// defaultListen is the embedded server's address (wire-v1 §1).
const defaultListen = "127.0.0.1:4222"

// MaxPayload is the embedded server's largest message: no request or reply
// is larger.
const MaxPayload = 4 << 20

// New returns a daemon for cfg. DataDir is required.
func New(cfg Config) (*Daemon, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("runtime: config: DataDir is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = defaultListen
	}
	if _, _, err := splitHostPort(cfg.Listen); err != nil {
		return nil, fmt.Errorf("runtime: config: listen %q: %w", cfg.Listen, err)
	}
	if cfg.MetricsAddr != "" {
		if _, _, err := splitHostPort(cfg.MetricsAddr); err != nil {
			return nil, fmt.Errorf("runtime: config: metrics %q: %w", cfg.MetricsAddr, err)
		}
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0-dev"
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = time.Minute
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 256
	}
	if cfg.NATSURL != "" {
		urls, err := seedURLs(cfg.NATSURL)
		if err != nil {
			return nil, fmt.Errorf("runtime: config: nats url %q: %w", cfg.NATSURL, err)
		}
		cfg.NATSURL = urls
	}
	switch {
	case cfg.Replicas < 0 || cfg.Replicas > maxReplicas:
		return nil, fmt.Errorf("runtime: config: replicas %d: want 0 (automatic) or 1 to %d", cfg.Replicas, maxReplicas)
	case cfg.Replicas > 1 && cfg.NATSURL == "":
		return nil, fmt.Errorf("runtime: config: replicas %d needs a NATS cluster (-nats-url): the embedded server is one node", cfg.Replicas)
	}
	if err := cfg.Deployment.check(cfg.NATSURL); err != nil {
		return nil, fmt.Errorf("runtime: config: %w", err)
	}
	var atlases []*atlas.Manifest
	if cfg.Taxonomy == nil && cfg.TaxonomyFile != "" {
		tax, err := taxfile.Load(cfg.TaxonomyFile)
		if err != nil {
			return nil, err
		}
		cfg.Taxonomy = tax
	}
	seen := map[string]string{}
	for _, path := range cfg.AtlasPaths {
		l, err := atlasfile.Load(path)
		if err != nil {
			return nil, fmt.Errorf("atlas %s: %w", path, err)
		}
		if other, dup := seen[l.Manifest.AtlasID]; dup {
			return nil, fmt.Errorf("atlas %s: atlas_id %s is loaded from %s too", path, l.Manifest.AtlasID, other)
		}
		seen[l.Manifest.AtlasID] = path
		atlases = append(atlases, l.Manifest)
	}
	if cfg.HTTPAddr != "" {
		if _, _, err := splitHostPort(cfg.HTTPAddr); err != nil {
			return nil, fmt.Errorf("runtime: config: http %q: %w", cfg.HTTPAddr, err)
		}
	}
	if cfg.Highway == nil && cfg.HighwayFile != "" {
		hw, err := hwfile.Load(cfg.HighwayFile)
		if err != nil {
			return nil, err
		}
		cfg.Highway = &hw
	}
	return &Daemon{cfg: cfg, ready: make(chan struct{}), atlases: atlases}, nil
}

func splitHostPort(s string) (string, int, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	return host, port, nil
}

// Ready is closed once the daemon accepts requests (and wacpd.json exists).
func (r *Daemon) Ready() <-chan struct{} { return r.ready }

// URL returns the NATS URL clients use; valid after Ready.
func (r *Daemon) URL() string { return r.url }

// MetricsURL returns the URL of the Prometheus metrics, or "" when
// Config.MetricsAddr is empty; valid after Ready.
func (r *Daemon) MetricsURL() string { return r.metricsURL }

// Run starts the daemon and serves until ctx is done. It then stops taking
// requests, lets the ones in flight finish, publishes what the outbox holds,
// and closes everything; it returns nil after a clean stop.
func (r *Daemon) Run(ctx context.Context) (err error) {
	var stack []func() // shutdown steps, run in reverse
	var closeErr error // the engine's Close, set by its step
	defer func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := len(stack) - 1; i >= 0; i-- {
				stack[i]()
			}
		}()
		timer := time.NewTimer(r.cfg.ShutdownTimeout)
		defer timer.Stop()
		select {
		case <-done:
			err = errors.Join(err, closeErr)
		case <-timer.C:
			err = errors.Join(err, fmt.Errorf("shutdown did not finish within %s (-shutdown-timeout); the next start recovers", r.cfg.ShutdownTimeout))
		}
	}()
	dir := r.cfg.DataDir
	if err := r.checkListen(); err != nil {
		return err // before anything is made in the data dir
	}
	if limit := r.cfg.MemoryLimit; limit > 0 {
		// Badger is sized for the budget (runtime.Config.MemoryLimit); the
		// Go heap, where Badger's memtables and builders live, gets a soft
		// limit of 9/16 of it, the rest is for stacks, the executable and
		// the files Badger maps (its memtables' logs and its tables, whose
		// pages a load's compactions keep resident: 90-110 MiB at 64
		// agents, so that 3/4 gave a peak of 254-282 MiB within 256;
		// docs/operations.md §1.1).
		prev := debug.SetMemoryLimit(limit / 16 * 9)
		stack = append(stack, func() { debug.SetMemoryLimit(prev) })
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}

	ecfg := r.cfg.Config
	ecfg.DataDir = filepath.Join(dir, "db")
	if ecfg.CheckpointCaller == nil {
		// Custom steward checkpoints that name a subject are asked over
		// the daemon's connection (evaluators.go), which startNATS opens
		// before any request is served.
		ecfg.CheckpointCaller = r.askEvaluator
	}
	if r.cfg.MetricsAddr != "" {
		r.metrics = newMetrics()
		ecfg.Observer = r.metrics
	}
	var dep joined
	if r.cfg.Deployment.on() {
		// The deployment's root comes from the cluster: connect first.
		if err := r.startNATS(dir, ""); err != nil {
			return err
		}
		stack = append(stack, r.stopNATS)
		if dep, err = r.joinCluster(ctx, dir); err != nil {
			return err
		}
		ecfg.RootID, ecfg.Partitions, ecfg.Partition = dep.rec.Root, dep.rec.Partitions, placement.Partition
	}
	if r.eng, err = runtime.Open(ecfg); err != nil {
		return err
	}
	stack = append(stack, func() {
		if err := r.eng.Close(); err != nil {
			closeErr = fmt.Errorf("close the engine: %w", err)
		}
	})

	if r.signer, r.publicKey, err = signingKey(dir, r.eng.Root()); err != nil {
		return err
	}
	if _, err := r.eng.SignTreeHead(r.signer); err != nil {
		return err
	}
	for _, m := range r.atlases {
		if _, err := r.eng.LoadAtlas(ctx, m, "config"); err != nil {
			return fmt.Errorf("load atlas %s: %w", m.Ref(), err)
		}
	}
	r.adm = newAdmission(r.cfg.MaxInFlight)
	r.authFailures = newAuthFailures()
	if err := r.setupTokens(dir, dep); err != nil {
		return err
	}
	internal, err := newToken()
	if err != nil {
		return err
	}
	r.tok.add(internal, principal.Principal{Kind: kindDaemon})

	if r.nc == nil {
		if err := r.startNATS(dir, internal); err != nil {
			return err
		}
		stack = append(stack, r.stopNATS)
		if r.js, err = jetstream.New(r.nc); err != nil {
			return fmt.Errorf("jetstream: %w", err)
		}
		r.replicas = r.streamReplicas()
	}
	if err := r.ensureStream(ctx); err != nil {
		return err
	}
	if r.cfg.Deployment.on() {
		stop, err := r.holdPartitions(ctx, dep)
		if err != nil {
			return err
		}
		stack = append(stack, stop)
	}

	// Background workers: owned here, stopped by the shutdown stack.
	pub, err := newPublisher(r.eng, r.js, r.nc, r.cfg.Logger, r.metrics)
	if err != nil {
		return err
	}
	pub.recover = r.recoverJetStream
	// Several daemons publish into one stream: each keeps its workspaces'
	// order, not the stream's.
	pub.perWorkspace = r.cfg.Deployment.on()
	if ns := r.ns; ns != nil {
		acc := ns.GlobalAccount() // the daemon's: the feeds are published there (docs/security.md)
		pub.interest = acc.SubscriptionInterest
	}
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pub.runSignals(bg) }()
	go func() { defer wg.Done(); pub.runFeed(bg) }()
	ended := newEndedAgents()
	r.eng.OnCommit(ended.onCommit)
	wg.Add(4)
	go func() { defer wg.Done(); ended.run(bg, r.disconnectEnded) }()
	go func() { defer wg.Done(); r.runTreeHeads(bg, r.signer, 250*time.Millisecond) }()
	go func() { defer wg.Done(); r.eng.RunTimers(bg, time.Second) }()
	go func() { defer wg.Done(); r.recordAuthFailures(bg) }()
	stack = append(stack, func() {
		pub.flush(5 * time.Second) // publish what the last requests committed
		stopBG()
		wg.Wait()
	})

	r.reqCtx, r.cancelReqs = context.WithCancel(context.Background())
	r.workers = newWorkers(maxIdleWorkers)
	r.tools = newToolCalls(r.nc, r.eng, r.cfg.Logger)
	stack = append(stack, r.tools.stop) // after the handlers: late answers wait no more
	svc, err := r.startService()
	if err != nil {
		return err
	}
	stack = append(stack, func() {
		svc.Stop() // stop taking requests
		if r.routes != nil {
			r.routes.stop()
		}
		r.handlersMu.Lock()
		r.closing = true // a request micro already dispatched is refused
		r.handlersMu.Unlock()
		r.cancelReqs()    // end waits and writes the committer has not taken
		r.handlers.Wait() // let the ones in flight finish their commits
		r.workers.close()
	})

	// The service's subscriptions must reach the server before anyone is
	// told the daemon is ready.
	if err := r.nc.FlushTimeout(10 * time.Second); err != nil {
		return fmt.Errorf("register the service: %w", err)
	}
	if r.cfg.HTTPAddr != "" {
		stopHTTP, err := r.startHTTP()
		if err != nil {
			return err
		}
		stack = append(stack, stopHTTP)
	}
	if r.metrics != nil {
		stopMetrics, err := r.startMetrics()
		if err != nil {
			return err
		}
		stack = append(stack, stopMetrics)
	}
	info := wire.DaemonFile{URL: r.url, PID: os.Getpid(), RootWorkspace: r.eng.Root(), Version: r.cfg.Version, HTTPURL: r.httpURL,
		DaemonID: r.cfg.Deployment.DaemonID, Partitions: r.cfg.Deployment.Own}
	if err := writeInfo(dir, info); err != nil {
		return fmt.Errorf("write %s: %w", InfoFile, err)
	}
	stack = append(stack, func() { os.Remove(filepath.Join(dir, InfoFile)) })
	fmt.Fprintf(r.cfg.Stdout, "wacpd %s listening on %s (data %s, root workspace %s)\n",
		r.cfg.Version, r.url, dir, info.RootWorkspace)
	close(r.ready)
	<-ctx.Done()
	r.cfg.Logger.Info("shutting down")
	return nil
}

// signalsDedupeWindow is how long the signal stream remembers a signal's
// id to drop a repeat (Nats-Msg-Id). The stream keeps every id of the
// window in memory, two small objects each, which the collector marks at
// every cycle: with a 10-minute window, 1.6 million of the process's 4.5
// million live objects 750,000 checkpoints into a soak at 4,000 a second.
// Repeats come from a publish retried after a failure, within seconds;
// the signals a previous run sent and did not see confirmed are skipped at
// start (publisher.lastHeld).
const signalsDedupeWindow = 2 * time.Minute

// ensureStream creates the signal stream, or brings an existing one to the
// configured retention and replica count (JetStream moves a stream to
// another count in place: on a cluster the new replicas catch up from the
// leader). Past its limits the stream discards its oldest signals: the
// publisher is never refused for space, and a consumer whose next signal
// was discarded goes on with the oldest one kept. Its consumers have no
// replica count of their own: a durable one has the stream's.
//
// On an external server it waits up to clusterWait while the server says
// it cannot place the stream yet: a cluster that has just started elects
// its JetStream meta leader and learns which peers are online for a moment
// after it takes connections, and wacpd may be started with it.
func (r *Daemon) ensureStream(ctx context.Context) error {
	return r.whilePlacing(ctx, "the signal stream", func() error { return r.makeStream(ctx) })
}

// makeStream is one attempt of ensureStream.
func (r *Daemon) makeStream(ctx context.Context) error {
	maxBytes, maxAge := r.cfg.signalsRetention()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := r.js.CreateOrUpdateStream(sctx, jetstream.StreamConfig{
		Name: signalStream, Subjects: []string{"wacp.v1.sig.>"}, Storage: jetstream.FileStorage,
		Duplicates: signalsDedupeWindow, Description: "WACP signals delivered to each workspace's parent",
		MaxBytes: maxBytes, MaxAge: maxAge, Discard: jetstream.DiscardOld, Replicas: r.replicas,
	})
	switch {
	case err != nil && r.replicas > 1:
		return fmt.Errorf("create stream %s with %d replicas: %w (a cluster needs at least as many JetStream servers up; -replicas sets the count)", signalStream, r.replicas, err)
	case err != nil:
		return fmt.Errorf("create stream %s: %w", signalStream, err)
	}
	info := st.CachedInfo()
	args := []any{"replicas", info.Config.Replicas}
	if c := info.Cluster; c != nil && c.Name != "" {
		args = append(args, "cluster", c.Name, "leader", c.Leader)
	}
	r.cfg.Logger.Info("signal stream "+signalStream, args...)
	return nil
}

// recoverJetStream is the publisher's remedy after a failed publish. The
// embedded server turns JetStream off for good when its disk fills
// ("JetStream out of resources, will be DISABLED"); once the data dir's disk
// has room again above the engine's reserve, this turns it back on and
// restores the stream, so signals flow again without a restart. It does
// nothing while JetStream runs or on an external server.
func (r *Daemon) recoverJetStream(ctx context.Context) error {
	if r.ns == nil || r.ns.JetStreamEnabled() {
		return nil
	}
	if err := r.eng.DiskRoom(); err != nil {
		return fmt.Errorf("jetstream is off and the disk is still short: %w", err)
	}
	r.cfg.Logger.Warn("jetstream was turned off by the server; turning it on again")
	err := r.ns.EnableJetStream(&server.JetStreamConfig{
		StoreDir: filepath.Join(r.cfg.DataDir, "jetstream"), MaxStore: r.cfg.jetStreamMaxStore(), MaxMemory: 64 << 20,
	})
	if err != nil {
		return fmt.Errorf("turn jetstream on again: %w", err)
	}
	return r.ensureStream(ctx)
}

// live reports whether principal p may connect now: an agent's token ends
// with its workspace (closed or failed).
func (r *Daemon) live(p principal.Principal) bool {
	return p.Kind != principal.KindAgent || r.eng.Live(p.Workspace)
}

// setupTokens loads the stored tokens and the admin token.
func (r *Daemon) setupTokens(dir string, dep joined) error {
	r.tok = newTokens()
	if err := r.eng.Tokens(r.tok.addHash); err != nil {
		return fmt.Errorf("load tokens: %w", err)
	}
	if r.cfg.Deployment.on() {
		// The deployment's coordinator, by the hash in its record: a
		// daemon other than the first has no admin.token of its own.
		h, err := coordinatorHash(dep.rec.Coordinator)
		if err != nil {
			return err
		}
		r.tok.addHash(h, principal.Principal{Kind: principal.KindCoordinator, Workspace: r.eng.Root()})
		return nil
	}
	admin, err := adminToken(dir)
	if err != nil {
		return err
	}
	r.tok.add(admin, principal.Principal{Kind: principal.KindCoordinator, Workspace: r.eng.Root()})
	return nil
}

// startNATS starts the embedded server (or connects to NATSURL) and opens the
// daemon's own connection.
func (r *Daemon) startNATS(dir, internal string) error {
	if r.cfg.NATSURL != "" {
		r.external, r.url = true, r.cfg.NATSURL
		nc, err := r.connectExternal()
		if err != nil {
			return fmt.Errorf("connect to %s: %w", r.url, err)
		}
		r.nc = nc
		return nil
	}
	host, port, _ := splitHostPort(r.cfg.Listen)
	if port == 0 {
		port = server.RANDOM_PORT // the contract's 0 is the server's -1
	}
	auth := &authenticator{tokens: r.tok, live: r.live, failed: func(remote, why string) {
		r.cfg.Logger.Warn("refused a connection", "remote", remote, "why", why)
		r.authFailures.add(remote)
	}, userIn: r.authFailures.succeeded}
	ns, err := server.NewServer(&server.Options{
		ServerName: "wacpd", Host: host, Port: port, NoSigs: true, NoLog: true,
		JetStream: true, StoreDir: filepath.Join(dir, "jetstream"), DisableJetStreamBanner: true,
		JetStreamMaxStore: r.cfg.jetStreamMaxStore(), MaxPayload: MaxPayload,
		CustomClientAuthentication: auth,
	})
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	if auth.accts, err = newAccounts(ns); err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	r.accts = auth.accts
	var names []string
	for _, ep := range r.endpoints() {
		names = append(names, ep.name)
	}
	r.routes = newRoutes(r.cfg.Logger, names)
	r.accts.route = r.routes.add
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return fmt.Errorf("nats server on %s did not start within 10s (is the address taken? -listen chooses another)", r.cfg.Listen)
	}
	if err := r.accts.startTools(); err != nil {
		ns.Shutdown()
		return fmt.Errorf("nats server: %w", err)
	}
	r.ns = ns
	if r.cfg.onServer != nil {
		r.cfg.onServer(ns)
	}
	addr := ns.Addr().(*net.TCPAddr)
	r.url = fmt.Sprintf("nats://%s", net.JoinHostPort(host, strconv.Itoa(addr.Port)))
	nc, err := nats.Connect(r.url, nats.Name("wacpd"), nats.Token(internal), nats.InProcessServer(ns),
		nats.CustomInboxPrefix(wire.InboxPrefix(internal)),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			r.cfg.Logger.Warn("the daemon's connection", "subscription", subj, "err", err)
		}))
	if err != nil {
		ns.Shutdown()
		return fmt.Errorf("connect to the embedded server: %w", err)
	}
	r.nc = nc
	return nil
}

func (r *Daemon) stopNATS() {
	if r.routes != nil {
		r.routes.stop()
	}
	if r.nc != nil {
		r.nc.Close()
	}
	if r.ns != nil {
		r.ns.Shutdown()
		r.ns.WaitForShutdown()
	}
}

// ErrTrailCorrupt is the engine's error for a trail that fails its check
// at start with nothing safe to repair (wacpd exits 2).
var ErrTrailCorrupt = runtime.ErrTrailCorrupt

// checkListen makes sure the embedded server's address is free before the
// daemon makes anything: a taken port is a clear error naming the address
// and -listen at once, not the server's timeout after the data dir is half
// made. Port 0 and an external server (NATSURL) need no check.
func (r *Daemon) checkListen() error {
	if r.cfg.NATSURL != "" {
		return nil
	}
	if _, port, _ := splitHostPort(r.cfg.Listen); port == 0 {
		return nil
	}
	ln, err := net.Listen("tcp", r.cfg.Listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; another wacpd or NATS server may run there: choose another address with -listen HOST:PORT (port 0 picks a free one)", r.cfg.Listen, err)
	}
	return ln.Close()
}

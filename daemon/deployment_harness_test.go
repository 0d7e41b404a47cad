package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/placement"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The harness of the deployment tests (deployment_nats_test.go): an
// in-process NATS server with the partition mapping, daemons run in the
// test process, and a two-daemon deployment with its coordinator and
// workers.

const (
	// depPartitions is the test deployment's partition count: d1 owns 0-1
	// (and the root, minted into its first), d2 owns 2-3.
	depPartitions = 4
	// depNATSToken authenticates every connection to the test server.
	depNATSToken = "deployment-nats-t0ken"
)

// startMappedNATS runs a NATS server with JetStream, token auth and the
// partition mapping of a deployment of depPartitions, and returns its URL.
func startMappedNATS(t *testing.T) string {
	t.Helper()
	ns := daemon.RunNATSServer(t, &natsserver.Options{
		Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true, NoLog: true, Authorization: depNATSToken,
		JetStream: true, StoreDir: t.TempDir(), DisableJetStreamBanner: true,
	})
	// Clients authenticated by a token are in the global account: the
	// mapping docs/operations.md §12 puts at the top level.
	dest := fmt.Sprintf("wacp.v1.p.{{partition(%d,1)}}.agent.{{wildcard(1)}}.>", depPartitions)
	if err := ns.GlobalAccount().AddMapping("wacp.v1.agent.*.>", dest); err != nil {
		t.Fatalf("AddMapping: %v", err)
	}
	return ns.ClientURL()
}

// logBuffer is a daemon's log, written by its goroutines and read by the test.
type logBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// depDaemon is a daemon of the test deployment, running in the test process.
type depDaemon struct {
	cfg    daemon.Config
	log    *logBuffer
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // Run's result, set before done closes
	once   sync.Once
}

// depConfig is the configuration of daemon id owning own, on the server at url.
func depConfig(url, dir, id string, own []int, ttl time.Duration) daemon.Config {
	return daemon.Config{DataDir: dir, NATSURL: url, NATSToken: depNATSToken, Stdout: io.Discard,
		Deployment: daemon.Deployment{Partitions: depPartitions, Own: own, DaemonID: id, LeaseTTL: ttl}}
}

// launch runs daemon.New(cfg).Run, its log in a buffer, and returns once
// the daemon is ready (nil) or Run has returned before (its error). It
// fails the test if neither happens within wait. The test's cleanup stops
// a daemon that runs.
func launch(t *testing.T, cfg daemon.Config, wait time.Duration) (*depDaemon, error) {
	t.Helper()
	buf := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt, err := daemon.New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &depDaemon{cfg: cfg, log: buf, cancel: cancel, done: make(chan struct{})}
	go func() {
		d.err = rt.Run(ctx)
		close(d.done)
	}()
	t.Cleanup(func() { d.stop(t) })
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-rt.Ready():
		return d, nil
	case <-d.done:
		d.once.Do(cancel) // its error is the caller's, not stop's
		if d.err == nil {
			return d, errors.New("Run returned nil before the daemon was ready")
		}
		return d, d.err
	case <-timer.C:
		t.Fatalf("daemon %s neither ready nor stopped after %v\n%s", cfg.Deployment.DaemonID, wait, buf)
		return nil, nil
	}
}

// startDep launches a daemon that must start.
func startDep(t *testing.T, cfg daemon.Config) *depDaemon {
	t.Helper()
	d, err := launch(t, cfg, 30*time.Second)
	if err != nil {
		t.Fatalf("start daemon %s: %v\n%s", cfg.Deployment.DaemonID, err, d.logs())
	}
	return d
}

// refusedStart launches a daemon that must not start and returns Run's error.
func refusedStart(t *testing.T, cfg daemon.Config, wait time.Duration) error {
	t.Helper()
	d, err := launch(t, cfg, wait)
	if err == nil {
		d.stop(t)
		t.Fatalf("daemon %s (own %v of %d) started; want a refusal\n%s", cfg.Deployment.DaemonID,
			cfg.Deployment.Own, cfg.Deployment.Partitions, d.log)
	}
	return err
}

// stop stops the daemon cleanly and reports an error if Run did not
// return nil; later calls do nothing.
func (d *depDaemon) stop(t *testing.T) {
	d.once.Do(func() {
		d.cancel()
		<-d.done
		if d.err != nil {
			t.Errorf("daemon %s: Run = %v, want nil", d.cfg.Deployment.DaemonID, d.err)
		}
	})
}

func (d *depDaemon) logs() string {
	if d == nil {
		return ""
	}
	return d.log.String()
}

// testDeployment is two daemons on one server: d1 (partitions 0-1, the
// root's home) and d2 (2-3), the coordinator, and four children of the
// root, child i in partition i, each active and dialled as its agent.
type testDeployment struct {
	url        string
	d1, d2     *depDaemon
	dir1, dir2 string
	ttl        time.Duration
	root       string
	admin      string // the coordinator's token, d1's admin.token
	coord      *client.Client
	children   []client.Created
	workers    []*client.Client // workers[i] acts as children[i]
}

// newDeployment starts the deployment with leases of ttl (0: the default).
func newDeployment(t *testing.T, ctx context.Context, ttl time.Duration) *testDeployment {
	t.Helper()
	td := &testDeployment{url: startMappedNATS(t), dir1: t.TempDir(), dir2: t.TempDir(), ttl: ttl}
	td.d1 = startDep(t, td.config1())
	td.d2 = startDep(t, td.config2())
	b, err := os.ReadFile(filepath.Join(td.dir1, daemon.AdminTokenFile))
	if err != nil {
		t.Fatalf("the first daemon wrote no %s: %v", daemon.AdminTokenFile, err)
	}
	td.admin = strings.TrimSpace(string(b))
	if _, err := os.Stat(filepath.Join(td.dir2, daemon.AdminTokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the second daemon's %s: %v; want none (the coordinator's token is the first daemon's)", daemon.AdminTokenFile, err)
	}
	td.root = readInfoFile(t, td.dir1).RootWorkspace
	if got := readInfoFile(t, td.dir2).RootWorkspace; got != td.root {
		t.Fatalf("d2's root is %s, d1's %s; want one root", got, td.root)
	}
	if p := placement.Partition(td.root, depPartitions); p != 0 {
		t.Fatalf("the root %s is in partition %d, want 0 (d1's first)", td.root, p)
	}
	td.coord = td.dial(t, ctx, td.admin, "")
	for i := range depPartitions {
		created, err := td.coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
		if err != nil {
			t.Fatalf("CreateWorkspace %d: %v\n%s", i, err, td.logs())
		}
		id := created.Workspace.ID
		// The root's children go round the partitions.
		if p := placement.Partition(id, depPartitions); p != i {
			t.Fatalf("child %d of the root %s is in partition %d, want %d", i, id, p, i)
		}
		td.children = append(td.children, created)
	}
	for _, ch := range td.children {
		td.workers = append(td.workers, td.dial(t, ctx, ch.Token, ch.Workspace.ID))
	}
	return td
}

func (td *testDeployment) config1() daemon.Config {
	return depConfig(td.url, td.dir1, "d1", []int{0, 1}, td.ttl)
}

func (td *testDeployment) config2() daemon.Config {
	return depConfig(td.url, td.dir2, "d2", []int{2, 3}, td.ttl)
}

// dial connects as token acting for workspace ws ("" the root).
func (td *testDeployment) dial(t *testing.T, ctx context.Context, token, ws string) *client.Client {
	t.Helper()
	c, err := dialClient(t, ctx, client.Options{URL: td.url, Token: token, Workspace: ws, NATSToken: depNATSToken})
	if err != nil {
		t.Fatalf("Dial as %q: %v\n%s", ws, err, td.logs())
	}
	return c
}

// id returns child i's workspace id.
func (td *testDeployment) id(i int) string { return td.children[i].Workspace.ID }

func (td *testDeployment) logs() string {
	return "d1:\n" + td.d1.logs() + "\nd2:\n" + td.d2.logs()
}

// readInfoFile reads DIR/wacpd.json.
func readInfoFile(t *testing.T, dir string) wire.DaemonFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, daemon.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var f wire.DaemonFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", daemon.InfoFile, err)
	}
	return f
}

// direct sends a directive to each child, which makes it active.
func (td *testDeployment) direct(t *testing.T, ctx context.Context) {
	t.Helper()
	for i := range td.children {
		if _, err := td.coord.SendEnvelope(ctx, client.EnvelopeRequest{To: td.id(i), Type: taxonomy.EnvelopeDirective,
			Payload: envelope.Payload{Content: "write a checkpoint"}}); err != nil {
			t.Fatalf("directive to child %d (partition %d): %v\n%s", i, i, err, td.logs())
		}
	}
}

// stateOf returns a workspace's state as read, "" for none.
func stateOf(w *workspace.Workspace) workspace.State {
	if w == nil {
		return ""
	}
	return w.State
}

// createdID returns the id of the workspace a create made, "" for none.
func createdID(c client.Created) string {
	if c.Workspace == nil {
		return ""
	}
	return c.Workspace.ID
}

// noResponders reports whether err is the client's error for a request
// no daemon subscribes to.
func noResponders(err error) bool {
	return errors.Is(err, client.ErrUnreachable) && strings.Contains(err.Error(), "no wacpd serves this subject")
}

// TestDeployment_TwoDaemonsOneSystem: two daemons (P=4, d1 owns 0-1 and
// created the deployment, d2 owns 2-3). The coordinator, with d1's
// admin.token (d2 writes none), creates four children of the root that go
// round the partitions; its directives to them, its reads of them and of
// their checkpoints reach d2's through d1's relay; its list is the whole
// deployment with the root once; and the checkpoint signals of both
// daemons reach its watch through the one signal stream.

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
)

// natsNode is one nats-server process of a test cluster.
type natsNode struct {
	name string
	url  string // for clients: nats://127.0.0.1:PORT
	mon  string // its monitoring endpoint: http://127.0.0.1:PORT
	cmd  *exec.Cmd
	done chan error // Wait's result
	log  *logBuf
	once sync.Once // kills
}

// nodeConfig is a nats-server configuration: token auth for clients,
// JetStream with its own store, and a cluster named wacp with routes to
// every node (a server ignores the route to itself).
const nodeConfig = `server_name: %q
listen: "127.0.0.1:%d"
http: "127.0.0.1:%d"
authorization { token: %q }
jetstream { store_dir: %q }
cluster {
  name: "wacp"
  listen: "127.0.0.1:%d"
  routes: [%s]
}
%s
`

// startNATSCluster starts a 3-node NATS cluster from bin.natsServer on free
// ports of 127.0.0.1, each node with a config file in a temporary dir, and
// waits until every node reports the same JetStream meta leader, which has
// the other two as current followers, and the routes are a full mesh
// (meshed).
func startNATSCluster(t *testing.T, token string) []*natsNode {
	t.Helper()
	return startNATSClusterWith(t, token, "")
}

// startNATSClusterWith is startNATSCluster with extra lines in every
// node's configuration.
func startNATSClusterWith(t *testing.T, token, extra string) []*natsNode {
	t.Helper()
	type ports struct{ client, mon, route int }
	var ps []ports
	var routes []string
	for range 3 {
		p := ports{freePort(t), freePort(t), freePort(t)}
		ps = append(ps, p)
		routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats-route://127.0.0.1:%d", p.route)))
	}
	var nodes []*natsNode
	for i, p := range ps {
		dir := t.TempDir()
		n := &natsNode{name: fmt.Sprintf("n%d", i+1), url: fmt.Sprintf("nats://127.0.0.1:%d", p.client),
			mon: fmt.Sprintf("http://127.0.0.1:%d", p.mon), done: make(chan error, 1), log: &logBuf{}}
		conf := filepath.Join(dir, "nats.conf")
		body := fmt.Sprintf(nodeConfig, n.name, p.client, p.mon, token, filepath.Join(dir, "jetstream"), p.route, strings.Join(routes, ", "), extra)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		n.cmd = exec.Command(bin.natsServer, "-c", conf)
		n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
		if err := n.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { n.done <- n.cmd.Wait() }()
		t.Cleanup(func() {
			n.kill()
			if t.Failed() {
				t.Logf("nats-server %s:\n%s", n.name, n.log)
			}
		})
		nodes = append(nodes, n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		leaders := map[string]bool{}
		current := 0 // followers the leader sees current
		for _, n := range nodes {
			var jsz struct {
				Meta *struct {
					Leader   string `json:"leader"`
					Replicas []struct {
						Current bool `json:"current"`
					} `json:"replicas"`
				} `json:"meta_cluster"`
			}
			if err := n.get("/jsz", &jsz); err != nil || jsz.Meta == nil {
				leaders[""] = true
				continue
			}
			leaders[jsz.Meta.Leader] = true
			if jsz.Meta.Leader == n.name {
				for _, r := range jsz.Meta.Replicas {
					if r.Current {
						current++
					}
				}
			}
		}
		if len(leaders) == 1 && !leaders[""] && current == len(nodes)-1 {
			meshed(t, nodes, token)
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's JetStream has no meta leader after 30s (leaders seen %v)\n%s", leaders, nodes[0].log)
		}
		time.Sleep(50 * time.Millisecond) // polling the monitoring endpoints
	}
}

// meshed waits until a request made through any node reaches a responder
// on any other. Nodes started together race to connect their routes, and
// the losers of a race reconnect a second later: until then a node with a
// route to the JetStream meta leader (so that JetStream works) may have none
// to a third node, and a client there gets no responders from a service
// connected to that one.
func meshed(t *testing.T, nodes []*natsNode, token string) {
	t.Helper()
	var conns []*nats.Conn
	for _, n := range nodes {
		nc, err := nats.Connect(n.url, nats.Token(token), nats.Name("mesh"))
		if err != nil {
			t.Fatalf("connect to %s: %v", n.name, err)
		}
		defer nc.Close()
		name := n.name
		if _, err := nc.Subscribe("mesh."+name, func(m *nats.Msg) { m.Respond([]byte(name)) }); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var missing []string
		for i, from := range conns {
			for j, to := range nodes {
				if i != j {
					if _, err := from.Request("mesh."+to.name, nil, time.Second); err != nil {
						missing = append(missing, nodes[i].name+"->"+to.name)
					}
				}
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's routes are no full mesh after 30s: no route %v", missing)
		}
		time.Sleep(50 * time.Millisecond) // polling the routes
	}
}

// get decodes the node's monitoring endpoint path into v.
func (n *natsNode) get(path string, v any) error {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(n.mon + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s%s: %s", n.mon, path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// serves reports whether a connection named name is connected to the node
// (its /connz).
func (n *natsNode) serves(name string) (bool, error) {
	var connz struct {
		Conns []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := n.get("/connz?limit=10000", &connz); err != nil {
		return false, err
	}
	for _, c := range connz.Conns {
		if c.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// kill sends SIGKILL and waits for the process to be gone; a second call
// does nothing.
func (n *natsNode) kill() {
	n.once.Do(func() {
		n.cmd.Process.Kill()
		<-n.done
	})
}

// clusterLoad is the agents' side of TestNATSCluster_NodeLoss: workers
// writing checkpoints on their chains, and what was acknowledged.
type clusterLoad struct {
	mu       sync.Mutex
	acked    map[string]string // checkpoint id -> workspace, acknowledged to a worker
	failed   int               // requests that got no answer or an error
	firstAck time.Time         // the first acknowledgement of a request sent after the kill
	killedAt atomic.Pointer[time.Time]
}

// writeChain appends checkpoints to c's chain until ctx ends, like an
// agent that retries: after a failure (no reply in time, no daemon
// reachable, or a parent no longer the head because an unanswered request
// committed after all) it pauses 50 ms, reads its head again and goes on.
// acked is told each acknowledged checkpoint and when its request was
// sent, failed each failure.
func writeChain(ctx context.Context, c *client.Client, acked func(id string, sent time.Time), failed func()) {
	var head *string
	for n := 0; ctx.Err() == nil; n++ {
		sent := time.Now()
		cp, err := c.CreateCheckpoint(ctx, artifact(head, "provisional", fmt.Sprintf("%s step %d", c.Workspace(), n)))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failed()
			select { // pace the retries while the daemon is unreachable
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			h, err := c.Head(ctx, c.Workspace(), false)
			var ce *client.Error
			switch {
			case err == nil:
				head = &h.ID
			case errors.As(err, &ce) && ce.Code == "not_found": // no checkpoint yet
				head = nil
			} // else unknown still: the next request tells
			continue
		}
		id := cp.ID
		head = &id
		acked(id, sent)
	}
}

// write runs writeChain for c. It closes warm after `enough`
// acknowledgements, and after `enough` more of requests sent after the
// kill, recovered.
func (l *clusterLoad) write(ctx context.Context, c *client.Client, enough int, warm, recovered chan<- struct{}) {
	before, after := 0, 0
	writeChain(ctx, c, func(id string, sent time.Time) {
		l.mu.Lock()
		l.acked[id] = c.Workspace()
		killed := l.killedAt.Load()
		if killed != nil && sent.After(*killed) && l.firstAck.IsZero() {
			l.firstAck = time.Now()
		}
		l.mu.Unlock()
		switch {
		case killed == nil || !sent.After(*killed):
			if before++; before == enough {
				close(warm)
			}
		default:
			if after++; after == enough {
				close(recovered)
			}
		}
	}, func() {
		l.mu.Lock()
		l.failed++
		l.mu.Unlock()
	})
}

// TestNATSCluster_NodeLoss runs wacpd on a 3-node NATS cluster with 3
// replicas and kills (SIGKILL) the node the daemon is connected to while
// workers write checkpoints. The daemon reconnects to another node and the
// load goes on. Then nothing acknowledged is lost (every acknowledged
// checkpoint is stored), every stored checkpoint's signal reached the
// coordinator's durable consumer, which followed the stream through the
// loss, and the trail verifies (wacp trail verify, online and offline).
func TestNATSCluster_NodeLoss(t *testing.T) {
	ctx := ctxT(t)
	const token = "cluster-t0ken"
	const workers, enough = 3, 40
	nodes := startNATSCluster(t, token)
	var list []string
	for _, n := range nodes {
		list = append(list, n.url)
	}
	urls := strings.Join(list, ",")
	d := startDaemon(t, t.TempDir(), "-nats-url", urls, "-nats-token", token, "-replicas", "3")
	if d.url != urls {
		t.Fatalf("wacpd says it listens on %s, want the cluster %s", d.url, urls)
	}

	nc, err := nats.Connect(urls, nats.Token(token), nats.Name("e2e"), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	st, err := js.Stream(sctx, client.SignalStream)
	cancel()
	if err != nil {
		t.Fatalf("stream %s: %v\n%s", client.SignalStream, err, d.log)
	}
	if got := st.CachedInfo().Config.Replicas; got != 3 {
		t.Fatalf("stream %s has %d replicas, want 3", client.SignalStream, got)
	}

	opts := func(tok, ws string) client.Options {
		return client.Options{URL: urls, Token: tok, Workspace: ws, NATSToken: token, Timeout: 5 * time.Second}
	}
	coord := dial(t, ctx, opts(d.admin, ""))
	var (
		seenMu  sync.Mutex
		seen    = map[string]int{} // checkpoint id -> checkpoint signals delivered
		newest  time.Time          // when a checkpoint's first signal last arrived
		watchCh = make(chan error, 1)
	)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		watchCh <- coord.Watch(wctx, client.WatchOptions{Durable: "cluster", DeliverAll: true}, func(s signal.Signal) error {
			if s.Type == "checkpoint" && s.Ref != nil {
				seenMu.Lock()
				seen[*s.Ref]++
				if seen[*s.Ref] == 1 {
					newest = time.Now()
				}
				seenMu.Unlock()
			}
			return nil
		})
	}()

	load := &clusterLoad{acked: map[string]string{}}
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	var warm, recovered []chan struct{}
	var spaces []string
	for range workers {
		created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: "worker"})
		if err != nil {
			t.Fatalf("CreateWorkspace: %v", err)
		}
		if _, err := coord.SendEnvelope(ctx, client.EnvelopeRequest{To: created.Workspace.ID, Type: "directive",
			Payload: envelope.Payload{Content: "write checkpoints while a NATS node dies"}}); err != nil {
			t.Fatalf("directive: %v", err)
		}
		w := dial(t, ctx, opts(created.Token, created.Workspace.ID))
		spaces = append(spaces, created.Workspace.ID)
		wa, re := make(chan struct{}), make(chan struct{})
		warm, recovered = append(warm, wa), append(recovered, re)
		wg.Add(1)
		go func() { defer wg.Done(); load.write(lctx, w, enough, wa, re) }()
	}
	wait := func(what string, chs []chan struct{}) {
		t.Helper()
		bound := time.NewTimer(60 * time.Second)
		defer bound.Stop()
		for _, ch := range chs {
			select {
			case <-ch:
			case <-bound.C:
				stopLoad()
				wg.Wait()
				t.Fatalf("%s: a worker had fewer than %d checkpoints acknowledged after 60s\n%s", what, enough, d.log)
			}
		}
	}
	wait("the load before the kill", warm)

	// Kill the node the daemon is connected to, mid-load.
	var victim *natsNode
	for _, n := range nodes {
		ok, err := n.serves("wacpd")
		if err != nil {
			t.Fatalf("%s /connz: %v", n.name, err)
		}
		if ok {
			victim = n
		}
	}
	if victim == nil {
		t.Fatal("no node lists the daemon's connection (wacpd) in /connz")
	}
	before, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	load.mu.Lock()
	ackedBefore := len(load.acked)
	load.mu.Unlock()
	killedAt := time.Now()
	load.killedAt.Store(&killedAt)
	victim.kill()
	wait("the load after the kill", recovered)
	stopLoad()
	wg.Wait()
	stoppedAt := time.Now()

	// Nothing acknowledged is lost: every acknowledged checkpoint is stored.
	stored := storedCheckpoints(t, ctx, coord, spaces, d.log.String)
	lost := notStored(t, load.acked, stored)

	// Every stored checkpoint's signal reaches the coordinator. One the
	// lost node was delivering is delivered again after the consumer's ack
	// wait (30 s).
	delivered := awaitEverySignal(t, stored, &seenMu, seen, watchCh, d.log.String)
	t.Logf("signals: %d checkpoint signals delivered to the coordinator for %d stored checkpoints (%d repeats)", delivered, len(stored), delivered-len(stored))
	stopWatch()
	if err := <-watchCh; err != nil {
		t.Errorf("the coordinator's watch through the node loss = %v, want nil when stopped", err)
	}

	// The daemon lost its node and came back through another.
	log := d.log.String()
	for _, want := range []string{`msg="lost the NATS server; reconnecting"`, `msg="reconnected to NATS"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the daemon's log has no %s", want)
		}
	}
	sctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	info, err := st.Info(sctx)
	cancel()
	leader := "(unknown)"
	switch {
	case err != nil:
		t.Errorf("stream info after the kill: %v", err)
	case info.Config.Replicas != 3 || info.Cluster == nil || info.Cluster.Leader == "" || info.Cluster.Leader == victim.name:
		t.Errorf("stream after the kill: %d replicas, cluster %+v; want 3 and a leader other than %s", info.Config.Replicas, info.Cluster, victim.name)
	default:
		leader = info.Cluster.Leader
	}

	// The trail verifies, through the daemon on the cluster.
	cmd := exec.Command(bin.wacp, "-url", urls, "-token", d.admin, "trail", "verify")
	cmd.Env = append(os.Environ(), "WACP_NATS_TOKEN="+token)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok: ") {
		t.Errorf("wacp trail verify = %v\n%s", err, out)
	}

	load.mu.Lock()
	acked, failed, firstAck := len(load.acked), load.failed, load.firstAck
	load.mu.Unlock()
	seenMu.Lock()
	allSeen, lag := newest.Sub(killedAt).Round(time.Millisecond), max(newest.Sub(stoppedAt), 0).Round(time.Millisecond)
	seenMu.Unlock()
	t.Logf("killed %s, the daemon's node, after %d checkpoints were acknowledged (%d workers); the stream's leader was %s, then %s",
		victim.name, ackedBefore, workers, before.Cluster.Leader, leader)
	t.Logf("acknowledged %d, stored %d, lost %d; %d stored without an acknowledgement (an answer lost at the kill, or cut off when the load stopped); %d requests failed and were retried",
		acked, len(stored), lost, len(stored)-acked+lost, failed)
	t.Logf("from the kill: the daemon reconnected after %s and published its first signal after %s; a worker had its first checkpoint acknowledged after %s; every stored checkpoint's signal had reached the coordinator after %s (%s after the load stopped)",
		logSince(log, "reconnected to NATS", killedAt), firstPublish(log, killedAt), firstAck.Sub(killedAt).Round(time.Millisecond), allSeen, lag)

	d.stop()
	if out, err := exec.Command(bin.wacp, "trail", "verify", "--dir", d.dir).CombinedOutput(); err != nil {
		t.Errorf("wacp trail verify --dir after the stop = %v\n%s", err, out)
	}
}

// notStored fails the test for every acknowledged checkpoint (id ->
// workspace) that is not stored in its workspace, and returns how many.
func notStored(t *testing.T, acked, stored map[string]string) int {
	t.Helper()
	lost := 0
	for id, ws := range acked {
		if stored[id] != ws {
			lost++
			t.Errorf("checkpoint %s of %s was acknowledged and is not stored", id, ws)
		}
	}
	return lost
}

// awaitEverySignal waits until the coordinator's watch has seen (seen, under
// mu: checkpoint id -> checkpoint signals delivered) the signal of every
// stored checkpoint, and returns how many signals it has delivered in all.
// It fails the test when the watch ends first (watchCh), or after 90 s: a
// signal a lost NATS node was carrying is delivered again after the
// consumer's ack wait, 30 s.
func awaitEverySignal(t *testing.T, stored map[string]string, mu *sync.Mutex, seen map[string]int, watchCh <-chan error, logs func() string) int {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var missing []string
		delivered := 0
		mu.Lock()
		for id := range stored {
			if seen[id] == 0 {
				missing = append(missing, id)
			}
		}
		for _, n := range seen {
			delivered += n
		}
		mu.Unlock()
		if len(missing) == 0 {
			return delivered
		}
		select {
		case err := <-watchCh:
			t.Fatalf("the coordinator's watch ended with %v; %d stored checkpoints without a signal", err, len(missing))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d stored checkpoints have no signal at the coordinator after 90s (first %s of %s)\n%s", len(missing), len(stored), missing[0], stored[missing[0]], logs())
		}
		time.Sleep(20 * time.Millisecond) // polling what the watch has seen
	}
}

// storedCheckpoints lists every checkpoint of spaces through the
// coordinator c: checkpoint id -> workspace. logs gives what to print when
// a list fails.
func storedCheckpoints(t *testing.T, ctx context.Context, c *client.Client, spaces []string, logs func() string) map[string]string {
	t.Helper()
	stored := map[string]string{}
	for _, ws := range spaces {
		for after := ""; ; {
			page, err := c.ListCheckpoints(ctx, ws, after, 1000)
			if err != nil {
				t.Fatalf("ListCheckpoints(%s): %v\n%s", ws, err, logs())
			}
			for _, cp := range page {
				stored[cp.ID] = ws
			}
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	return stored
}

// logTime matches a line of the daemon's log (slog's text form) and its
// time.
var logTime = regexp.MustCompile(`(?m)^time=(\S+) level=\S+ msg="([^"]*)"`)

// logAt returns the time of the first line of the daemon's log with
// message msg, or the zero time.
func logAt(log, msg string) time.Time {
	for _, m := range logTime.FindAllStringSubmatch(log, -1) {
		if m[2] == msg {
			at, _ := time.Parse(time.RFC3339Nano, m[1])
			return at
		}
	}
	return time.Time{}
}

// logSince says how long after from the daemon first logged msg.
func logSince(log, msg string, from time.Time) string {
	at := logAt(log, msg)
	if at.IsZero() {
		return "(not logged)"
	}
	return at.Sub(from).Round(time.Millisecond).String()
}

// firstPublish says how long after the kill the daemon's publisher had
// the stream's first acknowledgement after the publishes the loss failed.
func firstPublish(log string, killedAt time.Time) string {
	if at := logAt(log, "publishing signals again"); !at.IsZero() {
		return at.Sub(killedAt).Round(time.Millisecond).String()
	}
	return "(no publish failed: none was in flight)"
}

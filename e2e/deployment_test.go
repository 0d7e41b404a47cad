package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/placement"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/wire"
)

// deploymentPartitions is the partition count of the test deployment.
const deploymentPartitions = 8

// partitionMapping is the subject mapping every node of a deployment's
// cluster has (docs/operations.md §12): an agent request goes to its
// workspace's partition.
var partitionMapping = fmt.Sprintf(`mappings = {
  "wacp.v1.agent.*.>": "wacp.v1.p.{{partition(%d,1)}}.agent.{{wildcard(1)}}.>"
}`, deploymentPartitions)

// deploymentLoad is what the workers of TestDeployment_DaemonAndNodeLoss
// had acknowledged, with when each request was sent.
type deploymentLoad struct {
	mu     sync.Mutex
	acked  map[string]string      // checkpoint id -> workspace
	sentAt map[string][]time.Time // workspace -> when each acknowledged request was sent
	failed int
}

// write runs writeChain for c, recording what was acknowledged.
func (l *deploymentLoad) write(ctx context.Context, c *client.Client) {
	writeChain(ctx, c, func(id string, sent time.Time) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.acked[id] = c.Workspace()
		l.sentAt[c.Workspace()] = append(l.sentAt[c.Workspace()], sent)
	}, func() {
		l.mu.Lock()
		l.failed++
		l.mu.Unlock()
	})
}

// waitAll waits until every workspace of spaces has n acknowledgements of
// requests sent after since.
func (l *deploymentLoad) waitAll(t *testing.T, what string, spaces []string, since time.Time, n int, bound time.Duration, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		var short []string
		l.mu.Lock()
		for _, ws := range spaces {
			got := 0
			for _, at := range l.sentAt[ws] {
				if at.After(since) {
					got++
				}
			}
			if got < n {
				short = append(short, fmt.Sprintf("%s:%d", ws, got))
			}
		}
		l.mu.Unlock()
		if len(short) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: workers with fewer than %d acknowledgements after %v: %v\n%s", what, n, bound, short, logs())
		}
		time.Sleep(20 * time.Millisecond) // polling what the workers had acknowledged
	}
}

// TestDeployment_DaemonAndNodeLoss runs a deployment of two wacpd daemons
// (8 partitions: d1 owns 0-3 and the root, d2 owns 4-7) on a 3-node NATS
// cluster with the partition mapping, and agents writing checkpoints on
// both. It kills (SIGKILL) a NATS node mid-load, then daemon d2, and
// starts d2 again on its data dir. Then: the coordinator, talking to the
// cluster with one token, created workspaces on both daemons and reached
// each (directives, reads); every acknowledged checkpoint is stored; every
// stored checkpoint's signal reached the coordinator, those of d2's
// workspaces published by d2 to the root's coordinator on d1; d2's
// partitions were unavailable while it was down and nothing else was; and
// the auditor verifies both daemons' logs and signed heads as one system,
// offline (wacp trail verify --dir d1 --dir d2).
func TestDeployment_DaemonAndNodeLoss(t *testing.T) {
	ctx := ctxT(t)
	const token = "deployment-t0ken"
	const workers, enough = 8, 15
	nodes := startNATSClusterWith(t, token, partitionMapping)
	var list []string
	for _, n := range nodes {
		list = append(list, n.url)
	}
	urls := strings.Join(list, ",")
	dep := func(id, own string) []string {
		return []string{"-nats-url", urls, "-nats-token", token, "-partitions", fmt.Sprint(deploymentPartitions),
			"-own", own, "-daemon-id", id, "-lease-ttl", "15s"}
	}
	dir1, dir2 := t.TempDir(), t.TempDir()
	d1 := startDaemon(t, dir1, dep("d1", "0-3")...)
	d2 := startDaemon(t, dir2, dep("d2", "4-7")...)
	logs := func() string { return "d1:\n" + d1.log.String() + "\nd2:\n" + d2.log.String() }
	if d1.admin == "" || d2.admin != "" {
		t.Fatalf("admin.token: the first daemon has %q, the second %q; want the first only", d1.admin, d2.admin)
	}
	root := readDaemonFile(t, dir1).RootWorkspace
	if got := readDaemonFile(t, dir2).RootWorkspace; got != root {
		t.Fatalf("d2's root workspace is %s, d1's %s; want one root", got, root)
	}
	if p := placement.Partition(root, deploymentPartitions); p > 3 {
		t.Fatalf("the root is in partition %d, not one of the first daemon's", p)
	}

	opts := func(tok, ws string) client.Options {
		return client.Options{URL: urls, Token: tok, Workspace: ws, NATSToken: token, Timeout: 5 * time.Second}
	}
	coord := dial(t, ctx, opts(d1.admin, ""))
	var (
		seenMu  sync.Mutex
		seen    = map[string]int{} // checkpoint id -> checkpoint signals delivered
		watchCh = make(chan error, 1)
	)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		watchCh <- coord.Watch(wctx, client.WatchOptions{Durable: "deployment", DeliverAll: true}, func(s signal.Signal) error {
			if s.Type == "checkpoint" && s.Ref != nil {
				seenMu.Lock()
				seen[*s.Ref]++
				seenMu.Unlock()
			}
			return nil
		})
	}()

	load := &deploymentLoad{acked: map[string]string{}, sentAt: map[string][]time.Time{}}
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	var spaces, onD2 []string
	for i := range workers {
		created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: "worker"})
		if err != nil {
			t.Fatalf("CreateWorkspace %d: %v\n%s", i, err, logs())
		}
		id := created.Workspace.ID
		// The root's children go round the partitions.
		if p := placement.Partition(id, deploymentPartitions); p != i%deploymentPartitions {
			t.Errorf("child %d of the root is in partition %d, want %d", i, p, i%deploymentPartitions)
		}
		if placement.Partition(id, deploymentPartitions) >= 4 {
			onD2 = append(onD2, id)
		}
		if _, err := coord.SendEnvelope(ctx, client.EnvelopeRequest{To: id, Type: "directive",
			Payload: envelope.Payload{Content: "write checkpoints while a NATS node and a daemon die"}}); err != nil {
			t.Fatalf("directive to %s: %v\n%s", id, err, logs())
		}
		got, err := coord.GetWorkspace(ctx, id)
		if err != nil || got.State != "active" {
			t.Fatalf("the coordinator reads %s: %+v, %v; want it active after the directive", id, got, err)
		}
		w := dial(t, ctx, opts(created.Token, id))
		spaces = append(spaces, id)
		wg.Add(1)
		go func() { defer wg.Done(); load.write(lctx, w) }()
	}
	if len(onD2) == 0 || len(onD2) == workers {
		t.Fatalf("%d of %d workspaces on d2; want both daemons to hold some", len(onD2), workers)
	}
	// The coordinator lists one system: the workspaces of both daemons.
	all, err := coord.ListWorkspaces(ctx, "", "")
	if err != nil {
		t.Fatalf("ListWorkspaces: %v\n%s", err, logs())
	}
	var listed []string
	for _, w := range all {
		listed = append(listed, w.ID)
	}
	for _, ws := range append([]string{root}, spaces...) {
		if !slices.Contains(listed, ws) {
			t.Errorf("the coordinator's list %v lacks %s", listed, ws)
		}
	}
	if len(listed) != workers+1 {
		t.Errorf("the coordinator's list has %d workspaces, want the root and %d workers: %v", len(listed), workers, listed)
	}
	start := time.Now()
	load.waitAll(t, "the load before the kills", spaces, start.Add(-time.Hour), enough, 60*time.Second, logs)

	// Kill a NATS node mid-load: one a daemon is connected to.
	var victim *natsNode
	for _, n := range nodes {
		if ok, _ := n.serves("wacpd"); ok {
			victim = n
		}
	}
	if victim == nil {
		t.Fatal("no node lists a daemon's connection (wacpd) in /connz")
	}
	nodeKilled := time.Now()
	victim.kill()
	load.waitAll(t, "the load after the NATS node's loss", spaces, nodeKilled, enough, 60*time.Second, logs)

	// Kill daemon d2 mid-load: its workspaces wait, d1's go on.
	daemonKilled := time.Now()
	d2.kill()
	onD1 := []string{}
	for _, ws := range spaces {
		if !slices.Contains(onD2, ws) {
			onD1 = append(onD1, ws)
		}
	}
	load.waitAll(t, "d1's workspaces while d2 is down", onD1, daemonKilled, enough, 60*time.Second, logs)
	if _, err := coord.GetWorkspace(ctx, onD2[0]); !isCode(err, "unavailable") {
		t.Errorf("the coordinator reads %s on the killed daemon: %v, want unavailable", onD2[0], err)
	}
	restarted := time.Now()
	d2 = startDaemon(t, dir2, dep("d2", "4-7")...)
	up := time.Since(restarted)
	load.waitAll(t, "d2's workspaces after its restart", onD2, restarted, enough, 60*time.Second, logs)
	resumed := time.Since(daemonKilled)
	stopLoad()
	wg.Wait()

	// Nothing acknowledged is lost.
	stored := storedCheckpoints(t, ctx, coord, spaces, logs)
	for id, ws := range stored {
		if p, want := placement.Partition(id, deploymentPartitions), placement.Partition(ws, deploymentPartitions); p != want {
			t.Errorf("checkpoint %s of %s is in partition %d, its workspace in %d", id, ws, p, want)
		}
	}
	lost := notStored(t, load.acked, stored)

	// Every stored checkpoint's signal reaches the coordinator.
	delivered := awaitEverySignal(t, stored, &seenMu, seen, watchCh, logs)
	stopWatch()
	<-watchCh

	load.mu.Lock()
	acked, failed := len(load.acked), load.failed
	load.mu.Unlock()
	t.Logf("%d workers (%d on d2); killed NATS node %s, then d2; d2's restart took %s (its recovery, then its leases: up to the 15s TTL); each of d2's workers had %d checkpoints acknowledged %s after d2's kill",
		workers, len(onD2), victim.name, up.Round(time.Millisecond), enough, resumed.Round(time.Millisecond))
	t.Logf("acknowledged %d, stored %d, lost %d; %d requests failed and were retried; %d checkpoint signals delivered for %d stored checkpoints (%d repeats)",
		acked, len(stored), lost, failed, delivered, len(stored), delivered-len(stored))

	// Each daemon's log verifies online, through its own audit endpoints
	// (wacp -daemon), with the coordinator's one token.
	var entries []string
	for _, id := range []string{"d1", "d2"} {
		cmd := exec.Command(bin.wacp, "-url", urls, "-token", d1.admin, "-daemon", id, "trail", "verify")
		cmd.Env = append(os.Environ(), "WACP_NATS_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok: ") {
			t.Errorf("wacp -daemon %s trail verify = %v\n%s", id, err, out)
		}
		entries = append(entries, strings.TrimSpace(string(out)))
	}
	if len(entries) == 2 && entries[0] == entries[1] {
		t.Errorf("wacp -daemon d1 and -daemon d2 trail verify both say %q: one daemon answered both", entries[0])
	}
	t.Logf("wacp -daemon d1|d2 trail verify: %q", entries)

	// The auditor verifies the two daemons as one system, offline.
	d1.stop()
	d2.stop()
	out, err := exec.Command(bin.wacp, "trail", "verify", "--dir", dir1, "--dir", dir2).CombinedOutput()
	if err != nil {
		t.Errorf("wacp trail verify --dir d1 --dir d2 = %v\n%s", err, out)
	}
	t.Logf("wacp trail verify --dir d1 --dir d2:\n%s", out)
}

// readDaemonFile reads DIR/wacpd.json.
func readDaemonFile(t *testing.T, dir string) wire.DaemonFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "wacpd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f wire.DaemonFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// isCode reports whether err is the daemon's error with code.
func isCode(err error, code string) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Code == code
}

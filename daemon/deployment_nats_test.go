package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/placement"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Several daemons on one NATS server, in the test process (issue 20;
// docs/operations.md §12). The e2e test runs the binaries on a cluster;
// these run two daemon.Daemon on one in-process nats-server that has the
// partition mapping, and talk to them with the Go client.

func TestDeployment_TwoDaemonsOneSystem(t *testing.T) {
	ctx := clientCtx(t)
	td := newDeployment(t, ctx, 0)

	var (
		seenMu sync.Mutex
		seen   = map[string]string{} // checkpoint id -> the signal's sender
	)
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- td.coord.Watch(wctx, client.WatchOptions{DeliverAll: true}, func(s signal.Signal) error {
			if s.Type == taxonomy.SignalCheckpoint && s.Ref != nil {
				seenMu.Lock()
				seen[*s.Ref] = s.From
				seenMu.Unlock()
			}
			return nil
		})
	}()
	defer func() { stopWatch(); <-watchDone }()

	td.direct(t, ctx)
	for i := range td.children {
		got, err := td.coord.GetWorkspace(ctx, td.id(i))
		if err != nil || got.ID != td.id(i) || got.State != workspace.Active {
			t.Fatalf("the coordinator reads child %d (partition %d): %q, %v; want it active after the directive\n%s", i, i, stateOf(got), err, td.logs())
		}
	}

	cps := make([]string, len(td.workers))
	for i, w := range td.workers {
		cp, err := artifact(ctx, w, nil)
		if err != nil {
			t.Fatalf("child %d (partition %d) writes a checkpoint: %v\n%s", i, i, err, td.logs())
		}
		if p := placement.Partition(cp.ID, depPartitions); p != i {
			t.Errorf("child %d's checkpoint %s is in partition %d, want its workspace's %d", i, cp.ID, p, i)
		}
		cps[i] = cp.ID
	}

	for i, id := range cps {
		ws := td.id(i)
		if cp, err := td.coord.GetCheckpoint(ctx, id); err != nil || cp.ID != id || cp.Workspace != ws {
			t.Errorf("the coordinator's checkpoint.get of %s (partition %d) = %q of %q, %v; want it, in %s", id, i, cp.ID, cp.Workspace, err, ws)
		}
		list, err := td.coord.ListCheckpoints(ctx, ws, "", 0)
		if err != nil || len(list) != 1 || list[0].ID != id {
			t.Errorf("the coordinator's checkpoint.list of %s (partition %d) = %v, %v; want [%s]", ws, i, list, err, id)
		}
		if head, err := td.coord.Head(ctx, ws, false); err != nil || head.ID != id {
			t.Errorf("the coordinator's checkpoint.head of %s (partition %d) = %q, %v; want %s", ws, i, head.ID, err, id)
		}
	}

	all, err := td.coord.ListWorkspaces(ctx, "", "")
	if err != nil {
		t.Fatalf("ListWorkspaces: %v\n%s", err, td.logs())
	}
	var listed []string
	for _, w := range all {
		listed = append(listed, w.ID)
	}
	want := []string{td.root}
	for i := range td.children {
		want = append(want, td.id(i))
	}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the coordinator's list = %v, want the root once and the four children, in id order: %v", listed, want)
	}
	children, err := td.coord.ListWorkspaces(ctx, td.root, "")
	if err != nil || len(children) != depPartitions {
		t.Errorf("the coordinator's list of the root's children = %d workspaces, %v; want %d", len(children), err, depPartitions)
	}

	for deadline := time.Now().Add(20 * time.Second); ; {
		seenMu.Lock()
		var missing []int
		for i, id := range cps {
			if from, ok := seen[id]; !ok || from != td.id(i) {
				missing = append(missing, i)
			}
		}
		seenMu.Unlock()
		if len(missing) == 0 {
			break
		}
		select {
		case err := <-watchDone:
			t.Fatalf("the coordinator's watch ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20s the coordinator's watch has no checkpoint signal from the children %v (partitions)\n%s", missing, td.logs())
		}
		time.Sleep(20 * time.Millisecond) // polling what the watch has seen
	}
	// Each daemon publishes into the one stream expecting its own
	// workspaces' last sequence: the other daemon's signals in between
	// are no refusal.
	for name, d := range map[string]*depDaemon{"d1": td.d1, "d2": td.d2} {
		if logs := d.logs(); strings.Contains(logs, "publish signals; will retry") {
			t.Errorf("%s's publisher was refused by the shared signal stream:\n%s", name, logs)
		}
	}
}

// TestDeployment_Tokens: a token is known to the daemon that made it. A
// d2 worker's token on the subject of a d1 workspace reaches d1 (the
// cluster's mapping routes by the subject's workspace), which does not
// know it: unauthorized. Not permission_denied: the connection uses the
// NATS token, whose permissions are every client's, so the server
// carries the request; and permission_denied is what a daemon answers a
// token it knows acting for another workspace (the same token on its
// sibling's subject, on d2). system.info, the home daemon's, answers a
// d2 worker (the deployment's public description); a garbage token on an
// agent endpoint of either daemon is unauthorized.
func TestDeployment_Tokens(t *testing.T) {
	ctx := clientCtx(t)
	td := newDeployment(t, ctx, 0)
	td.direct(t, ctx)
	onD1, onD2 := td.id(0), td.id(2)
	d2Token := td.children[2].Token

	// system.info: the home daemon d1 answers a token only d2 knows
	// (Dial reads it too).
	asD2 := td.dial(t, ctx, d2Token, onD2)
	info, err := asD2.Info(ctx)
	if err != nil || info.RootWorkspace != td.root {
		t.Errorf("system.info with a d2 worker's token = root %q, %v; want the deployment's root %s", info.RootWorkspace, err, td.root)
	}
	if _, err := td.workers[2].GetWorkspace(ctx, ""); err != nil {
		t.Errorf("the d2 worker reads its own workspace: %v", err)
	}

	// The d2 worker's token on a d1 workspace's subject.
	stray := td.dial(t, ctx, d2Token, onD1)
	if _, err := stray.GetWorkspace(ctx, ""); errCode(err) != wire.CodeUnauthorized {
		t.Errorf("a d2 worker's token on %s's workspace.get (d1) = %v, want unauthorized", onD1, err)
	}
	if _, err := artifact(ctx, stray, nil); errCode(err) != wire.CodeUnauthorized {
		t.Errorf("a d2 worker's token on %s's checkpoint (d1) = %v, want unauthorized", onD1, err)
	}
	// The same token on its sibling's subject, on its own daemon d2,
	// which knows it: the token does not act for that workspace.
	sibling := td.dial(t, ctx, d2Token, td.id(3))
	if _, err := sibling.GetWorkspace(ctx, ""); errCode(err) != wire.CodePermissionDenied {
		t.Errorf("a d2 worker's token on its sibling %s's workspace.get (d2) = %v, want permission_denied", td.id(3), err)
	}

	// A garbage token: answered by system.info, refused on every agent
	// endpoint of either daemon.
	for _, ws := range []string{onD1, onD2, td.root} {
		garbage := td.dial(t, ctx, "not-a-token-anyone-made", ws)
		if _, err := garbage.GetWorkspace(ctx, ""); errCode(err) != wire.CodeUnauthorized {
			t.Errorf("a garbage token on %s's workspace.get (partition %d) = %v, want unauthorized",
				ws, placement.Partition(ws, depPartitions), err)
		}
	}
}

// TestDeployment_DaemonStops: with d2 stopped cleanly, its partitions
// have no daemon. The coordinator's relayed reads of its workspaces and
// its list of the deployment are unavailable; a d2 worker's own request
// gets no responder; a create whose round-robin turn is one of d2's
// partitions is unavailable and the next turn, d1's, succeeds. d2 started
// again on its data dir serves at once (its clean stop released its
// leases, which last the default 30 s): its workspaces and checkpoints
// are there.
func TestDeployment_DaemonStops(t *testing.T) {
	ctx := clientCtx(t)
	td := newDeployment(t, ctx, 0)
	td.direct(t, ctx)
	cps := make([]string, len(td.workers))
	for i, w := range td.workers {
		cp, err := artifact(ctx, w, nil)
		if err != nil {
			t.Fatalf("child %d writes a checkpoint: %v", i, err)
		}
		cps[i] = cp.ID
	}

	td.d2.stop(t)
	for _, i := range []int{2, 3} {
		if _, err := td.coord.GetWorkspace(ctx, td.id(i)); errCode(err) != wire.CodeUnavailable {
			t.Errorf("the coordinator reads child %d (partition %d, d2 stopped): %v, want unavailable", i, i, err)
		}
		if _, err := td.coord.GetCheckpoint(ctx, cps[i]); errCode(err) != wire.CodeUnavailable {
			t.Errorf("the coordinator reads checkpoint %s (partition %d, d2 stopped): %v, want unavailable", cps[i], i, err)
		}
		if _, err := td.workers[i].Head(ctx, "", false); !noResponders(err) {
			t.Errorf("child %d's own checkpoint.head (d2 stopped): %v, want the client's no-responders error", i, err)
		}
	}
	if _, err := td.coord.ListWorkspaces(ctx, "", ""); errCode(err) != wire.CodeUnavailable {
		t.Errorf("the coordinator's list with d2 stopped: %v, want unavailable (not a partial list)", err)
	}
	// d1's partitions are served.
	for _, i := range []int{0, 1} {
		if got, err := td.coord.GetWorkspace(ctx, td.id(i)); err != nil || got.ID != td.id(i) {
			t.Errorf("the coordinator reads child %d (partition %d, d1's) with d2 stopped: %q, %v", i, i, stateOf(got), err)
		}
		if _, err := td.workers[i].Head(ctx, "", false); err != nil {
			t.Errorf("child %d's own checkpoint.head (d1's) with d2 stopped: %v", i, err)
		}
	}
	// The round robin is at partition 0 after the four children: 0 and 1
	// are d1's, 2 and 3 are refused, and the retry lands on 0 again.
	for turn := range depPartitions + 1 {
		created, err := td.coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
		p := turn % depPartitions
		switch {
		case p >= 2 && errCode(err) != wire.CodeUnavailable:
			t.Errorf("create at the round robin's turn %d (d2 stopped): %q, %v; want unavailable", p, createdID(created), err)
		case p < 2 && err != nil:
			t.Errorf("create at the round robin's turn %d (d1's): %v", p, err)
		case p < 2 && placement.Partition(createdID(created), depPartitions) != p:
			t.Errorf("create at the round robin's turn %d made %s in partition %d", p, createdID(created), placement.Partition(createdID(created), depPartitions))
		}
	}

	// Again on the same dir: it serves as soon as it is ready.
	d2, err := launch(t, td.config2(), 10*time.Second)
	if err != nil {
		t.Fatalf("d2's restart: %v\n%s", err, d2.logs())
	}
	td.d2 = d2
	if strings.Contains(d2.logs(), "lease is held") {
		t.Errorf("d2's restart waited for a lease its clean stop should have released:\n%s", d2.logs())
	}
	for _, i := range []int{2, 3} {
		if got, err := td.coord.GetWorkspace(ctx, td.id(i)); err != nil || got.State != workspace.Active {
			t.Errorf("after d2's restart the coordinator reads child %d: %q, %v; want it active", i, stateOf(got), err)
		}
		if list, err := td.coord.ListCheckpoints(ctx, td.id(i), "", 0); err != nil || len(list) != 1 || list[0].ID != cps[i] {
			t.Errorf("after d2's restart the coordinator lists child %d's checkpoints: %v, %v; want [%s]", i, list, err, cps[i])
		}
		if head, err := td.workers[i].Head(ctx, "", false); err != nil || head.ID != cps[i] {
			t.Errorf("after d2's restart child %d's own head: %q, %v; want %s", i, head.ID, err, cps[i])
		}
	}
	if all, err := td.coord.ListWorkspaces(ctx, "", ""); err != nil || len(all) != 1+depPartitions+3 {
		t.Errorf("after d2's restart the coordinator's list has %d workspaces, %v; want the root, 4 children and the 3 made while d2 was stopped", len(all), err)
	}
}

// TestDeployment_DataDirBinding: a data dir is bound to its deployment,
// partitions and daemon id; its daemon refuses to start otherwise and
// serves nothing. A third daemon owning d2's partitions while d2 runs
// waits for their leases (twice its TTL) and stops with the lease held;
// d2 goes on serving.
func TestDeployment_DataDirBinding(t *testing.T) {
	ctx := clientCtx(t)
	const ttl = 3 * time.Second
	td := newDeployment(t, ctx, ttl)
	td.direct(t, ctx)

	started := time.Now()
	d3 := depConfig(td.url, t.TempDir(), "d3", []int{2, 3}, ttl)
	err := refusedStart(t, d3, 30*time.Second)
	if !errors.Is(err, placement.ErrHeld) || !strings.Contains(err.Error(), `"d2"`) {
		t.Errorf("a third daemon owning d2's partitions: Run = %v, want partition 2's lease held by d2", err)
	}
	if waited := time.Since(started); waited < 2*ttl {
		t.Errorf("the third daemon stopped after %v, want it to wait for the lease twice its TTL (%v)", waited, 2*ttl)
	}
	if _, err := td.workers[2].Head(ctx, "", false); errCode(err) != wire.CodeNotFound {
		t.Errorf("d2's worker while a third daemon tried its partitions: %v, want d2's answer (not_found: no checkpoint yet)", err)
	}

	td.d2.stop(t)
	tests := []struct {
		name string
		cfg  func(*daemon.Config)
		want string
	}{
		{"other partitions to own", func(c *daemon.Config) { c.Deployment.Own = []int{3} }, "holds partitions [2 3] of 4; the flags say [3] of 4"},
		{"another daemon id", func(c *daemon.Config) { c.Deployment.DaemonID = "d9" }, `the data dir is daemon "d2"'s, -daemon-id says "d9"`},
		{"another partition count", func(c *daemon.Config) { c.Deployment.Partitions = 8 }, "the deployment has 4 partitions, -partitions says 8"},
	}
	for _, tt := range tests {
		cfg := td.config2()
		tt.cfg(&cfg)
		err := refusedStart(t, cfg, 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Run = %v, want an error with %q", tt.name, err, tt.want)
		}
		if _, err := td.workers[2].Head(ctx, "", false); !noResponders(err) {
			t.Errorf("%s: d2's worker after the refused start: %v, want no responders", tt.name, err)
		}
		if _, err := os.Stat(filepath.Join(td.dir2, daemon.InfoFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s after the refused start: %v, want none", tt.name, daemon.InfoFile, err)
		}
	}

	// An admin.token that is not the coordinator's stops the start; a copy
	// of the first daemon's is accepted.
	tokenFile := filepath.Join(td.dir2, daemon.AdminTokenFile)
	if err := os.WriteFile(tokenFile, []byte("wacp_someone_elses_token_0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = refusedStart(t, td.config2(), 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "is not the deployment's coordinator token") {
		t.Errorf("a wrong %s: Run = %v, want an error saying it is not the coordinator's", daemon.AdminTokenFile, err)
	}
	if _, err := td.workers[2].Head(ctx, "", false); !noResponders(err) {
		t.Errorf("d2's worker after the refused start: %v, want no responders", err)
	}
	if err := os.WriteFile(tokenFile, []byte(td.admin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	td.d2 = startDep(t, td.config2())
	if _, err := td.workers[2].Head(ctx, "", false); errCode(err) != wire.CodeNotFound {
		t.Errorf("d2's worker after d2's start with its own flags: %v, want d2's answer (not_found)", err)
	}
}

// leaseRecord is a lease record in the form placement writes it.
type leaseRecord struct {
	Holder  string    `json:"holder"`
	Epoch   uint64    `json:"epoch"`
	Expires time.Time `json:"expires"`
}

// createWhileLost has the coordinator create two children of the root
// while d1 does not hold partition 1's lease: the round robin's turn 0
// is made on d1, turn 1 is refused unavailable rather than minted into a
// partition d1 does not hold.
func (td *testDeployment) createWhileLost(t *testing.T, ctx context.Context) {
	t.Helper()
	created, err := td.coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if err != nil || placement.Partition(createdID(created), depPartitions) != 0 {
		t.Errorf("create at the round robin's turn 0 while partition 1's lease is lost: %q, %v; want a child in partition 0", createdID(created), err)
	}
	created, err = td.coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if errCode(err) != wire.CodeUnavailable {
		if strings.Contains(td.d1.logs(), "took a partition's lease again") {
			t.Logf("create at turn 1 = %v: d1 had taken the lease again already", err)
			return
		}
		t.Errorf("create at the round robin's turn 1 while partition 1's lease is lost: %q, %v; want unavailable", createdID(created), err)
	}
}

// TestDeployment_LeaseLoss: another writer takes partition 1's lease
// from d1 while it runs (the test writes the key p1 of wacp_leases, as a
// second owner would). d1 refuses partition 1's requests (unavailable),
// its worker's and the coordinator's create of a child at partition 1's
// turn, until the intruder's record expires; then it takes the lease
// again and serves them; partition 0 is served throughout.
func TestDeployment_LeaseLoss(t *testing.T) {
	ctx := clientCtx(t)
	const ttl = 3 * time.Second
	td := newDeployment(t, ctx, ttl)
	td.direct(t, ctx)
	on0, on1 := td.workers[0], td.workers[1]
	for _, w := range []*client.Client{on0, on1} {
		if _, err := artifact(ctx, w, nil); err != nil {
			t.Fatalf("%s writes a checkpoint: %v", w.Workspace(), err)
		}
	}

	nc, err := nats.Connect(td.url, nats.Token(depNATSToken))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "wacp_leases")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := kv.Get(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	var held leaseRecord
	if err := json.Unmarshal(cur.Value(), &held); err != nil || held.Holder != "d1" {
		t.Fatalf("lease p1 = %s, %v; want d1's", cur.Value(), err)
	}
	intruder, _ := json.Marshal(leaseRecord{Holder: "intruder", Expires: time.Now().Add(ttl).UTC()})
	taken := time.Now()
	if _, err := kv.Put(ctx, "p1", intruder); err != nil {
		t.Fatal(err)
	}

	var refused, servedAgain bool
	var refusals int
	for deadline := time.Now().Add(20 * time.Second); !servedAgain; {
		if _, err := on0.Head(ctx, "", false); err != nil {
			t.Fatalf("partition 0's worker %v after partition 1's lease was taken: %v", time.Since(taken), err)
		}
		_, err := on1.Head(ctx, "", false)
		switch {
		case err == nil:
			servedAgain = refused
		case errCode(err) == wire.CodeUnavailable:
			if !refused {
				td.createWhileLost(t, ctx)
				// The coordinator's request about the workspace, through
				// the root's partition, is refused too.
				if _, err := td.coord.GetWorkspace(ctx, on1.Workspace()); errCode(err) != wire.CodeUnavailable && !strings.Contains(td.d1.logs(), "took a partition's lease again") {
					t.Errorf("the coordinator's workspace.get of partition 1's worker while its lease is lost = %v, want unavailable", err)
				}
			}
			refused = true
			refusals++
		default:
			t.Fatalf("partition 1's worker %v after its lease was taken: %v, want unavailable or served", time.Since(taken), err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20s partition 1 refused: %v, served again: %v\n%s", refused, servedAgain, td.d1.logs())
		}
		time.Sleep(20 * time.Millisecond) // polling partition 1's answer
	}
	back := time.Since(taken)
	if back < ttl-time.Second {
		t.Errorf("partition 1 was served again %v after its lease was taken until %v: before the intruder's record expired", back, ttl)
	}
	logs := td.d1.logs()
	for _, want := range []string{"lost a partition's lease", "took a partition's lease again"} {
		if !strings.Contains(logs, want) || !strings.Contains(logs, "partition=1") {
			t.Errorf("d1's log has no %q for partition 1:\n%s", want, logs)
		}
	}
	if cur, err := kv.Get(ctx, "p1"); err != nil || !strings.Contains(string(cur.Value()), `"holder":"d1"`) {
		t.Errorf("lease p1 after the retake = %v, %v; want d1's", cur, err)
	}
	// The round robin is at partition 2: the children of turns 2, 3 and 0
	// and then 1 are made again.
	for turn := 2; turn <= 5; turn++ {
		created, err := td.coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
		if err != nil || placement.Partition(createdID(created), depPartitions) != turn%depPartitions {
			t.Errorf("create at the round robin's turn %d after the retake: %q, %v; want a child in that partition", turn%depPartitions, createdID(created), err)
		}
	}
	t.Logf("partition 1 refused %d times, served again %v after its lease was taken (the intruder's record lasted %v)", refusals, back.Round(time.Millisecond), ttl)
}

// TestDeployment_StopWhileWaitingForALease: a daemon waiting for a
// partition's lease another daemon holds (up to twice the TTL) stops as
// soon as it is told to, without waiting for the lease.
func TestDeployment_StopWhileWaitingForALease(t *testing.T) {
	ctx := clientCtx(t)
	td := newDeployment(t, ctx, 0)
	buf := &logBuffer{}
	cfg := depConfig(td.url, t.TempDir(), "d3", []int{2, 3}, 0)
	cfg.Logger = slog.New(slog.NewTextHandler(buf, nil))
	rt, err := daemon.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rt.Run(rctx) }()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(buf.String(), "lease is held"); {
		select {
		case err := <-done:
			t.Fatalf("Run = %v before waiting for the lease\n%s", err, buf)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no wait for d2's lease after 20s\n%s", buf)
		}
		time.Sleep(20 * time.Millisecond) // polling the daemon's log
	}
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want the stop's context.Canceled", err)
		}
		t.Logf("Run = %v, %v after the stop", err, time.Since(stopped).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Errorf("Run has not returned 10s after the stop, while waiting for a lease of the default TTL (30s)\n%s", buf)
		<-done
	}
}

// TestDeployment_ListPagesAcrossDaemons: the coordinator's workspace.list
// of the deployment, when a daemon's page is cut (here by a small byte
// budget), is paged without skipping or repeating a workspace: a merged
// page stops at the smallest last id of a daemon that has more.
func TestDeployment_ListPagesAcrossDaemons(t *testing.T) {
	ctx := clientCtx(t)
	url := startMappedNATS(t)
	dir1, dir2 := t.TempDir(), t.TempDir()
	// d2 cuts its pages short, d1 (home) does not: the merged page must
	// not run past d2's last id.
	d1 := startDep(t, depConfig(url, dir1, "d1", []int{0, 1}, 0))
	startDep(t, daemon.WithPageBytes(depConfig(url, dir2, "d2", []int{2, 3}, 0), 1200))
	b, err := os.ReadFile(filepath.Join(dir1, daemon.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	coord, err := client.Dial(ctx, client.Options{URL: url, Token: strings.TrimSpace(string(b)), NATSToken: depNATSToken})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	want := []string{readInfoFile(t, dir1).RootWorkspace}
	for i := range 4 * depPartitions {
		created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
		if err != nil {
			t.Fatalf("CreateWorkspace %d: %v\n%s", i, err, d1.logs())
		}
		want = append(want, created.Workspace.ID)
	}
	slices.Sort(want)

	first, err := coord.Call(ctx, "workspace.list", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
		Next       *string               `json:"next"`
	}
	if err := json.Unmarshal(first, &page); err != nil {
		t.Fatal(err)
	}
	if page.Next == nil || len(page.Workspaces) >= len(want) {
		t.Fatalf("the first page has %d of %d workspaces, next %v; want a page cut at d2's last", len(page.Workspaces), len(want), page.Next)
	}
	all, err := coord.ListWorkspaces(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range all {
		got = append(got, w.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the paged list of the deployment has %d workspaces, want %d, in id order, each once:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
}

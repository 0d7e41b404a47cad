package e2e

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/trail"
)

// The crash loop's flags: CI runs the defaults; for a long run, for example
//
//	go test ./e2e -run TestCrashLoop -crashloop.duration=2h -timeout=3h -v
var (
	crashKills    = flag.Int("crashloop.kills", 20, "crash loop: kill -9 the daemon this many times")
	crashDuration = flag.Duration("crashloop.duration", 0, "crash loop: keep killing until this much time has passed (overrides -crashloop.kills)")
	crashAgents   = flag.Int("crashloop.agents", 4, "crash loop: workers writing checkpoints at once")
	crashMaxDelay = flag.Duration("crashloop.maxdelay", 1500*time.Millisecond, "crash loop: longest time the agents write before a kill")
)

// crashAck is what an agent was told when its checkpoint was acknowledged.
type crashAck struct{ ws, digest string }

// crashLoop is the state the crash loop keeps across daemon processes.
type crashLoop struct {
	t       *testing.T
	dir     string
	workers []crashWorker

	mu          sync.Mutex          // guards acked, checkedAcks and seen
	acked       map[string]crashAck // checkpoint id -> acknowledgement
	checkedAcks map[string]bool     // acknowledgements a check found in place
	seen        map[string]bool     // checkpoint ids whose signal the durable consumer delivered

	// Owned by the test goroutine.
	kills      int                 // kill -9 of a serving daemon
	early      int                 // kill -9 of a daemon still starting (recovering)
	chains     map[string]crashAck // every checkpoint listed: id -> workspace and digest
	contents   map[string]bool     // their contents, unique per request
	heads      map[string]string   // each chain's head at the last check
	trailAt    string              // the last trail entry read
	created    int                 // checkpoint_created entries read
	recoveries int                 // recovery_completed entries read
	lost       int                 // acknowledged checkpoints missing or changed after a restart
	dups       int                 // checkpoints listed twice, or committed twice for one request
	d          *daemon             // the daemon being checked, for its log when a check fails
}

type crashWorker struct{ id, token string }

// TestCrashLoop starts wacpd, lets several agents write checkpoints
// concurrently while recording every acknowledgement, kills the daemon with
// SIGKILL at a random moment, restarts it on the same data dir and checks:
// every acknowledged checkpoint is present with the same digest, no
// checkpoint is duplicated, every chain is linear and matches the trail's
// checkpoint_created entries, the trail verifies, every kill was followed by
// one recovery_completed that quarantined nothing, and a durable signal
// consumer has seen the checkpoint signal of every committed checkpoint.
// Every fifth round the restarting daemon itself is killed while it is
// still starting (opening its database, recovering or starting NATS).
// After the last round the daemon stops cleanly and the data dir verifies
// offline (datadir.Verify).
func TestCrashLoop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), *crashDuration+10*time.Minute)
	defer cancel()
	cl := &crashLoop{t: t, dir: t.TempDir(), acked: map[string]crashAck{}, checkedAcks: map[string]bool{},
		seen: map[string]bool{}, chains: map[string]crashAck{}, contents: map[string]bool{}, heads: map[string]string{}}
	start := time.Now()
	more := func() bool {
		if *crashDuration > 0 {
			return time.Since(start) < *crashDuration
		}
		return cl.kills < *crashKills
	}
	for round := 0; more(); round++ {
		if round > 0 && round%5 == 0 {
			cl.killWhileStarting()
		}
		cl.round(ctx, round)
		if t.Failed() {
			break
		}
	}
	d := startDaemon(t, cl.dir)
	cl.d = d
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	stopWatch := cl.watch(ctx, coord)
	cl.check(ctx, coord, true) // everything, from the start
	coord.Close()
	stopWatch()
	d.stop()
	rep, err := datadir.Verify(cl.dir)
	if err != nil || !rep.OK || rep.Size != uint64(rep.Entries) {
		t.Fatalf("datadir.Verify after the last clean stop = %+v, %v; want ok with every entry signed", rep, err)
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	line := fmt.Sprintf("crashloop: kills=%d early_kills=%d acked=%d committed=%d lost=%d duplicated=%d signals_seen=%d entries=%d took=%s",
		cl.kills, cl.early, len(cl.acked), len(cl.chains), cl.lost, cl.dups, len(cl.seen), rep.Entries,
		time.Since(start).Round(time.Second))
	t.Log(line)
	// go test shows a passing test's log only with -v; CI reads the figures
	// from this file instead (.ci/run).
	if path := os.Getenv("WACP_CRASHLOOP_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
			t.Errorf("write %s: %v", path, err)
		}
	}
	if cl.lost != 0 || cl.dups != 0 {
		t.Errorf("crashloop: lost=%d duplicated=%d, want 0 and 0", cl.lost, cl.dups)
	}
}

// round runs one daemon process: restart, check, write, kill.
func (cl *crashLoop) round(ctx context.Context, round int) {
	t := cl.t
	t0 := time.Now()
	d := startDaemon(t, cl.dir)
	cl.d = d
	coord, err := client.Dial(ctx, client.Options{URL: d.url, Token: d.admin})
	if err != nil {
		t.Fatalf("round %d: dial coordinator: %v", round, err)
	}
	if round == 0 {
		cl.setup(ctx, coord)
	}
	stopWatch := cl.watch(ctx, coord)
	heads := cl.check(ctx, coord, false)
	t1 := time.Now()

	var killed atomic.Bool
	var wg sync.WaitGroup
	agents := make([]*client.Client, len(cl.workers))
	for i, w := range cl.workers {
		c, err := client.Dial(ctx, client.Options{URL: d.url, Token: w.token, Workspace: w.id})
		if err != nil {
			t.Fatalf("round %d: dial worker %s: %v", round, w.id, err)
		}
		agents[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.write(ctx, c, w.id, heads[w.id], round, &killed)
		}()
	}
	time.Sleep(time.Duration(rand.Int64N(int64(*crashMaxDelay))))
	killed.Store(true)
	d.kill()
	cl.kills++
	// Closing the connections ends the requests still waiting for the dead
	// daemon, and the watch.
	for _, c := range agents {
		c.Close()
	}
	coord.Close()
	wg.Wait()
	stopWatch()
	if testing.Verbose() {
		t.Logf("round %d: restart and check %s, writes %s", round, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	}
}

// setup creates the workers, active, and keeps their tokens. (The first
// watch creates the durable consumer, from the first signal.)
func (cl *crashLoop) setup(ctx context.Context, coord *client.Client) {
	t := cl.t
	for i := 0; i < *crashAgents; i++ {
		created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: "worker"})
		if err != nil {
			t.Fatalf("CreateWorkspace: %v", err)
		}
		_, err = coord.SendEnvelope(ctx, client.EnvelopeRequest{To: created.Workspace.ID, Type: "directive",
			Payload: envelope.Payload{Content: "write checkpoints until the daemon dies"}})
		if err != nil {
			t.Fatalf("directive: %v", err)
		}
		cl.workers = append(cl.workers, crashWorker{id: created.Workspace.ID, token: created.Token})
	}
}

// watch follows the coordinator's signals with the durable consumer
// "crashloop" and records each checkpoint signal, until the returned stop.
func (cl *crashLoop) watch(ctx context.Context, coord *client.Client) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// It ends with an error when the daemon is killed; check waits for
		// what it has not seen yet.
		_ = coord.Watch(wctx, client.WatchOptions{Durable: "crashloop", DeliverAll: true}, func(s signal.Signal) error {
			if s.Type == "checkpoint" && s.Ref != nil {
				cl.mu.Lock()
				cl.seen[*s.Ref] = true
				cl.mu.Unlock()
			}
			return nil
		})
	}()
	return func() { cancel(); <-done }
}

// write appends checkpoints to ws's chain after head until a request fails.
// A failure before the kill is a bug; after it, the request's outcome is
// unknown (it may have committed: the next check finds it in the chain).
func (cl *crashLoop) write(ctx context.Context, c *client.Client, ws, head string, round int, killed *atomic.Bool) {
	for n := 0; ; n++ {
		var parent *string
		if head != "" {
			parent = &head
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cp, err := c.CreateCheckpoint(rctx, artifact(parent, "provisional", fmt.Sprintf("%s round %d step %d", ws, round, n)))
		cancel()
		if err != nil {
			if !killed.Load() {
				cl.t.Errorf("round %d: checkpoint on %s failed while the daemon was serving: %v", round, ws, err)
			}
			return
		}
		cl.mu.Lock()
		cl.acked[cp.ID] = crashAck{ws: ws, digest: cp.Digest.String()}
		cl.mu.Unlock()
		head = cp.ID
	}
}

// killWhileStarting starts the daemon and kills it 0-40 ms later, while it
// is still starting (opening the database, recovering, starting NATS).
func (cl *crashLoop) killWhileStarting() {
	cmd := exec.Command(bin.wacpd, "-data", cl.dir, "-listen", "127.0.0.1:0", "-log-level", "error")
	if err := cmd.Start(); err != nil {
		cl.t.Fatal(err)
	}
	time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	cl.early++
}

// check reads the chains and the trail after a restart and compares them
// with the acknowledgements: each chain from where the previous check left
// it (whose head must still be there, unchanged), or from the start when
// full is set. It waits until the durable consumer has seen the signal of
// every checkpoint committed since, and returns each chain's head.
func (cl *crashLoop) check(ctx context.Context, coord *client.Client, full bool) map[string]string {
	t := cl.t
	if full {
		cl.chains, cl.contents, cl.trailAt, cl.created, cl.recoveries = map[string]crashAck{}, map[string]bool{}, "", 0, 0
	}
	heads := map[string]string{}
	listed := map[string]crashAck{} // id -> workspace and digest, new since the last check
	for _, w := range cl.workers {
		prev := cl.heads[w.id]
		if full {
			prev = ""
		}
		if prev != "" {
			cp, err := coord.GetCheckpoint(ctx, prev)
			if err != nil || cp.Digest.String() != cl.chains[prev].digest {
				t.Fatalf("head %s of %s checked in the previous round: %v, digest %s, was %s", prev, w.id, err, cp.Digest, cl.chains[prev].digest)
			}
		}
		after := prev
		for {
			page, err := coord.ListCheckpoints(ctx, w.id, after, 1000)
			if err != nil {
				t.Fatalf("ListCheckpoints(%s after %q): %v", w.id, after, err)
			}
			for _, cp := range page {
				if _, dup := cl.chains[cp.ID]; dup || cl.contents[cp.Payload.Content] {
					t.Errorf("checkpoint %s (%q) appears twice", cp.ID, cp.Payload.Content)
					cl.dups++
				}
				a := crashAck{ws: w.id, digest: cp.Digest.String()}
				cl.chains[cp.ID], listed[cp.ID], cl.contents[cp.Payload.Content] = a, a, true
				if cp.ParentID() != prev || cp.Workspace != w.id {
					t.Fatalf("chain of %s is not linear: %s has parent %q in %s, want %q", w.id, cp.ID, cp.ParentID(), cp.Workspace, prev)
				}
				prev = cp.ID
			}
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].ID
		}
		heads[w.id], cl.heads[w.id] = prev, prev
		if prev != "" {
			h, err := coord.Head(ctx, w.id, false)
			if err != nil || h.ID != prev {
				t.Fatalf("Head(%s) = %s, %v; the chain ends at %s", w.id, h.ID, err, prev)
			}
		}
	}
	cl.mu.Lock()
	for id, a := range cl.acked {
		if _, checked := cl.checkedAcks[id]; checked && !full {
			continue
		}
		got, ok := cl.chains[id]
		switch {
		case !ok || got.ws != a.ws:
			t.Errorf("acknowledged checkpoint %s of %s is lost", id, a.ws)
			cl.lost++
		case got.digest != a.digest:
			t.Errorf("checkpoint %s has digest %s, acknowledged %s", id, got.digest, a.digest)
			cl.lost++
		}
		cl.checkedAcks[id] = true
	}
	cl.mu.Unlock()
	kills, early := cl.kills, cl.early

	// The trail since the last check: one checkpoint_created per checkpoint,
	// and a recovery_completed that quarantined nothing after each kill.
	for e, err := range coord.Entries(ctx, client.TrailQuery{After: cl.trailAt}) {
		if err != nil {
			t.Fatalf("read the trail after %q: %v", cl.trailAt, err)
		}
		switch e.EventType {
		case trail.EventCheckpointCreated:
			cl.created++
		case trail.EventRecoveryCompleted:
			cl.recoveries++
			if !strings.Contains(string(e.Body), `"quarantined_entries":0`) {
				t.Errorf("recovery after a kill quarantined entries: %s", e.Body)
			}
		}
		cl.trailAt = e.ID
	}
	if cl.created != len(cl.chains) {
		t.Errorf("%d checkpoint_created entries for %d checkpoints", cl.created, len(cl.chains))
		cl.dups += max(0, cl.created-len(cl.chains))
	}
	if cl.recoveries < kills || cl.recoveries > kills+early {
		t.Errorf("%d recovery_completed after %d kills and %d kills while starting", cl.recoveries, kills, early)
	}
	v, err := coord.VerifyTrail(ctx, "")
	if err != nil || !v.OK {
		t.Fatalf("VerifyTrail = %+v, %v\nthe daemon's log:\n%s", v, err, cl.d.log.String())
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		cl.mu.Lock()
		var missing []string
		for id := range listed {
			if !cl.seen[id] {
				missing = append(missing, id)
			}
		}
		cl.mu.Unlock()
		if len(missing) == 0 {
			return heads
		}
		if time.Now().After(deadline) {
			t.Fatalf("the durable consumer has not seen the signals of %d committed checkpoints (e.g. %s)", len(missing), missing[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

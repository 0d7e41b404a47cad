package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// state is what a commit can change, read back from the database.
type state struct {
	objects, trailLen, outbox int
	chain                     checkpointchain.Chain
}

func snapshot(t *testing.T, e *Engine, ws string) state {
	t.Helper()
	settled(t, e) // it reads Badger itself
	var s state
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("cas/")})
		for it.Rewind(); it.Valid(); it.Next() {
			s.objects++
		}
		it.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.OutboxAfter("", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.outbox = len(out)
	s.trailLen = int(e.Trail().Len())
	chains, err := chainstore.LoadChains(e.db)
	if err != nil {
		t.Fatal(err)
	}
	s.chain = chains[ws]
	return s
}

// TestCrashConsistencyEveryStep interrupts a checkpoint commit at each of
// its steps up to its segment block's write, in turn. Each time, nothing of it exists afterwards, on disk or
// in memory: same objects, chain, trail and outbox, a verifying trail, and
// the same request then succeeds on the same parent. Reopening the data dir
// shows the same.
func TestCrashConsistencyEveryStep(t *testing.T) {
	// Learn the steps of one checkpoint commit.
	var steps []string
	probe := openTest(t)
	pw := newWorker(t, probe)
	first := checkpoint(t, probe, pw.ID, nil, "provisional")
	settled(t, probe)
	probe.cfg.failAt = func(step string) error { steps = append(steps, step); return nil }
	checkpoint(t, probe, pw.ID, &first.ID, "final")
	settled(t, probe) // the steps after the answer (its block is durable) are taken too
	probe.cfg.failAt = nil
	// No "workspace": a checkpoint does not rewrite its workspace's record
	// (TestCheckpoint_MeterAcrossRestart).
	for _, want := range []string{"object", "checkpoint_created", "signal_emitted", "signal_delivered", "outbox", "commit"} {
		if !contains(steps, want) {
			t.Fatalf("checkpoint commit steps %v lack %q", steps, want)
		}
	}

	for i, step := range steps {
		if step == "badger" {
			// Past the block's write the batch is durable (a start, or
			// degraded mode, redoes it): TestDegradedModeRedoesAWrittenBlock.
			continue
		}
		t.Run(fmt.Sprintf("%02d_%s", i, step), func(t *testing.T) {
			dir := t.TempDir()
			e, err := Open(Config{DataDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			w := newWorker(t, e)
			c1 := checkpoint(t, e, w.ID, nil, "provisional")
			before := snapshot(t, e, w.ID)

			n := 0
			settled(t, e)
			e.cfg.failAt = func(string) error {
				if n == i {
					n++
					return errors.New("disk on fire")
				}
				n++
				return nil
			}
			_, err = e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "final"))
			e.cfg.failAt = nil
			if Code(err) != wire.CodeUnavailable {
				t.Fatalf("CreateCheckpoint with a failure at %s: err = %v (code %q), want unavailable", step, err, Code(err))
			}
			// Degraded mode ends with system_degraded; nothing else changed.
			waitAdmitting(t, e)
			before.trailLen++
			if after := snapshot(t, e, w.ID); after != before {
				t.Fatalf("after a failure at %s: state %+v, want unchanged %+v but for system_degraded", step, after, before)
			}
			if last := globalTrail(t, e); last[len(last)-1].EventType != trail.EventSystemDegraded {
				t.Fatalf("after a failure at %s: last entry %s, want system_degraded", step, last[len(last)-1].EventType)
			}
			verify(t, e)

			// Memory was not touched either: the same parent is still the head.
			c2, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "final"))
			if err != nil {
				t.Fatalf("retry after a failure at %s: %v", step, err)
			}
			want := snapshot(t, e, w.ID)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e2, err := Open(Config{DataDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer e2.Close()
			if got := snapshot(t, e2, w.ID); got != want || got.chain.Head != c2.ID {
				t.Fatalf("after reopen: %+v, want %+v with head %s", got, want, c2.ID)
			}
			verify(t, e2)
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestCrashKill9 runs a writer in a child process, kills it with SIGKILL at
// a random moment, several times, and checks after each restart that every
// acknowledged checkpoint is present with its digest, nothing is
// duplicated, the chain is linear, every checkpoint's commit is whole
// (checkpoint_created, its signal entries and its outbox item all exist),
// the trail verifies and each restart wrote recovery_completed.
func TestCrashKill9(t *testing.T) {
	dir := t.TempDir()
	acked := map[string]string{} // id -> digest
	ws := ""
	for round := 0; round < 5; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "WACP_CRASH_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 5 + rand.IntN(40)
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "WS":
				ws = f[1]
			case len(f) == 3 && f[0] == "ACK":
				acked[f[1]] = f[2]
				n++
			}
			if n == killAfter {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		_ = cmd.Wait()
		if n < killAfter {
			t.Fatalf("round %d: child stopped after %d acks, before the kill", round, n)
		}
		checkAfterCrash(t, dir, ws, acked, round+1)
	}
	t.Logf("5 kills, %d acknowledged checkpoints, none lost", len(acked))
}

func checkAfterCrash(t *testing.T, dir, ws string, acked map[string]string, kills int) {
	t.Helper()
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer e.Close()
	verify(t, e)
	// Each kill is followed by one recovery, and a crash leaves nothing to
	// quarantine (a Badger transaction is whole or absent).
	recs := recoveries(t, e)
	if len(recs) != kills {
		t.Fatalf("%d recovery_completed after %d kills", len(recs), kills)
	}
	for _, r := range recs {
		if r["quarantined_entries"] != float64(0) {
			t.Fatalf("recovery after a kill quarantined %v entries", r["quarantined_entries"])
		}
	}
	list, err := e.ListCheckpoints(ctx, e.Root(), ws, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	prev := ""
	for _, cp := range list {
		if seen[cp.ID] {
			t.Fatalf("checkpoint %s appears twice", cp.ID)
		}
		seen[cp.ID] = true
		if cp.ParentID() != prev {
			t.Fatalf("checkpoint %s parent %q, want %q", cp.ID, cp.ParentID(), prev)
		}
		prev = cp.ID
	}
	for id, digest := range acked {
		cp, err := e.GetCheckpoint(ctx, e.Root(), id)
		if err != nil {
			t.Fatalf("acknowledged checkpoint %s lost: %v", id, err)
		}
		if cp.Digest.String() != digest {
			t.Fatalf("checkpoint %s digest %s, acknowledged %s", id, cp.Digest, digest)
		}
	}
	// Every commit is whole: one checkpoint_created and one outbox signal per checkpoint.
	created, _, err := e.Trail().Read(ctx, trail.Query{EventType: trail.EventCheckpointCreated, Limit: trail.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	outbox, err := e.OutboxAfter("", 0)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]int{}
	for _, o := range outbox {
		if o.Signal.Type == "checkpoint" {
			refs[*o.Signal.Ref]++
		}
	}
	if len(created) != len(list) {
		t.Fatalf("%d checkpoint_created entries for %d checkpoints", len(created), len(list))
	}
	for _, cp := range list {
		if refs[cp.ID] != 1 {
			t.Fatalf("checkpoint %s has %d outbox signals, want 1", cp.ID, refs[cp.ID])
		}
	}
}

// crashChild is the writer of TestCrashKill9, run by TestMain in the child
// process: it appends checkpoints forever, printing each acknowledgement.
func crashChild(dir string) error {
	e, err := Open(Config{DataDir: dir})
	if err != nil {
		return err
	}
	list, err := e.ListWorkspaces(ctx, e.Root(), e.Root(), "")
	if err != nil {
		return err
	}
	var ws string
	if len(list) > 0 {
		ws = list[0].ID
	} else {
		w, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`))
		if err != nil {
			return err
		}
		_, err = e.SendEnvelope(ctx, e.Root(), mustJSON(map[string]any{
			"to": w.ID, "type": "directive", "payload": map[string]any{"content": "write"},
		}))
		if err != nil {
			return err
		}
		ws = w.ID
	}
	fmt.Printf("WS %s\n", ws)
	e.mu.Lock()
	head := e.chains[ws].Head
	e.mu.Unlock()
	for {
		var parent *string
		if head != "" {
			parent = &head
		}
		cp, err := e.CreateCheckpoint(ctx, ws, cpReq(parent, "provisional"))
		if err != nil {
			return err
		}
		head = cp.ID
		fmt.Printf("ACK %s %s\n", cp.ID, cp.Digest)
	}
}

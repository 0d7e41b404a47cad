//go:build ignore

// streamcost measures what one replicated stream costs per message on the
// NATS cluster run.sh started, published the way a deployment's daemons
// publish signals into WACP_SIGNALS: -workspaces publishers at once, each
// with one message in flight, each message with a Nats-Msg-Id and the
// expected last sequence of its own subject (Nats-Expected-Last-Subject-
// Sequence). It makes a stream like WACP_SIGNALS (file storage, -replicas,
// a 2-minute window for repeats), publishes -n messages of the size of
// WACP_SIGNALS's average message when that stream has any (else -size),
// and prints the rate and the CPU time per message of every process in
// $WACP_PIDS (NAME=PID …, as run.sh sets it); it deletes its stream after.
//
//	scripts/deployment/run.sh -n 1 -- go run scripts/deployment/streamcost.go -n 20000
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	n := flag.Int("n", 20000, "messages in all")
	workspaces := flag.Int("workspaces", 8, "publishers at once, one subject and one message in flight each")
	size := flag.Int("size", 700, "message bytes when WACP_SIGNALS holds no message to take the size from")
	replicas := flag.Int("replicas", 3, "the stream's replicas")
	flag.Parse()
	if err := run(*n, *workspaces, *size, *replicas); err != nil {
		fmt.Fprintln(os.Stderr, "streamcost:", err)
		os.Exit(1)
	}
}

func run(n, workspaces, size, replicas int) error {
	ctx := context.Background()
	nc, err := nats.Connect(os.Getenv("WACP_URL"), nats.Token(os.Getenv("WACP_NATS_TOKEN")))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if s, err := js.Stream(ctx, "WACP_SIGNALS"); err == nil {
		if st := s.CachedInfo().State; st.Msgs > 0 {
			size = int(st.Bytes / st.Msgs)
			fmt.Printf("WACP_SIGNALS: %d messages, %d bytes each on average (with subject and headers)\n", st.Msgs, size)
		}
	}
	const name = "STREAMCOST"
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"streamcost.>"},
		Storage: jetstream.FileStorage, Replicas: replicas, Duplicates: 2 * time.Minute})
	if err != nil {
		return err
	}
	defer js.DeleteStream(ctx, name)
	// Publish once the stream has a leader and every replica is current:
	// a message sent while it has none may be stored by the retry after
	// nats.go's first attempt got no answer.
	var leader string
	for deadline := time.Now().Add(30 * time.Second); ; {
		info, err := s.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" && len(info.Cluster.Replicas) == replicas-1 &&
			!slices.ContainsFunc(info.Cluster.Replicas, func(p *jetstream.PeerInfo) bool { return !p.Current }) {
			leader = info.Cluster.Leader
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stream %s has no leader with current replicas after 30s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("stream %s: %d replicas, leader %s\n", name, replicas, leader)
	body := bytes.Repeat([]byte("x"), max(size-100, 1)) // about 100 bytes of subject and headers

	procs := strings.Fields(os.Getenv("WACP_PIDS"))
	var left atomic.Int64
	left.Store(int64(n))
	errs := make(chan error, workspaces)
	var wg sync.WaitGroup
	cpu0, start := cpuTimes(procs), time.Now()
	for w := range workspaces {
		wg.Go(func() {
			subj := fmt.Sprintf("streamcost.root.w%d.checkpoint", w)
			var last uint64
			for i := 0; left.Add(-1) >= 0; i++ {
				m := nats.NewMsg(subj)
				m.Data = body
				m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("w%d-%d", w, i))
				m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
				ack, err := js.PublishMsg(ctx, m)
				if err != nil {
					errs <- fmt.Errorf("%s message %d, expecting %d: %w", subj, i, last, err)
					return
				}
				last = ack.Sequence
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	cpu1 := cpuTimes(procs)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("%d messages of %d bytes from %d publishers in %v: %.0f/s\n", n, size, workspaces, el.Round(time.Millisecond), float64(n)/el.Seconds())
	for i, p := range procs {
		fmt.Printf("    cpu %-8s %v per message\n", p, ((cpu1[i] - cpu0[i]) / time.Duration(n)).Round(time.Microsecond))
	}
	return nil
}

// cpuTimes returns utime+stime of each NAME=PID of procs (0 if unknown),
// from /proc/<pid>/stat in USER_HZ (100) ticks.
func cpuTimes(procs []string) []time.Duration {
	out := make([]time.Duration, len(procs))
	for i, p := range procs {
		_, pid, _ := strings.Cut(p, "=")
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		out[i] = time.Duration(u+s) * 10 * time.Millisecond
	}
	return out
}

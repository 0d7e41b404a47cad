//go:build ignore

// relaytime times the relay hop of a deployment of several daemons: the
// coordinator's workspace.get of a child of the root that its home daemon
// owns (answered there) and of one another daemon owns (relayed by the
// home daemon to the owner's partition subject). Run it against a
// deployment that run.sh started, with its environment:
//
//	scripts/deployment/run.sh -n 2 -- go run scripts/deployment/relaytime.go -n 2000
//
// It creates children of the root (they go round the partitions) until it
// has one on each side and, for each, times -n workspace.get calls, one
// after another, printing p50, p99 and the rate, and the CPU time per call
// of every process in $WACP_PIDS (NAME=PID …, as run.sh sets it).
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
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/placement"
	"github.com/wacpd/wacpd/taxonomy"
)

func main() {
	n := flag.Int("n", 2000, "workspace.get calls per side")
	partitions := flag.Int("partitions", 8, "the deployment's partition count")
	home := flag.Int("own", 4, "the home daemon owns partitions 0 to this minus one (run.sh -n 2 -p 8: 4)")
	flag.Parse()
	if err := run(*n, *partitions, *home); err != nil {
		fmt.Fprintln(os.Stderr, "relaytime:", err)
		os.Exit(1)
	}
}

func run(n, partitions, home int) error {
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Options{}) // $WACP_URL, $WACP_TOKEN, $WACP_NATS_TOKEN
	if err != nil {
		return err
	}
	defer c.Close()
	var local, remote string
	for i := 0; i < partitions && (local == "" || remote == ""); i++ {
		created, err := c.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
		if err != nil {
			return fmt.Errorf("create child %d: %w", i, err)
		}
		id := created.Workspace.ID
		if placement.Partition(id, partitions) < home {
			local = id
		} else {
			remote = id
		}
	}
	if local == "" || remote == "" {
		return fmt.Errorf("no child on each side (home %q, other %q)", local, remote)
	}
	procs := strings.Fields(os.Getenv("WACP_PIDS"))
	for _, side := range []struct{ name, id string }{{"home daemon (no relay)", local}, {"other daemon (relayed)", remote}} {
		ds := make([]time.Duration, 0, n)
		cpu0 := cpuTimes(procs)
		start := time.Now()
		for range n {
			t0 := time.Now()
			if _, err := c.GetWorkspace(ctx, side.id); err != nil {
				return fmt.Errorf("get %s: %w", side.id, err)
			}
			ds = append(ds, time.Since(t0))
		}
		el := time.Since(start)
		slices.Sort(ds)
		fmt.Printf("%-24s n %d  p50 %v  p99 %v  %.0f/s\n", side.name, n, ds[n/2].Round(time.Microsecond),
			ds[n*99/100].Round(time.Microsecond), float64(n)/el.Seconds())
		cpu1 := cpuTimes(procs)
		for i, p := range procs {
			fmt.Printf("    cpu %-8s %v per call\n", p, ((cpu1[i] - cpu0[i]) / time.Duration(n)).Round(time.Microsecond))
		}
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

package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Process is another process on this machine whose CPU time over the load
// the report gives per checkpoint: with Config.URL, the daemons and NATS
// servers behind it.
type Process struct {
	Name string // a label for the report, such as "wacpd" or "nats n1"
	PID  int
}

// ParseProcess parses NAME=PID, or a bare PID (named after it), as the
// flag -pid gives it.
func ParseProcess(s string) (Process, error) {
	name, num, ok := strings.Cut(s, "=")
	if !ok {
		name, num = s, s
	}
	pid, err := strconv.Atoi(num)
	if err != nil || pid <= 0 || name == "" {
		return Process{}, fmt.Errorf("bench: process %q: want NAME=PID or PID", s)
	}
	return Process{Name: name, PID: pid}, nil
}

// ProcessCPU is what one Process used over the load.
type ProcessCPU struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// CPU is its user and system time over the load; PerCheckpoint is
	// CPU over the checkpoints acknowledged.
	CPU           time.Duration `json:"cpu_ns"`
	PerCheckpoint time.Duration `json:"cpu_per_checkpoint_ns"`
	// PeakRSS is its VmHWM at the end of the load: since it started, not
	// since the load did.
	PeakRSS int64 `json:"peak_rss_bytes"`
}

// userHZ is the unit of the times in /proc/<pid>/stat (USER_HZ, sysconf
// _SC_CLK_TCK): 100 on every architecture Linux builds Go for.
const userHZ = 100

// processTimes returns the user and system time pid used so far, all its
// threads, from /proc/<pid>/stat.
func processTimes(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStat(b)
}

// parseStat returns utime+stime of a /proc/<pid>/stat line. Its second
// field, the command in parentheses, may hold spaces and parentheses: the
// fields are counted from the last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command field in /proc/<pid>/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command in /proc/<pid>/stat, want 13 or more", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu time in /proc/<pid>/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// processesCPU returns the CPU time so far of each of ps, in order.
func processesCPU(ps []Process) ([]time.Duration, error) {
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		d, err := processTimes(p.PID)
		if err != nil {
			return nil, fmt.Errorf("bench: cpu of %s (pid %d): %w", p.Name, p.PID, err)
		}
		out[i] = d
	}
	return out, nil
}

// processesUsed returns what each of ps used between before and after,
// per checkpoint of n, with its peak RSS now.
func processesUsed(ps []Process, before, after []time.Duration, n int) []ProcessCPU {
	out := make([]ProcessCPU, len(ps))
	for i, p := range ps {
		d := after[i] - before[i]
		out[i] = ProcessCPU{Name: p.Name, PID: p.PID, CPU: d, PerCheckpoint: perOp(d, n)}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/status"); err == nil {
			out[i].PeakRSS = statusField(b, "VmHWM:")
		}
	}
	return out
}

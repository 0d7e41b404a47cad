package bench

import (
	"expvar"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// peakRSS returns this process's peak resident set size (VmHWM), in bytes,
// or 0 where /proc does not say.
func peakRSS() int64 { return selfStatus("VmHWM:") }

// currentMemory returns this process's resident set (VmRSS) and its
// anonymous part (RssAnon: not pages of mapped files, which the kernel can
// drop and read again), in bytes, or 0 where /proc does not say.
func currentMemory() (rss, anon int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	return statusField(b, "VmRSS:"), statusField(b, "RssAnon:")
}

// selfStatus returns the field name of /proc/self/status in bytes, or 0.
func selfStatus(name string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return statusField(b, name)
}

// statusField returns the line of a /proc/<pid>/status that starts with
// name (a size in kB, such as "VmHWM:") in bytes, or 0.
func statusField(status []byte, name string) int64 { return procField(status, name, "kB") << 10 }

// procField returns the number on the line of a /proc file b that starts
// with name, followed by unit (if any), or 0.
func procField(b []byte, name, unit string) int64 {
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, name); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), unit)), 10, 64)
			if err != nil {
				return 0
			}
			return n
		}
	}
	return 0
}

// resetPeakRSS resets VmHWM to the current RSS (Linux 4.0+) and reports
// whether it could.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// writtenBytes returns write_bytes of /proc/self/io: the bytes this
// process caused to be written to storage so far (0 where unknown).
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	return procField(b, "write_bytes:", "")
}

// compactedBytes returns what Badger's compactions in this process wrote
// so far, over all levels (its expvar badger_write_bytes_compaction).
func compactedBytes() int64 {
	m, ok := expvar.Get("badger_write_bytes_compaction").(*expvar.Map)
	if !ok {
		return 0
	}
	var n int64
	m.Do(func(kv expvar.KeyValue) {
		if v, ok := kv.Value.(*expvar.Int); ok {
			n += v.Value()
		}
	})
	return n
}

// badgerWrites returns the puts and bytes the Badger databases of this
// process were given so far (its expvars badger_put_num_user and
// badger_write_bytes_user: each key with its version, each value below the
// value-log threshold, and two bytes of meta).
func badgerWrites() (puts, bytes int64) {
	return expvarInt("badger_put_num_user"), expvarInt("badger_write_bytes_user")
}

// segmentWrites returns what the segment files were given so far, in this
// process (internal/seglog's counters): bytes written (compressed blocks
// with their headers) and the values' and redo records' bytes before compression.
func segmentWrites() (bytes, raw int64) {
	return expvarInt("wacpd_segment_write_bytes"), expvarInt("wacpd_segment_raw_bytes")
}

// expvarInt is the value of the expvar.Int name, 0 if there is none.
func expvarInt(name string) int64 {
	if v, ok := expvar.Get(name).(*expvar.Int); ok {
		return v.Value()
	}
	return 0
}

// processCPU returns the CPU time this process used so far, user and
// system, all threads (getrusage).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAllocs returns the objects and bytes this process allocated on
// the heap so far (runtime/metrics: cumulative, no stop of the world).
func heapAllocs() (objects, bytes uint64) {
	ms := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(ms)
	if ms[0].Value.Kind() != metrics.KindUint64 || ms[1].Value.Kind() != metrics.KindUint64 {
		return 0, 0
	}
	return ms[0].Value.Uint64(), ms[1].Value.Uint64()
}

// perOp returns d over n, or 0 when n is 0.
func perOp(d time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

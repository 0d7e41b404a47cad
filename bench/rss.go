package bench

import (
	"bufio"
	"bytes"
	"expvar"
	"os"
	"strconv"
	"strings"
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
func statusField(status []byte, name string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), name)
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
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
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
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

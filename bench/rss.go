package bench

import (
	"bufio"
	"bytes"
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

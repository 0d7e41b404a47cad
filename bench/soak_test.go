package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWindows(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	// Out of order, as the workers' slices are merged: the windows follow
	// the ends. The first window ends at 400 ms, the second at 1400 ms; the
	// seventh ack starts a window that never fills.
	acks := []ack{
		{at(1400), 9 * time.Millisecond}, {at(100), time.Millisecond}, {at(400), 3 * time.Millisecond},
		{at(1000), 7 * time.Millisecond}, {at(200), 2 * time.Millisecond}, {at(1200), 8 * time.Millisecond},
		{at(1500), time.Second},
	}
	samples := []sample{{at(0), 1, 1, 10, 100, 5}, {at(500), 2, 1, 20, 150, 7}, {at(1400), 3, 2, 30, 400, 17}}
	ws := windows(acks, 3, samples, start)
	if len(ws) != 2 {
		t.Fatalf("windows = %+v, want 2", ws)
	}
	want := []Window{
		{From: 0, To: 3, Elapsed: 400 * time.Millisecond, Rate: 7.5, RSS: 2, RSSAnon: 1, DiskBytes: 20, Written: 50, Compacted: 2,
			Acks: Latency{N: 3, P50: 2 * time.Millisecond, P99: 3 * time.Millisecond, Max: 3 * time.Millisecond}},
		{From: 3, To: 6, Elapsed: time.Second, Rate: 3, RSS: 3, RSSAnon: 2, DiskBytes: 30, Written: 250, Compacted: 10,
			Acks: Latency{N: 3, P50: 8 * time.Millisecond, P99: 9 * time.Millisecond, Max: 9 * time.Millisecond}},
	}
	for i := range want {
		if ws[i] != want[i] {
			t.Errorf("window %d = %+v, want %+v", i, ws[i], want[i])
		}
	}
	g := growth(ws)
	if g == nil || g.Rate != 0.4 || g.P99 != 3 {
		t.Errorf("growth = %+v, want rate 0.4, p99 3", g)
	}
	if g := growth(ws[:1]); g != nil {
		t.Errorf("growth of one window = %+v, want nil", g)
	}
	if ws := windows(acks, 0, nil, start); ws != nil {
		t.Errorf("windows of size 0 = %+v", ws)
	}
}

func TestPeakAnon(t *testing.T) {
	t0 := time.Unix(0, 0)
	if got := peakAnon([]sample{{t0, 9, 3, 0, 0, 0}, {t0, 8, 5, 0, 0, 0}, {t0, 9, 4, 0, 0, 0}}); got != 5 {
		t.Errorf("peakAnon = %d, want 5", got)
	}
	if got := peakAnon(nil); got != 0 {
		t.Errorf("peakAnon(nil) = %d, want 0", got)
	}
}

// TestWrittenBytes: the counter of bytes written grows by what this
// process writes and syncs to a file.
func TestWrittenBytes(t *testing.T) {
	before := writtenBytes()
	if before == 0 {
		if _, err := os.Stat("/proc/self/io"); err != nil {
			t.Skip("no /proc/self/io here")
		}
	}
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil && st.Type == 0x01021994 {
		t.Skip("the temporary directory is in memory (tmpfs): nothing reaches storage")
	}
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := writtenBytes() - before; got < 1<<20 {
		t.Errorf("writtenBytes grew by %d after writing 1 MiB, want at least that", got)
	}
}

func TestCurrentMemory(t *testing.T) {
	rss, anon := currentMemory()
	if rss <= 0 {
		t.Skipf("currentMemory() = %d, %d: no /proc here", rss, anon)
	}
	if anon <= 0 || anon > rss {
		t.Errorf("currentMemory() = rss %d, anon %d; want 0 < anon <= rss", rss, anon)
	}
}

func TestSampleAfter(t *testing.T) {
	t0 := time.Unix(0, 0)
	s := []sample{{t0, 1, 1, 0, 0, 0}, {t0.Add(time.Second), 2, 1, 0, 0, 0}}
	for _, tt := range []struct {
		at   time.Duration
		want int64
	}{{-time.Second, 1}, {0, 1}, {time.Millisecond, 2}, {time.Hour, 2}} {
		if got, ok := sampleAfter(s, t0.Add(tt.at)); !ok || got.rss != tt.want {
			t.Errorf("sampleAfter(%v) = %+v, %v; want rss %d", tt.at, got, ok, tt.want)
		}
	}
	if _, ok := sampleAfter(nil, t0); ok {
		t.Error("sampleAfter(nil) reports a sample")
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "f"), bytes.Repeat([]byte{1}, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	// A sparse file of 1 GiB occupies almost nothing.
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n, err := diskUsage(dir)
	if err != nil || n < 64<<10 || n >= 1<<20 {
		t.Errorf("diskUsage = %d, %v; want the 64 KiB file's blocks, not the sparse file's size", n, err)
	}
	if _, err := diskUsage(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("diskUsage of a missing dir = %v, want 0 and no error (it vanished)", err)
	}
}

func TestKeyPrefix(t *testing.T) {
	for k, want := range map[string]string{
		"t/g/\x00\x00\x00\x00\x00\x00\x00\x01": "t/g/",
		"t/h/w/ws-1":                           "t/h/",
		"t/c":                                  "t/",
		"cas/ab/cd":                            "cas/",
		"w/0196-ws/x":                          "w/",
		"m/root":                               "m/",
		"plain":                                "plain",
	} {
		if got := keyPrefix([]byte(k)); got != want {
			t.Errorf("keyPrefix(%q) = %q, want %q", k, got, want)
		}
	}
}

func TestTargets(t *testing.T) {
	r := withBounds()
	r.Clients = 64
	r.PeakRSS = 300 << 20
	r.Signals.P99 = 10 * time.Millisecond
	r.Growth = &Growth{Rate: 0.9, P99: 2}
	r.After = &AfterReport{Restart: time.Second, Store: StoreReport{BytesPerCheckpoint: 2500, KeysPerCheckpoint: 12}}
	r.Targets = r.targets()
	want := map[string]bool{
		"64 clients: throughput / hand-built rate":        false, // 0.5
		"64 clients: signal p99 (ms)":                     true,
		"64 clients: peak RSS, daemon and agents (MiB)":   false,
		"soak: throughput of the last window / the first": true,
		"soak: ack p99 of the last window / the first":    false,
		"bytes on disk per checkpoint, after compaction":  true,
		"keys per checkpoint":                             false,
		"restart to serving (s)":                          true,
		"trail verify right after the load (entries/s)":   false, // 30,000
	}
	for _, tg := range r.Targets {
		met, ok := want[tg.Row]
		if !ok {
			t.Errorf("unexpected row %+v", tg)
			continue
		}
		if tg.Met != met {
			t.Errorf("row %q = %+v, want met %v", tg.Row, tg, met)
		}
		delete(want, tg.Row)
	}
	for row := range want {
		t.Errorf("row %q missing", row)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "keys per checkpoint") || !strings.Contains(out, "NO") {
		t.Errorf("WriteText lacks the targets:\n%s", out)
	}

	one := withBounds()
	one.Clients = 1
	rows := map[string]bool{}
	for _, tg := range one.targets() {
		rows[tg.Row] = tg.Met
	}
	if met, ok := rows["1 client: ack p50 / hand-built ack p50"]; !ok || met {
		t.Errorf("1-client rows = %v, want the ack ratio (2.0, not met)", rows)
	}
	if _, ok := rows["64 clients: peak RSS, daemon and agents (MiB)"]; ok {
		t.Errorf("1-client rows include a 64-client row: %v", rows)
	}
}

// TestTargetsOutOfReach: with the volume bound measured, the rows it
// bounds carry its figure, and say out of reach where it misses too.
func TestTargetsOutOfReach(t *testing.T) {
	r := withBounds() // the daemon: 250/s at 4 ms; hand-built 1000/s at 1 ms
	r.Clients = 64
	r.PeakRSS = 300 << 20
	r.Signals.P99 = 30 * time.Millisecond
	r.Bounds.HandBuilt.SignalLatency.P99 = 25 * time.Millisecond
	r.Bounds.Volume = &BoundRun{Acks: Latency{N: 900, P50: 1100 * time.Microsecond}, Rate: 1200,
		SignalLatency: Latency{P99: 5 * time.Millisecond}}
	r.Bounds.Shape = &Shape{Puts: 10, Value: 600}
	r.Ratios = r.ratios()
	r.Verify.Bound = 1e6
	rows := map[string]Target{}
	for _, tg := range r.targets() {
		rows[tg.Row] = tg
	}
	for row, want := range map[string]struct {
		bound float64
		out   bool
	}{
		"64 clients: throughput / hand-built rate":      {1.2, true},  // 1200/1000 < 1.5
		"64 clients: signal p99 (ms)":                   {25, true},   // >= 20
		"trail verify right after the load (entries/s)": {1e6, false}, // the read bound reaches 300,000
		"64 clients: peak RSS, daemon and agents (MiB)": {0, false},   // no bound
	} {
		got, ok := rows[row]
		if !ok || got.Met || got.Bound != want.bound || got.OutOfReach != want.out {
			t.Errorf("row %q = %+v, want not met, bound %v, out of reach %v", row, got, want.bound, want.out)
		}
	}
	var buf bytes.Buffer
	r.Targets = r.targets()
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "1.20 (out of reach)") || !strings.Contains(out, "volume rate / hand-built rate    1.20") ||
		!strings.Contains(out, "storing 10 keys of 600 bytes") {
		t.Errorf("WriteText lacks the volume bound:\n%s", out)
	}

	one := withBounds()
	one.Clients = 1
	one.Bounds.Volume = &BoundRun{Acks: Latency{P50: 1100 * time.Microsecond}, Rate: 1200}
	one.Ratios = one.ratios()
	for _, tg := range one.targets() {
		if tg.Row == "1 client: ack p50 / hand-built ack p50" && (tg.Bound != 1.1 || tg.OutOfReach) {
			t.Errorf("row %+v, want bound 1.1 (within 1.2: not out of reach)", tg)
		}
	}
}

// TestTargetsPreferTheContractBound: with both measured, the ratio rows
// take the contract bound's figure.
func TestTargetsPreferTheContractBound(t *testing.T) {
	r := withBounds()
	r.Clients = 64
	r.Bounds.Volume = &BoundRun{Acks: Latency{P50: time.Millisecond}, Rate: 1700}
	r.Bounds.Contract = &BoundRun{Acks: Latency{P50: time.Millisecond}, Rate: 1300}
	r.Ratios = r.ratios()
	for _, tg := range r.targets() {
		if tg.Row == "64 clients: throughput / hand-built rate" && (tg.Bound != 1.3 || !tg.OutOfReach) {
			t.Errorf("row %+v, want the contract bound's 1.3, out of reach", tg)
		}
	}
}

// TestSoakRowsTakeTheBoundsGrowth: the soak rows carry the contract
// bound's own growth when the bounds ran as long as the load.
func TestSoakRowsTakeTheBoundsGrowth(t *testing.T) {
	r := withBounds()
	r.Clients = 64
	r.Growth = &Growth{Rate: 0.4, P99: 5}
	r.Bounds.Volume = &BoundRun{Growth: &Growth{Rate: 0.9, P99: 1.2}}
	r.Bounds.Contract = &BoundRun{Growth: &Growth{Rate: 0.6, P99: 2}}
	want := map[string]float64{
		"soak: throughput of the last window / the first": 0.6,
		"soak: ack p99 of the last window / the first":    2,
	}
	for _, tg := range r.targets() {
		if b, ok := want[tg.Row]; ok {
			if tg.Bound != b || !tg.OutOfReach {
				t.Errorf("row %+v, want the contract bound's %v, out of reach", tg, b)
			}
			delete(want, tg.Row)
		}
	}
	if len(want) != 0 {
		t.Errorf("rows missing: %v", want)
	}
}

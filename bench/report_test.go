package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	r := &Report{
		Daemon: "in-process", Dir: "/tmp/x", Clients: 2, Size: 1024, Elapsed: 2 * time.Second,
		Acks: Latency{N: 1000, P50: 2 * time.Millisecond, P99: 5 * time.Millisecond, Max: 9 * time.Millisecond},
		Rate: 500, CPU: 350 * time.Microsecond, Allocs: 392, AllocBytes: 61785,
		Signals: Latency{N: 1000, P50: 3 * time.Millisecond, P99: 6 * time.Millisecond, Max: 7 * time.Millisecond},
		Verify:  VerifyReport{OK: true, Entries: 3000, Elapsed: 100 * time.Millisecond, Rate: 30000},
		PeakRSS: 64 << 20, RSSScope: "this process",
		Machine: Machine{Before: 540 * time.Millisecond, After: 712 * time.Millisecond,
			DiskBefore: SyncProbe{P50: 1200 * time.Microsecond, Max: 3400 * time.Microsecond}, DiskAfter: SyncProbe{P50: 1100 * time.Microsecond, Max: 250 * time.Millisecond}},
		Floor: FloorReport{
			Writes:  Latency{N: 4000, P50: 500 * time.Microsecond, P99: time.Millisecond, Max: 2 * time.Millisecond},
			Elapsed: 2 * time.Second, Rate: 2000,
		},
	}
	r.Ratios = r.ratios()
	return r
}

func TestRatios(t *testing.T) {
	got := sampleReport().Ratios
	if want := (Ratios{AckP50: 4, Rate: 0.25}); got != want {
		t.Errorf("ratios() = %+v, want %+v", got, want)
	}
	if got := (&Report{Rate: 10}).ratios(); got != (Ratios{}) {
		t.Errorf("ratios() without a floor = %+v, want zero", got)
	}
}

// withBounds is sampleReport with both bounds measured.
func withBounds() *Report {
	r := sampleReport()
	r.Bounds = &Bounds{
		Transport: BoundRun{Acks: Latency{N: 9000, P50: 200 * time.Microsecond}, Elapsed: time.Second, Rate: 8000, Signals: 9000},
		HandBuilt: BoundRun{Acks: Latency{N: 900, P50: time.Millisecond}, Elapsed: time.Second, Rate: 1000, Signals: 900},
	}
	r.Ratios = r.ratios()
	return r
}

func TestRatiosWithBounds(t *testing.T) {
	want := Ratios{AckP50: 4, Rate: 0.25, TransportRate: 4, HandBuiltAckP50: 2, HandBuiltRate: 0.5,
		RateOverTransport: 0.0625, RateOverHandBuilt: 0.5, AckP50OverHandBuilt: 2}
	if got := withBounds().Ratios; got != want {
		t.Errorf("ratios() = %+v, want %+v", got, want)
	}
}

func TestWriteTextBounds(t *testing.T) {
	var buf bytes.Buffer
	if err := withBounds().WriteText(&buf); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	out := buf.String()
	for _, want := range []string{
		"transport    8000 requests/s",
		"hand-built   1000 requests/s",
		"hand-built ack p50 / floor p50   2.00",
		"throughput / transport rate      0.06",
		"throughput / hand-built rate     0.50",
		"ack p50 / hand-built ack p50     2.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteText output lacks %q:\n%s", want, out)
		}
	}
	if plain := new(bytes.Buffer); sampleReport().WriteText(plain) == nil && strings.Contains(plain.String(), "transport") {
		t.Errorf("WriteText without bounds mentions them:\n%s", plain)
	}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().WriteJSON(&buf); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("WriteJSON wrote invalid JSON %s: %v", buf.Bytes(), err)
	}
	ack := m["ack"].(map[string]any)
	ratios := m["ratios"].(map[string]any)
	floor := m["floor"].(map[string]any)
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"clients", m["clients"], 2.0},
		{"checkpoints_per_s", m["checkpoints_per_s"], 500.0},
		{"ack.n", ack["n"], 1000.0},
		{"ack.p50_ns", ack["p50_ns"], 2e6},
		{"floor.writes_per_s", floor["writes_per_s"], 2000.0},
		{"ratios.ack_p50_over_floor_p50", ratios["ack_p50_over_floor_p50"], 4.0},
		{"ratios.throughput_over_floor_rate", ratios["throughput_over_floor_rate"], 0.25},
		{"verify.entries_per_s", m["verify"].(map[string]any)["entries_per_s"], 30000.0},
		{"peak_rss_bytes", m["peak_rss_bytes"], float64(64 << 20)},
		{"machine.before_ns", m["machine"].(map[string]any)["before_ns"], 540e6},
		{"machine.after_ns", m["machine"].(map[string]any)["after_ns"], 712e6},
		{"machine.disk_after.max_ns", m["machine"].(map[string]any)["disk_after"].(map[string]any)["max_ns"], 250e6},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("JSON %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || !reflect.DeepEqual(back, *sampleReport()) {
		t.Errorf("JSON round trip = %+v, %v; want %+v", back, err, *sampleReport())
	}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().WriteText(&buf); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	out := buf.String()
	for _, want := range []string{
		"2 client(s), 1024-byte payload, daemon in-process",
		"throughput   500 checkpoints/s in 2s",
		"cpu          350µs per checkpoint (this process: daemon and agents)",
		"allocs       392 objects and 61785 bytes allocated per checkpoint (the same)",
		"verify       3000 entries in 100ms: 30000 entries/s (ok)",
		"peak RSS     64.0 MiB (this process)",
		"machine      a fixed computation took 540ms before the run and 712ms after it",
		"disk         a write of 4 KiB and its sync took 1.2ms (longest 3.4ms) before the run and 1.1ms (longest 250ms) after it",
		"ack p50 / floor p50       4.00",
		"throughput / floor rate   0.25",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteText output lacks %q:\n%s", want, out)
		}
	}
	rows := map[string]string{
		"checkpoint ack":         "1000 2ms 5ms 9ms",
		"signal (commit->watch)": "1000 3ms 6ms 7ms",
		"floor (bare badger)":    "4000 500µs 1ms 2ms",
	}
	for _, line := range strings.Split(out, "\n") {
		for name, want := range rows {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), name); ok {
				if got := strings.Join(strings.Fields(rest), " "); got != want {
					t.Errorf("WriteText row %q = %q, want %q", name, got, want)
				}
				delete(rows, name)
			}
		}
	}
	for name := range rows {
		t.Errorf("WriteText output lacks the row %q:\n%s", name, out)
	}
}

func TestDur(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "-"},
		{1234567, "1.235ms"},
		{999, "1µs"},
		{1500 * time.Millisecond, "1.5s"},
	}
	for _, tt := range tests {
		if got := dur(tt.in); got != tt.want {
			t.Errorf("dur(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSyncProbe: the probe syncs real writes (each takes some time, the
// longest at least the median), leaves nothing behind, and says why when
// it cannot write.
func TestSyncProbe(t *testing.T) {
	dir := t.TempDir()
	p, err := syncProbe(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.P50 <= 0 || p.Max < p.P50 {
		t.Errorf("syncProbe = %+v, want 0 < P50 <= Max", p)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("syncProbe left %d files in its dir", len(left))
	}
	if _, err := syncProbe(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "disk probe") {
		t.Errorf("syncProbe of a missing dir: %v, want a disk probe error", err)
	}
}

// TestWaitQuiet: the wait ends at the second computation in a row within
// the limit (one over it starts the count again), fails once the wait is
// over, and ends with its context.
func TestWaitQuiet(t *testing.T) {
	was := quietPause
	quietPause = 0
	defer func() { quietPause = was }()
	seq := func(ds ...time.Duration) (func() time.Duration, *int) {
		n := 0
		return func() time.Duration {
			d := ds[min(n, len(ds)-1)]
			n++
			return d
		}, &n
	}
	ms := time.Millisecond
	measure, calls := seq(600*ms, 500*ms, 600*ms, 500*ms, 540*ms, 900*ms)
	if last, _, err := waitQuiet(context.Background(), 550*ms, time.Hour, measure); err != nil || *calls != 5 || last != 540*ms {
		t.Errorf("waitQuiet = %v, %v after %d computations, want 540ms, nil after 5", last, err, *calls)
	}
	measure, _ = seq(600 * ms)
	if _, _, err := waitQuiet(context.Background(), 550*ms, time.Nanosecond, measure); err == nil || !strings.Contains(err.Error(), "not quiet within") {
		t.Errorf("waitQuiet on a busy machine = %v, want a not-quiet error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	measure, _ = seq(600 * ms)
	if _, _, err := waitQuiet(ctx, 550*ms, time.Hour, measure); err != context.Canceled {
		t.Errorf("waitQuiet with an ended context = %v, want %v", err, context.Canceled)
	}
	r := sampleReport()
	r.Machine.Waited = 95 * time.Second
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "the run waited 1m35s for a quiet machine") {
		t.Errorf("WriteText with a wait: %v\n%s", err, buf.String())
	}
}

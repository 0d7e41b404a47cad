package bench

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/wacpd/wacpd/client"
)

// TestRun runs the whole harness against an in-process daemon and checks
// that the report's counts agree with each other. It never looks at
// timings.
func TestRun(t *testing.T) {
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace, client.EnvNATSToken} {
		t.Setenv(v, "")
	}
	tests := []struct {
		name       string
		clients, n int
		bounds     bool
	}{
		{"one client", 1, 20, false},
		{"three clients share n", 3, 20, false},
		{"bounds", 2, 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg := Config{Dir: t.TempDir(), Clients: tt.clients, N: tt.n, FloorN: 10, Size: 256, Bounds: tt.bounds, Window: 5}
			rep, err := Run(ctx, cfg)
			if err != nil {
				t.Fatalf("Run(%+v) = %v", cfg, err)
			}
			if rep.Clients != tt.clients || rep.Size != 256 || rep.Daemon != "in-process" {
				t.Errorf("report clients, size, daemon = %d, %d, %q; want %d, 256, in-process",
					rep.Clients, rep.Size, rep.Daemon, tt.clients)
			}
			if rep.Acks.N != tt.n {
				t.Errorf("acks = %d, want %d", rep.Acks.N, tt.n)
			}
			if rep.CPU <= 0 {
				t.Errorf("cpu per checkpoint = %s, want > 0", rep.CPU)
			}
			// A checkpoint's request alone is an object of its payload's
			// size or more, at the agent and at the daemon.
			if rep.Allocs < 2 || rep.AllocBytes < 2*256 {
				t.Errorf("allocations per checkpoint = %.0f objects, %.0f bytes; want at least 2 and 512", rep.Allocs, rep.AllocBytes)
			}
			if rep.Signals.N != rep.Acks.N {
				t.Errorf("signals = %d, want one per checkpoint (%d)", rep.Signals.N, rep.Acks.N)
			}
			// Each checkpoint writes checkpoint_created, signal_emitted and
			// signal_delivered.
			if !rep.Verify.OK || rep.Verify.Entries < uint64(3*tt.n) {
				t.Errorf("verify = %+v, want ok over at least %d entries", rep.Verify, 3*tt.n)
			}
			if rep.Floor.Writes.N != 10 {
				t.Errorf("floor writes = %d, want 10", rep.Floor.Writes.N)
			}
			if !tt.bounds && rep.Bounds != nil {
				t.Errorf("bounds = %+v without Config.Bounds", rep.Bounds)
			}
			if tt.bounds {
				if rep.Bounds == nil {
					t.Fatal("no bounds with Config.Bounds")
				}
				for name, b := range map[string]BoundRun{"transport": rep.Bounds.Transport, "hand-built": rep.Bounds.HandBuilt} {
					if b.Acks.N != tt.n || b.Signals != tt.n || b.SignalLatency.N != tt.n || b.SignalLatency.P50 <= 0 || b.CPU <= 0 {
						t.Errorf("%s bound: %d requests, %d signals, %d signal latencies (p50 %s), cpu %s each; want %d of each and some cpu",
							name, b.Acks.N, b.Signals, b.SignalLatency.N, b.SignalLatency.P50, b.CPU, tt.n)
					}
				}
				if got := rep.Bounds.Transport.Stored; got != 0 {
					t.Errorf("transport bound stored %d, want 0", got)
				}
				if got := rep.Bounds.HandBuilt.Stored; got != tt.n {
					t.Errorf("hand-built bound stored %d, want %d", got, tt.n)
				}
				// A checkpoint writes its object, chain records, three
				// trail entries and their indexes, the global head; the
				// values (the payload's bytes among them) go to the
				// segment files, Badger keeps keys and pointers.
				w := rep.Written
				if w == nil || w.PutsPerCheckpoint < 6 || w.BytesPerCheckpoint < 256 || w.RawPerCheckpoint < 1024 {
					t.Errorf("written = %+v, want at least 6 keys and 256 bytes per checkpoint to Badger, a payload's bytes to the segment files", w)
				}
				v, shape := rep.Bounds.Volume, rep.Bounds.Shape
				if v == nil || shape == nil {
					t.Fatalf("no volume bound with Config.Bounds and the in-process daemon")
				}
				if want := shapeOf(w); *shape != *want || v.Acks.N != tt.n || v.Stored != tt.n || v.Signals != tt.n {
					t.Errorf("volume bound %+v, shape %+v; want shape %+v and %d requests stored and signalled", v, shape, want, tt.n)
				}
				if c := rep.Bounds.Contract; c == nil || c.Acks.N != tt.n || c.Stored != tt.n || c.Signals != tt.n {
					t.Fatalf("contract bound %+v; want %d requests stored and signalled", c, tt.n)
				}
				if rep.Bounds.Transport.PeakRSS <= 0 {
					t.Errorf("transport bound's peak RSS = %d, want > 0", rep.Bounds.Transport.PeakRSS)
				}
				// Each bound ran n requests: windows of 5, as the load.
				for name, b := range map[string]*BoundRun{"transport": &rep.Bounds.Transport, "hand-built": &rep.Bounds.HandBuilt,
					"volume": rep.Bounds.Volume, "contract": rep.Bounds.Contract} {
					if len(b.Windows) != tt.n/5 || b.Growth == nil || b.Windows[0].Acks.N != 5 {
						t.Errorf("%s bound: windows %+v, growth %+v; want %d windows of 5 and a growth", name, b.Windows, b.Growth, tt.n/5)
					}
				}
				if q := rep.Ratios; q.RateOverVolume <= 0 || q.VolumeRateOverHandBuilt <= 0 || q.RateOverContract <= 0 || q.ContractRateOverHandBuilt <= 0 {
					t.Errorf("ratios %+v lack the volume and contract bounds'", rep.Ratios)
				}
			}
			if len(rep.Windows) != tt.n/5 || rep.Growth == nil {
				t.Errorf("windows = %+v, growth %+v; want %d windows of 5 and a growth", rep.Windows, rep.Growth, tt.n/5)
			}
			for i, w := range rep.Windows {
				if w.From != 5*i || w.To != 5*i+5 || w.Acks.N != 5 || w.DiskBytes <= 0 {
					t.Errorf("window %d = %+v, want checkpoints %d-%d and the data dir's size", i, w, 5*i, 5*i+5)
				}
			}
			if a := rep.After; a == nil {
				t.Error("no restart and store figures with the in-process daemon")
			} else {
				s := a.Store
				// Every checkpoint has its object, and its three trail
				// entries are in the global keys, a batch's under one.
				if a.Restart <= 0 || s.Checkpoints != tt.n || s.KeysByPrefix["cas/"] < int64(tt.n) ||
					s.KeysByPrefix["t/g/"] == 0 || s.KeysByPrefix["t/g/"] >= int64(3*tt.n) ||
					s.Bytes <= 0 || s.BytesPerCheckpoint != float64(s.Bytes)/float64(tt.n) {
					t.Errorf("after = %+v", a)
				}
			}
			if len(rep.Targets) == 0 {
				t.Error("no target rows")
			}
			if rep.PeakRSS < 0 {
				t.Errorf("peak RSS = %d, want >= 0", rep.PeakRSS)
			}
			if _, err := os.Stat(rep.Dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat(%s) after Run = %v, want not exist", rep.Dir, err)
			}
		})
	}
}

// TestRunURL runs the load against a running daemon (-url), here one in
// this process, with this process as a watched one: what only the
// in-process daemon gives (what it wrote, the restart, the store) is left
// out, and the watched processes' CPU is in.
func TestRunURL(t *testing.T) {
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace, client.EnvNATSToken} {
		t.Setenv(v, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := startDaemon(ctx, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()
	cfg := Config{URL: d.url, Token: d.token, Dir: t.TempDir(), Clients: 2, N: 10, FloorN: 5, Size: 256,
		Processes: []Process{{Name: "self", PID: os.Getpid()}}}
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run(%+v) = %v", cfg, err)
	}
	if rep.Daemon != d.url || rep.Acks.N != 10 || rep.Signals.N != 10 || !rep.Verify.OK {
		t.Errorf("report daemon %q, acks %d, signals %d, verify %+v; want %q, 10, 10, ok", rep.Daemon, rep.Acks.N, rep.Signals.N, rep.Verify, d.url)
	}
	if rep.Written != nil || rep.After != nil {
		t.Errorf("written %+v, after %+v with -url; want none", rep.Written, rep.After)
	}
	// Its CPU time is counted in ticks of 10 ms, which 10 checkpoints may
	// not fill: only the shape is checked.
	if len(rep.Processes) != 1 || rep.Processes[0].PID != os.Getpid() || rep.Processes[0].CPU < 0 ||
		rep.Processes[0].PerCheckpoint != rep.Processes[0].CPU/10 || rep.Processes[0].PeakRSS <= 0 {
		t.Errorf("processes = %+v, want this one, a tenth of its cpu per checkpoint and its peak RSS", rep.Processes)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"negative clients", Config{Clients: -1}},
		{"negative size", Config{Size: -1}},
		{"negative duration", Config{Duration: -time.Second}},
		{"negative n", Config{N: -1}},
		{"process without pid", Config{Processes: []Process{{Name: "wacpd"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tt.cfg); err == nil {
				t.Errorf("Run(%+v) = nil error, want one", tt.cfg)
			}
		})
	}
}

func TestShapeOf(t *testing.T) {
	if s := shapeOf(nil); s != nil {
		t.Errorf("shapeOf(nil) = %+v", s)
	}
	// 10.4 puts of 660 bytes each on average: 10 keys of 660*10.4/10 less
	// the key, its version and the meta.
	got := shapeOf(&Written{PutsPerCheckpoint: 10.4, BytesPerCheckpoint: 6864})
	if want := (Shape{Puts: 10, Value: 6864/10 - volumeKeyLen - 8 - 2}); got == nil || *got != want {
		t.Errorf("shapeOf = %+v, want %+v", got, want)
	}
}

// TestContractBoundAuthenticates: the contract bound's server refuses a
// connection without one of its tokens, and a requester's account reaches
// only its own subject.
func TestContractBoundAuthenticates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs, err := newBoundMessages(100)
	if err != nil {
		t.Fatal(err)
	}
	run, err := runBound(ctx, t.TempDir(), 2, msgs, 0, 10, boundSpec{store: storeGrouped, shape: Shape{Puts: 2, Value: 50}, contract: true})
	if err != nil {
		t.Fatal(err)
	}
	if run.Acks.N != 10 || run.Stored != 10 || run.Signals != 10 {
		t.Errorf("contract bound answered %d, stored %d, signalled %d; want 10 of each", run.Acks.N, run.Stored, run.Signals)
	}
	if (boundAuth{}).Check(fakeClient{token: "someone"}) {
		t.Error("boundAuth took an unknown token")
	}
}

// fakeClient is a server.ClientAuthentication with only a token.
type fakeClient struct {
	server.ClientAuthentication
	token string
}

func (f fakeClient) GetOpts() *server.ClientOpts { return &server.ClientOpts{Token: f.token} }

// runStoring runs a storing bound of shape for 40 requests from 4
// requesters in a new directory, checks that each was answered, stored and
// signalled, and returns the directory.
func runStoring(t *testing.T, store boundStore, shape Shape) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs, err := newBoundMessages(300)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run, err := runBound(ctx, dir, 4, msgs, 0, 40, boundSpec{store: store, shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	if run.Acks.N != 40 || run.Stored != 40 || run.Signals != 40 {
		t.Errorf("bound answered %d, stored %d, signalled %d; want 40 of each", run.Acks.N, run.Stored, run.Signals)
	}
	return dir
}

// storedValues returns the key and value sizes of every key the bound in
// dir left in its database.
func storedValues(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "db")).WithLogger(nil).WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]int64{}
	if err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			out[string(it.Item().KeyCopy(nil))] = it.Item().ValueSize()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVolumeBoundWritesItsShape: the volume bound stores, for every
// request, Shape.Puts keys of Shape.Value bytes, and answers each.
func TestVolumeBoundWritesItsShape(t *testing.T) {
	shape := Shape{Puts: 3, Value: 700}
	vals := storedValues(t, runStoring(t, storeGrouped, shape))
	if len(vals) != 40*shape.Puts {
		t.Errorf("volume bound stored %d keys, want %d", len(vals), 40*shape.Puts)
	}
	for k, n := range vals {
		if n != int64(shape.Value) || len(k) != volumeKeyLen {
			t.Errorf("key %x: %d-byte key, %d-byte value; want %d and %d", k, len(k), n, volumeKeyLen, shape.Value)
		}
	}
}

// TestSegmentedProbeWritesPointers: the segmented probe appends every
// value to its segment file and keeps a 12-byte pointer per key in Badger.
func TestSegmentedProbeWritesPointers(t *testing.T) {
	shape := Shape{Puts: 3, Value: 100}
	dir := runStoring(t, storeSegmented, shape)
	st, err := os.Stat(filepath.Join(dir, "segment"))
	if err != nil || st.Size() != int64(40*shape.Puts*shape.Value) {
		t.Fatalf("segment: %v, %v; want %d bytes", st, err, 40*shape.Puts*shape.Value)
	}
	vals := storedValues(t, dir)
	if len(vals) != 40*shape.Puts {
		t.Errorf("probe stored %d keys, want %d", len(vals), 40*shape.Puts)
	}
	for k, n := range vals {
		if n != 12 {
			t.Errorf("key %x: %d-byte value, want a 12-byte pointer", k, n)
		}
	}
}

// TestVolumeBoundWritesTheSegmentBytes: with a shape that has segment
// bytes, the volume bound appends that many bytes per request to its
// segment file and keeps its Badger values as they are.
func TestVolumeBoundWritesTheSegmentBytes(t *testing.T) {
	shape := Shape{Puts: 2, Value: 50, Segment: 300}
	dir := runStoring(t, storeGrouped, shape)
	st, err := os.Stat(filepath.Join(dir, "segment"))
	if err != nil || st.Size() != int64(40*shape.Segment) {
		t.Fatalf("segment: %v, %v; want %d bytes", st, err, 40*shape.Segment)
	}
	vals := storedValues(t, dir)
	if len(vals) != 40*shape.Puts {
		t.Errorf("bound stored %d keys, want %d", len(vals), 40*shape.Puts)
	}
	for k, n := range vals {
		if n != int64(shape.Value) {
			t.Fatalf("key %q holds %d bytes, want %d", k, n, shape.Value)
		}
	}
}

package bench

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// A long load is reported per window of Config.Window acknowledged
// checkpoints, to show whether the cost per checkpoint grows with the
// store: each window's rate and latencies, and the memory and disk at its
// end.

// Window is the checkpoints acknowledged from the From-th (excluded) to the
// To-th (included), in the order their acknowledgements arrived.
type Window struct {
	From    int           `json:"from"`
	To      int           `json:"to"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"checkpoints_per_s"`
	Acks    Latency       `json:"ack"`
	// RSS is this process's resident set at the window's end (the first
	// sample after it), RSSAnon its anonymous part (the rest is pages of
	// mapped files: Badger's tables, logs and value log); DiskBytes is the
	// in-process daemon's data dir then (0 with -url).
	RSS       int64 `json:"rss_bytes"`
	RSSAnon   int64 `json:"rss_anon_bytes"`
	DiskBytes int64 `json:"disk_bytes"`
	// Written is what this process wrote to storage during the window
	// (write_bytes of /proc/self/io: with the in-process daemon, its logs,
	// tables and compactions, the stream's files); Compacted is what
	// Badger's compactions wrote in this process (its expvar
	// badger_write_bytes_compaction, all levels): how the cost of keeping
	// the store grows with it.
	Written   int64 `json:"written_bytes"`
	Compacted int64 `json:"compacted_bytes"`
}

// Growth compares the last window with the first.
type Growth struct {
	Rate float64 `json:"rate_last_over_first"`
	P99  float64 `json:"ack_p99_last_over_first"`
}

// ack is one acknowledged checkpoint: when the reply came, and how long
// it took.
type ack struct {
	end time.Time
	d   time.Duration
}

// sample is the process's memory and the daemon's disk at one moment,
// and the bytes written so far (counters: Window takes differences).
type sample struct {
	at                 time.Time
	rss, anon, disk    int64
	written, compacted int64
}

// sampler samples every interval until stopped. It is the only writer of
// samples until stop returns.
type sampler struct {
	dir     string // "" for no disk figure
	quit    chan struct{}
	done    chan struct{}
	samples []sample
}

// sampleEvery is the sampler's interval: fine enough for windows of many
// thousand checkpoints, and a walk of the data dir (a few hundred files)
// costs little beside the load.
const sampleEvery = 250 * time.Millisecond

func startSampler(dir string) *sampler {
	s := &sampler{dir: dir, quit: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *sampler) run() {
	defer close(s.done)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		s.take()
		select {
		case <-s.quit:
			s.take()
			return
		case <-t.C:
		}
	}
}

func (s *sampler) take() {
	x := sample{at: time.Now()}
	x.rss, x.anon = currentMemory()
	x.written, x.compacted = writtenBytes(), compactedBytes()
	if s.dir != "" {
		x.disk, _ = diskUsage(s.dir)
	}
	s.samples = append(s.samples, x)
}

// stop ends the sampling and returns the samples.
func (s *sampler) stop() []sample {
	close(s.quit)
	<-s.done
	return s.samples
}

// windows cuts acks (in any order) into windows of size, in the order of
// their ends; a last partial window is left out. start is the load's start.
func windows(acks []ack, size int, samples []sample, start time.Time) []Window {
	if size <= 0 {
		return nil
	}
	acks = slices.Clone(acks)
	slices.SortFunc(acks, func(a, b ack) int { return a.end.Compare(b.end) })
	var out []Window
	from := start
	prev, _ := sampleAfter(samples, start)
	for i := 0; i+size <= len(acks); i += size {
		w := acks[i : i+size]
		end := w[len(w)-1].end
		ds := make([]time.Duration, len(w))
		for j, a := range w {
			ds[j] = a.d
		}
		win := Window{From: i, To: i + size, Elapsed: end.Sub(from), Acks: Summarize(ds)}
		win.Rate = rate(size, win.Elapsed)
		if x, ok := sampleAfter(samples, end); ok {
			win.RSS, win.RSSAnon, win.DiskBytes = x.rss, x.anon, x.disk
			win.Written, win.Compacted = x.written-prev.written, x.compacted-prev.compacted
			prev = x
		}
		out = append(out, win)
		from = end
	}
	return out
}

// sampleAfter returns the first sample taken at or after t, or the last.
func sampleAfter(samples []sample, t time.Time) (sample, bool) {
	if len(samples) == 0 {
		return sample{}, false
	}
	i, _ := slices.BinarySearchFunc(samples, t, func(s sample, t time.Time) int { return s.at.Compare(t) })
	return samples[min(i, len(samples)-1)], true
}

// growth compares the last of ws with the first; nil for fewer than two.
func growth(ws []Window) *Growth {
	if len(ws) < 2 {
		return nil
	}
	first, last := ws[0], ws[len(ws)-1]
	return &Growth{Rate: ratio(last.Rate, first.Rate), P99: ratio(float64(last.Acks.P99), float64(first.Acks.P99))}
}

// diskUsage returns the bytes the files under dir occupy on disk (their
// allocated blocks, so preallocated and sparse files count what they use).
// Files that vanish during the walk (Badger replaces tables as it
// compacts) are skipped.
func diskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

// peakAnon returns the largest anonymous resident set of samples.
func peakAnon(samples []sample) int64 {
	var m int64
	for _, x := range samples {
		m = max(m, x.anon)
	}
	return m
}

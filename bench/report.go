package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the result of one Run. Durations are nanoseconds in JSON.
type Report struct {
	Daemon string `json:"daemon"` // "in-process" or the -url
	// MemoryLimit is the in-process daemon's memory budget (0: none).
	MemoryLimit int64         `json:"memory_limit_bytes,omitempty"`
	Dir         string        `json:"dir"` // where the daemon's data (in-process) and the floor live
	Clients     int           `json:"clients"`
	Size        int           `json:"size_bytes"`
	Elapsed     time.Duration `json:"elapsed_ns"` // of the load phase
	Acks        Latency       `json:"ack"`        // Acks.N is the number of checkpoints acknowledged
	Rate        float64       `json:"checkpoints_per_s"`
	// CPU is this process's CPU time per checkpoint over the load: with the
	// in-process daemon, daemon and agents. On a CPU-bound machine it
	// moves less from run to run than the rate.
	CPU time.Duration `json:"cpu_per_checkpoint_ns"`
	// Processes are the CPU time over the load of Config.Processes (with
	// -url: the daemons and NATS servers), each also per checkpoint.
	Processes []ProcessCPU `json:"processes,omitempty"`
	// Allocs and AllocBytes are what this process allocated on the heap
	// per checkpoint over the load (same scope as CPU): the garbage
	// collector's work follows them, and unlike the CPU time they hardly
	// move from run to run, so they show a change of the allocations
	// on the hot path at once.
	Allocs     float64      `json:"allocs_per_checkpoint"`
	AllocBytes float64      `json:"alloc_bytes_per_checkpoint"`
	Signals    Latency      `json:"signal"` // Signals.N is the number received of those checkpoints
	Verify     VerifyReport `json:"verify"`
	PeakRSS    int64        `json:"peak_rss_bytes"`
	// PeakRSSAnon is the largest anonymous part of the resident set
	// sampled during the load (every 250 ms): the rest of PeakRSS is
	// pages of mapped files, which the kernel can drop.
	PeakRSSAnon int64       `json:"peak_rss_anon_bytes"`
	RSSScope    string      `json:"peak_rss_scope"`
	Floor       FloorReport `json:"floor"`
	Bounds      *Bounds     `json:"bounds,omitempty"` // with -bounds
	// Written is what the in-process daemon gave Badger per checkpoint
	// during the load.
	Written *Written `json:"written,omitempty"`
	Ratios  Ratios   `json:"ratios"`
	// Windows cut the load into windows of Config.Window checkpoints
	// (none for a load shorter than two); Growth compares the last with
	// the first.
	Windows []Window `json:"windows,omitempty"`
	Growth  *Growth  `json:"growth,omitempty"`
	// After is the restart and the store, with the in-process daemon.
	After   *AfterReport `json:"after,omitempty"`
	Targets []Target     `json:"targets"`
	// Machine is how busy the machine was, before the run and after it.
	Machine Machine `json:"machine"`
}

// VerifyReport is the coordinator's verification of the whole trail.
type VerifyReport struct {
	OK      bool          `json:"ok"`
	Entries uint64        `json:"entries"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"entries_per_s"`
	// Bound is the entries over the time to read the store once (with
	// the in-process daemon: StoreReport.Read, after the daemon stopped);
	// OverBound is Rate / Bound.
	Bound     float64 `json:"read_bound_entries_per_s,omitempty"`
	OverBound float64 `json:"rate_over_read_bound,omitempty"`
}

// Written is what the daemon gave Badger per checkpoint: keys set or
// deleted (with Badger's own transaction markers) and their bytes, as
// Badger counts them (key with its version, value, two bytes of meta); and
// what it gave its segment files: the blocks' bytes (compressed, with
// their headers) and the values' and redo records' bytes before compression.
type Written struct {
	PutsPerCheckpoint    float64 `json:"puts_per_checkpoint"`
	BytesPerCheckpoint   float64 `json:"bytes_per_checkpoint"`
	SegmentPerCheckpoint float64 `json:"segment_bytes_per_checkpoint"`
	RawPerCheckpoint     float64 `json:"segment_raw_bytes_per_checkpoint"`
}

// FloorReport is the bare Badger baseline: single writer, one synchronous
// transaction per write of Size bytes.
type FloorReport struct {
	Writes  Latency       `json:"write"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"writes_per_s"`
}

// Ratios compare the daemon with the floor and, when measured, the bounds
// with the floor and the daemon with the bounds.
type Ratios struct {
	AckP50 float64 `json:"ack_p50_over_floor_p50"`
	Rate   float64 `json:"throughput_over_floor_rate"`

	TransportRate     float64 `json:"transport_rate_over_floor_rate,omitempty"`
	HandBuiltAckP50   float64 `json:"hand_built_ack_p50_over_floor_p50,omitempty"`
	HandBuiltRate     float64 `json:"hand_built_rate_over_floor_rate,omitempty"`
	RateOverTransport float64 `json:"throughput_over_transport_rate,omitempty"`
	RateOverHandBuilt float64 `json:"throughput_over_hand_built_rate,omitempty"`
	// AckP50OverHandBuilt is the daemon's ack p50 over the hand-built
	// bound's.
	AckP50OverHandBuilt float64 `json:"ack_p50_over_hand_built_ack_p50,omitempty"`
	// With the volume bound: its rate and ack p50 over the hand-built
	// bound's (what the targets would be for a server that only stores
	// what the daemon stores), and the daemon's over the volume bound's.
	VolumeRateOverHandBuilt   float64 `json:"volume_rate_over_hand_built_rate,omitempty"`
	VolumeAckP50OverHandBuilt float64 `json:"volume_ack_p50_over_hand_built_ack_p50,omitempty"`
	RateOverVolume            float64 `json:"throughput_over_volume_rate,omitempty"`
	AckP50OverVolume          float64 `json:"ack_p50_over_volume_ack_p50,omitempty"`
	// The same with the contract bound.
	ContractRateOverHandBuilt   float64 `json:"contract_rate_over_hand_built_rate,omitempty"`
	ContractAckP50OverHandBuilt float64 `json:"contract_ack_p50_over_hand_built_ack_p50,omitempty"`
	RateOverContract            float64 `json:"throughput_over_contract_rate,omitempty"`
	AckP50OverContract          float64 `json:"ack_p50_over_contract_ack_p50,omitempty"`
}

// ratios returns the report's ratios.
func (r *Report) ratios() Ratios {
	q := Ratios{
		AckP50: ratio(float64(r.Acks.P50), float64(r.Floor.Writes.P50)),
		Rate:   ratio(r.Rate, r.Floor.Rate),
	}
	if b := r.Bounds; b != nil {
		q.TransportRate = ratio(b.Transport.Rate, r.Floor.Rate)
		q.HandBuiltAckP50 = ratio(float64(b.HandBuilt.Acks.P50), float64(r.Floor.Writes.P50))
		q.HandBuiltRate = ratio(b.HandBuilt.Rate, r.Floor.Rate)
		q.RateOverTransport = ratio(r.Rate, b.Transport.Rate)
		q.RateOverHandBuilt = ratio(r.Rate, b.HandBuilt.Rate)
		q.AckP50OverHandBuilt = ratio(float64(r.Acks.P50), float64(b.HandBuilt.Acks.P50))
		if v := b.Volume; v != nil {
			q.VolumeRateOverHandBuilt, q.VolumeAckP50OverHandBuilt, q.RateOverVolume, q.AckP50OverVolume = r.against(v, b.HandBuilt)
		}
		if c := b.Contract; c != nil {
			q.ContractRateOverHandBuilt, q.ContractAckP50OverHandBuilt, q.RateOverContract, q.AckP50OverContract = r.against(c, b.HandBuilt)
		}
	}
	return q
}

// against returns bound's rate and ack p50 over the hand-built bound's,
// then the daemon's rate and ack p50 over bound's.
func (r *Report) against(bound *BoundRun, hand BoundRun) (rate, ackP50, rateOver, ackP50Over float64) {
	return ratio(bound.Rate, hand.Rate), ratio(float64(bound.Acks.P50), float64(hand.Acks.P50)),
		ratio(r.Rate, bound.Rate), ratio(float64(r.Acks.P50), float64(bound.Acks.P50))
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r as a short table for people.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	limit := ""
	if r.MemoryLimit > 0 {
		limit = fmt.Sprintf(" (-memory-limit-mb %d)", r.MemoryLimit>>20)
	}
	fmt.Fprintf(tw, "wacp-bench: %d client(s), %d-byte payload, daemon %s%s, dir %s\n\n",
		r.Clients, r.Size, r.Daemon, limit, r.Dir)
	fmt.Fprintf(tw, "%-22s\tn\tp50\tp99\tmax\t\n", "")
	row := func(name string, l Latency) {
		fmt.Fprintf(tw, "%-22s\t%d\t%s\t%s\t%s\t\n", name, l.N, dur(l.P50), dur(l.P99), dur(l.Max))
	}
	row("checkpoint ack", r.Acks)
	row("signal (commit->watch)", r.Signals)
	row("floor (bare badger)", r.Floor.Writes)
	if b := r.Bounds; b != nil {
		row("bound: transport", b.Transport.Acks)
		row("  its signals", b.Transport.SignalLatency)
		row("bound: hand-built", b.HandBuilt.Acks)
		row("  its signals", b.HandBuilt.SignalLatency)
		if v := b.Volume; v != nil {
			row("bound: volume", v.Acks)
			row("  its signals", v.SignalLatency)
		}
		if c := b.Contract; c != nil {
			row("bound: contract", c.Acks)
			row("  its signals", c.SignalLatency)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verified := "ok"
	if !r.Verify.OK {
		verified = "FAILED"
	}
	fmt.Fprintf(w, "\nthroughput   %.0f checkpoints/s in %s\n", r.Rate, dur(r.Elapsed))
	if r.CPU > 0 {
		fmt.Fprintf(w, "cpu          %s per checkpoint (%s)\n", dur(r.CPU), cpuScope(r.Daemon))
	}
	if len(r.Processes) > 0 {
		total := r.CPU
		for _, p := range r.Processes {
			fmt.Fprintf(w, "  cpu of %s (pid %d): %s per checkpoint, %s in all; peak RSS %.1f MiB since it started\n",
				p.Name, p.PID, dur(p.PerCheckpoint), dur(p.CPU), float64(p.PeakRSS)/(1<<20))
			total += p.PerCheckpoint
		}
		fmt.Fprintf(w, "  cpu in all: %s per checkpoint (this process and those above)\n", dur(total))
	}
	if r.Allocs > 0 {
		fmt.Fprintf(w, "allocs       %.0f objects and %.0f bytes allocated per checkpoint (the same)\n", r.Allocs, r.AllocBytes)
	}
	fmt.Fprintf(w, "floor rate   %.0f writes/s\n", r.Floor.Rate)
	if b := r.Bounds; b != nil {
		fmt.Fprintf(w, "transport    %.0f requests/s, cpu %s each, peak RSS %.0f MiB (bound: NATS request/reply and a JetStream signal each, nothing stored)\n",
			b.Transport.Rate, dur(b.Transport.CPU), float64(b.Transport.PeakRSS)/(1<<20))
		fmt.Fprintf(w, "hand-built   %.0f requests/s, cpu %s each (the same and one synchronous Badger transaction each)\n",
			b.HandBuilt.Rate, dur(b.HandBuilt.CPU))
		if v, sh := b.Volume, b.Shape; v != nil && sh != nil {
			fmt.Fprintf(w, "volume       %.0f requests/s, cpu %s each (the hand-built with group commit, storing %d keys of %d bytes each: the daemon's writes per checkpoint)\n",
				v.Rate, dur(v.CPU), sh.Puts, sh.Value)
		}
		if c := b.Contract; c != nil {
			fmt.Fprintf(w, "contract     %.0f requests/s, cpu %s each (the volume bound with the wire contract's transport: token auth and permissions, micro, Nats-Msg-Id, acknowledged signals, three feed messages)\n",
				c.Rate, dur(c.CPU))
		}
	}
	if x := r.Written; x != nil {
		fmt.Fprintf(w, "written      %.1f keys and %.0f bytes per checkpoint given to Badger during the load; %.0f bytes to the segment files (%.0f before compression)\n",
			x.PutsPerCheckpoint, x.BytesPerCheckpoint, x.SegmentPerCheckpoint, x.RawPerCheckpoint)
	}
	fmt.Fprintf(w, "verify       %d entries in %s: %.0f entries/s (%s)\n",
		r.Verify.Entries, dur(r.Verify.Elapsed), r.Verify.Rate, verified)
	if r.Verify.Bound > 0 {
		fmt.Fprintf(w, "read bound   %.0f entries/s (every block of the store read and decompressed once: Badger's tables on all cores, then the segment files); verify / bound %.2f\n",
			r.Verify.Bound, r.Verify.OverBound)
	}
	fmt.Fprintf(w, "peak RSS     %.1f MiB (%s); anonymous %.1f MiB, the rest mapped files\n",
		float64(r.PeakRSS)/(1<<20), r.RSSScope, float64(r.PeakRSSAnon)/(1<<20))
	if m := r.Machine; m.Before > 0 {
		fmt.Fprintf(w, "machine      a fixed computation took %s before the run and %s after it (longer when another load shares the cores)\n",
			m.Before.Round(time.Millisecond), m.After.Round(time.Millisecond))
		if m.Waited > 0 {
			fmt.Fprintf(w, "             the run waited %s for a quiet machine (-quiet-below)\n", m.Waited.Round(time.Second))
		}
		fmt.Fprintf(w, "disk         a write of 4 KiB and its sync took %s (longest %s) before the run and %s (longest %s) after it (median of %d; a stall of the disk shows in the longest)\n",
			m.DiskBefore.P50.Round(10*time.Microsecond), m.DiskBefore.Max.Round(10*time.Microsecond),
			m.DiskAfter.P50.Round(10*time.Microsecond), m.DiskAfter.Max.Round(10*time.Microsecond), syncProbes)
	}
	fmt.Fprintf(w, "\nack p50 / floor p50       %.2f\n", r.Ratios.AckP50)
	_, err := fmt.Fprintf(w, "throughput / floor rate   %.2f\n", r.Ratios.Rate)
	if r.Bounds != nil && err == nil {
		q := r.Ratios
		fmt.Fprintf(w, "hand-built ack p50 / floor p50   %.2f\n", q.HandBuiltAckP50)
		fmt.Fprintf(w, "transport rate / floor rate      %.2f\n", q.TransportRate)
		fmt.Fprintf(w, "hand-built rate / floor rate     %.2f\n", q.HandBuiltRate)
		fmt.Fprintf(w, "throughput / transport rate      %.2f\n", q.RateOverTransport)
		fmt.Fprintf(w, "throughput / hand-built rate     %.2f\n", q.RateOverHandBuilt)
		_, err = fmt.Fprintf(w, "ack p50 / hand-built ack p50     %.2f\n", q.AckP50OverHandBuilt)
		if r.Bounds.Volume != nil && err == nil {
			fmt.Fprintf(w, "volume rate / hand-built rate    %.2f\n", q.VolumeRateOverHandBuilt)
			fmt.Fprintf(w, "volume ack p50 / hand-built p50  %.2f\n", q.VolumeAckP50OverHandBuilt)
			fmt.Fprintf(w, "throughput / volume rate         %.2f\n", q.RateOverVolume)
			_, err = fmt.Fprintf(w, "ack p50 / volume ack p50         %.2f\n", q.AckP50OverVolume)
		}
		if r.Bounds.Contract != nil && err == nil {
			fmt.Fprintf(w, "contract rate / hand-built rate  %.2f\n", q.ContractRateOverHandBuilt)
			fmt.Fprintf(w, "contract ack p50 / hand-built    %.2f\n", q.ContractAckP50OverHandBuilt)
			fmt.Fprintf(w, "throughput / contract rate       %.2f\n", q.RateOverContract)
			_, err = fmt.Fprintf(w, "ack p50 / contract ack p50       %.2f\n", q.AckP50OverContract)
		}
	}
	if err != nil {
		return err
	}
	if err := r.writeSoak(w); err != nil {
		return err
	}
	return r.writeTargets(w)
}

// cpuScope says whose CPU time Report.CPU counts.
func cpuScope(daemon string) string {
	if daemon == "in-process" {
		return "this process: daemon and agents"
	}
	return "this process: the agents only"
}

// writeSoak writes the windows, the restart and the store, if measured.
func (r *Report) writeSoak(w io.Writer) error {
	if len(r.Windows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\nwindow\tcheckpoints/s\tack p50\tack p99\tRSS MiB\tanon MiB\tdisk MiB\twritten KB/cp\tcompacted KB/cp\t\n")
		for _, x := range r.Windows {
			n := float64(x.To-x.From) * 1000
			fmt.Fprintf(tw, "%d-%d\t%.0f\t%s\t%s\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t\n", x.From, x.To, x.Rate, dur(x.Acks.P50), dur(x.Acks.P99),
				float64(x.RSS)/(1<<20), float64(x.RSSAnon)/(1<<20), float64(x.DiskBytes)/(1<<20), float64(x.Written)/n, float64(x.Compacted)/n)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if g := r.Growth; g != nil {
		fmt.Fprintf(w, "last window / first: throughput %.2f, ack p99 %.2f\n", g.Rate, g.P99)
	}
	if b := r.Bounds; b != nil {
		for _, x := range []struct {
			name string
			run  *BoundRun
		}{{"transport", &b.Transport}, {"hand-built", &b.HandBuilt}, {"volume", b.Volume}, {"contract", b.Contract}} {
			if x.run == nil || x.run.Growth == nil {
				continue
			}
			rates := make([]string, len(x.run.Windows))
			for i, win := range x.run.Windows {
				rates[i] = fmt.Sprintf("%.0f", win.Rate)
			}
			fmt.Fprintf(w, "%s bound, per window: %s requests/s; last / first: throughput %.2f, ack p99 %.2f\n",
				x.name, strings.Join(rates, ", "), x.run.Growth.Rate, x.run.Growth.P99)
		}
	}
	if a := r.After; a != nil {
		s := a.Store
		fmt.Fprintf(w, "\nrestart      %s to the first answer\n", dur(a.Restart))
		fmt.Fprintf(w, "store        %d checkpoints: %.0f bytes and %.1f keys each after compaction (%.1f MiB, %.1f MiB before; compaction %s)\n",
			s.Checkpoints, s.BytesPerCheckpoint, s.KeysPerCheckpoint, float64(s.Bytes)/(1<<20), float64(s.BytesBefore)/(1<<20), dur(s.Compaction))
		keys := make([]string, 0, len(s.KeysByPrefix))
		for k := range s.KeysByPrefix {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(w, "keys         ")
		for _, k := range keys {
			fmt.Fprintf(w, " %s %d", k, s.KeysByPrefix[k])
		}
		fmt.Fprintln(w)
	}
	return nil
}

// writeTargets writes the target rows this run measured.
func (r *Report) writeTargets(w io.Writer) error {
	if len(r.Targets) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\ntarget\tnow\t\tmet\tbound\n")
	for _, t := range r.Targets {
		met, bound := "yes", ""
		if !t.Met {
			met = "NO"
		}
		if t.Bound > 0 {
			bound = num(t.Bound)
			if t.OutOfReach {
				bound += " (out of reach)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\n", t.Row, num(t.Value), t.Op, num(t.Limit), met, bound)
	}
	return tw.Flush()
}

// num formats a figure with as many decimals as its size needs.
func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// dur formats d to microseconds, or "-" for zero.
func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	if d >= time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}

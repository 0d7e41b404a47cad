package bench

// Target is one row of the performance targets (issue 13, docs/performance.md)
// as this run measured it. A row appears only where the run measures it: the
// ratios to the hand-built bound need -bounds, the one-client and the
// 64-client rows their number of clients, the soak rows two windows or more,
// the store and restart rows the in-process daemon.
type Target struct {
	Row   string  `json:"row"`
	Value float64 `json:"value"`
	Op    string  `json:"op"` // "<", "<=" or ">="
	Limit float64 `json:"target"`
	Met   bool    `json:"met"`
	// Bound, where the run measured one for the row, is the row's value
	// for a bound, and OutOfReach says the bound misses the target too. The
	// ratio rows take the contract bound's (a server of the wire contract
	// that only stores what the daemon stores; the volume bound's without
	// it), the signal rows the hand-built bound's signal p99, the RSS row
	// the transport bound's peak (the same agents and NATS, nothing
	// stored), the soak rows the contract (or volume) bound's own last
	// window over its first, the verify the read bound.
	Bound      float64 `json:"bound,omitempty"`
	OutOfReach bool    `json:"out_of_reach,omitempty"`
}

// bounded returns t with bound, if positive, and whether it misses the
// target.
func (t Target) bounded(bound float64) Target {
	if bound > 0 {
		t.Bound, t.OutOfReach = bound, !target(t.Row, bound, t.Op, t.Limit).Met
	}
	return t
}

// ManyClients is the number of clients from which the 64-client rows
// apply.
const ManyClients = 64

func target(row string, value float64, op string, limit float64) Target {
	t := Target{Row: row, Value: value, Op: op, Limit: limit}
	switch op {
	case "<":
		t.Met = value < limit
	case "<=":
		t.Met = value <= limit
	case ">=":
		t.Met = value >= limit
	}
	return t
}

// targets returns the rows r measures.
func (r *Report) targets() []Target {
	var out []Target
	ms := func(v float64) float64 { return v / 1e6 }
	one, many := r.Clients == 1, r.Clients >= ManyClients
	// The signal rows' bound is the hand-built service's own signal p99:
	// a faster server (the volume bound) signals in bursts, so its p99 is
	// no bound on a slower one's.
	var signalBound float64
	if r.Bounds != nil {
		signalBound = ms(float64(r.Bounds.HandBuilt.SignalLatency.P99))
		// The contract bound, where measured, is the tighter one.
		rateBound, p50Bound := r.Ratios.VolumeRateOverHandBuilt, r.Ratios.VolumeAckP50OverHandBuilt
		if r.Bounds.Contract != nil {
			rateBound, p50Bound = r.Ratios.ContractRateOverHandBuilt, r.Ratios.ContractAckP50OverHandBuilt
		}
		if many {
			out = append(out, target("64 clients: throughput / hand-built rate", r.Ratios.RateOverHandBuilt, ">=", 1.5).
				bounded(rateBound))
		}
		if one {
			out = append(out, target("1 client: ack p50 / hand-built ack p50", r.Ratios.AckP50OverHandBuilt, "<=", 1.2).
				bounded(p50Bound))
		}
	}
	if one {
		out = append(out, target("1 client: signal p99 (ms)", ms(float64(r.Signals.P99)), "<", 2).bounded(signalBound))
	}
	if many {
		out = append(out, target("64 clients: signal p99 (ms)", ms(float64(r.Signals.P99)), "<", 20).bounded(signalBound))
		if r.Daemon == "in-process" {
			// The RSS row's bound is the transport bound's: the same agents
			// and NATS, nothing stored.
			var rssBound float64
			if r.Bounds != nil {
				rssBound = float64(r.Bounds.Transport.PeakRSS) / (1 << 20)
			}
			out = append(out, target("64 clients: peak RSS, daemon and agents (MiB)", float64(r.PeakRSS)/(1<<20), "<=", 256).bounded(rssBound))
		}
	}
	if g := r.Growth; g != nil {
		// The soak rows' bound is the contract bound's own soak (or the
		// volume bound's), when the bounds ran as long.
		var rateBound, p99Bound float64
		if b := r.Bounds; b != nil {
			for _, run := range []*BoundRun{b.Contract, b.Volume} {
				if run != nil && run.Growth != nil {
					rateBound, p99Bound = run.Growth.Rate, run.Growth.P99
					break
				}
			}
		}
		out = append(out,
			target("soak: throughput of the last window / the first", g.Rate, ">=", 0.8).bounded(rateBound),
			target("soak: ack p99 of the last window / the first", g.P99, "<=", 1.5).bounded(p99Bound))
	}
	if a := r.After; a != nil {
		if r.Size == 1024 {
			out = append(out,
				target("bytes on disk per checkpoint, after compaction", a.Store.BytesPerCheckpoint, "<=", 3000),
				target("keys per checkpoint", a.Store.KeysPerCheckpoint, "<=", 10))
		}
		out = append(out, target("restart to serving (s)", a.Restart.Seconds(), "<=", 2))
	}
	if r.Verify.Entries > 0 {
		out = append(out, target("trail verify right after the load (entries/s)", r.Verify.Rate, ">=", 300_000).bounded(r.Verify.Bound))
	}
	return out
}

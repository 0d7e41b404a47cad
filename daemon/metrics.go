package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/wacpd/wacpd/runtime"
)

// metrics holds the daemon's Prometheus collectors, on a registry of its own
// (never the process-wide default). It exists only when Config.MetricsAddr
// is set; every method is a no-op on a nil *metrics, so the code that
// reports to it costs one nil check when metrics are off.
type metrics struct {
	reg        *prometheus.Registry
	commitDur  prometheus.Histogram
	batchOps   prometheus.Histogram
	outbox     prometheus.Gauge
	published  prometheus.Counter
	rejections *prometheus.CounterVec // by reason
	requests   *prometheus.CounterVec // by endpoint and code
}

var _ runtime.CommitObserver = (*metrics)(nil)

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		commitDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wacpd_commit_duration_seconds",
			Help:    "Time from the start of a commit to its durable write, for successful commits.",
			Buckets: []float64{.0001, .0002, .0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1},
		}),
		batchOps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wacpd_commit_batch_ops",
			Help:    "Operations sharing one durable write.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 .. 256
		}),
		outbox: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wacpd_outbox_depth",
			Help: "Committed signals not yet confirmed by the WACP_SIGNALS stream.",
		}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wacpd_signals_published_total",
			Help: "Signals the WACP_SIGNALS stream acknowledged (republished ones count again).",
		}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wacpd_rejections_total",
			Help: "Protocol rejections recorded in the trail (checkpoint_rejected, envelope_rejected), by reason.",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wacpd_requests_total",
			Help: `Requests answered, by service endpoint and reply: "ok" or the error code.`,
		}, []string{"endpoint", "code"}),
	}
	m.reg.MustRegister(m.commitDur, m.batchOps, m.outbox, m.published, m.rejections, m.requests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Committed records one durable commit of ops operations that took d.
func (m *metrics) Committed(d time.Duration, ops int) {
	if m == nil {
		return
	}
	m.commitDur.Observe(d.Seconds())
	m.batchOps.Observe(float64(ops))
}

// Rejected records one rejection recorded in the trail.
func (m *metrics) Rejected(reason string) {
	if m == nil {
		return
	}
	m.rejections.WithLabelValues(reason).Inc()
}

// request records one reply of endpoint: "ok" or its error code.
func (m *metrics) request(endpoint, code string) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(endpoint, code).Inc()
}

// signalsPublished records n signals the stream acknowledged.
func (m *metrics) signalsPublished(n int) {
	if m == nil {
		return
	}
	m.published.Add(float64(n))
}

// outboxAdd changes the outbox depth by n (negative once confirmed).
func (m *metrics) outboxAdd(n int) {
	if m == nil {
		return
	}
	m.outbox.Add(float64(n))
}

// startMetrics serves the registry at /metrics on Config.MetricsAddr and
// returns the function that shuts the server down and waits for it.
func (r *Daemon) startMetrics() (stop func(), err error) {
	ln, err := net.Listen("tcp", r.cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.metrics.reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			r.cfg.Logger.Error("metrics server", "err", err)
		}
	}()
	r.metricsURL = "http://" + ln.Addr().String() + "/metrics"
	r.cfg.Logger.Info("serving metrics", "addr", ln.Addr().String(), "url", r.metricsURL)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close() // a scrape still running past the limit
		}
		<-done
	}, nil
}

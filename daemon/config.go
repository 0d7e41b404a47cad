package daemon

import (
	"io"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/wacpd/wacpd/runtime"
)

// Config configures the daemon: the engine's settings and the daemon's
// own. The engine's database is DataDir/db; the daemon's files (admin.token,
// wacpd.json, the tree-head key, JetStream's store) sit in DataDir.
type Config struct {
	// DataDir is the daemon's data directory (wire-v1 §1). It shadows the
	// engine's DataDir, which the daemon sets to DataDir/db.
	DataDir string
	// Config is the engine's configuration (Taxonomy, Logger, the limits
	// and intervals); its DataDir is ignored.
	runtime.Config

	// Listen is the embedded NATS server's HOST:PORT; default
	// 127.0.0.1:4222; port 0 picks a free port.
	Listen string
	// NATSURL, if set, connects to an existing NATS server or cluster
	// instead of embedding one: one URL, or a comma-separated list of a
	// cluster's seed servers. That server must have JetStream; its own
	// auth configuration decides who may publish where, so the daemon
	// then also requires the Wacp-Token header on every request. The
	// daemon reconnects for as long as it runs (cluster.go).
	NATSURL string
	// NATSToken authenticates the daemon to the server at NATSURL.
	NATSToken string
	// Replicas is the replica count of every JetStream stream the daemon
	// makes (WACP_SIGNALS). Zero chooses: 1 on the embedded server; on
	// NATSURL 3 when the server is part of a cluster, else 1
	// (cluster.go). 1 to 5 is used as given; more than 1 needs NATSURL,
	// since the embedded server is one node. A stream made earlier with
	// another count is brought to this one at start.
	Replicas int
	// Deployment, when its Partitions is set, makes the daemon one of
	// several sharing the NATS cluster at NATSURL, serving the partitions
	// it owns (deployment.go, docs/scale-out.md §2).
	Deployment Deployment
	// TaxonomyFile, if set and Taxonomy is nil, is loaded at start.
	TaxonomyFile string
	// HighwayFile, if set and Highway is nil, is the human highway's
	// configuration: a preset name (autonomous, supervised, gated) or a
	// YAML file (highway/hwfile); default the spec's defaults.
	HighwayFile string
	// AtlasPaths are Atlas manifests loaded at start (-atlas, repeatable):
	// each a manifest file or a package directory (atlas/atlasfile),
	// validated as a whole before anything is served; one invalid atlas
	// stops the start. They load over (or replace) the atlases the data
	// dir has loaded before.
	AtlasPaths []string
	// HTTPAddr, if set, is the HOST:PORT of the HTTP listener of CARP
	// (/carp/v1/resolve, execute, validate, respond; Bearer tokens); port
	// 0 picks a free port. Empty: no listener.
	HTTPAddr string
	// Version is reported by system.info and in wacpd.json.
	Version string
	// Stdout receives the one line saying where the daemon listens; nil
	// means os.Stdout.
	Stdout io.Writer
	// ShutdownTimeout bounds the whole shutdown (stop taking requests, let
	// those in flight commit, publish what the outbox holds, close the
	// engine); past it Run returns an error and the next start recovers.
	// Default 1 minute.
	ShutdownTimeout time.Duration
	// MaxInFlight bounds the requests handled at once; default 256.
	MaxInFlight int
	// SignalsMaxBytes bounds the WACP_SIGNALS stream's size on disk: past
	// it the oldest signals are discarded (docs/operations.md); zero means
	// 1 GiB.
	SignalsMaxBytes int64
	// SignalsMaxAge discards signals older than this from WACP_SIGNALS;
	// zero means 30 days, negative keeps them until SignalsMaxBytes bites.
	SignalsMaxAge time.Duration
	// MetricsAddr, if set, is the HOST:PORT of an HTTP listener serving
	// Prometheus metrics at /metrics; port 0 picks a free port. Empty
	// means no listener and no metrics.
	MetricsAddr string

	// pageBytes is a test seam: the byte budget of a list page (paging.go);
	// zero means half the server's max payload.
	pageBytes int
	// onServer is a test seam: given the embedded NATS server once it runs.
	onServer func(*server.Server)
}

// Signal stream retention defaults (Config.SignalsMaxBytes, SignalsMaxAge).
const (
	defaultSignalsMaxBytes = 1 << 30
	defaultSignalsMaxAge   = 30 * 24 * time.Hour
)

// signalsRetention returns the stream's byte and age limits, defaults
// filled in (an age of 0 means none, as JetStream reads it).
func (c Config) signalsRetention() (maxBytes int64, maxAge time.Duration) {
	maxBytes, maxAge = c.SignalsMaxBytes, c.SignalsMaxAge
	if maxBytes <= 0 {
		maxBytes = defaultSignalsMaxBytes
	}
	switch {
	case maxAge == 0:
		maxAge = defaultSignalsMaxAge
	case maxAge < 0:
		maxAge = 0
	}
	return maxBytes, maxAge
}

// jetStreamMaxStore is the embedded server's JetStream storage limit: the
// stream's own limit plus room for consumer state. Set explicitly, so the
// server does not size it from the disk's free space at start (which an
// earlier fill of the disk would shrink for the whole run).
func (c Config) jetStreamMaxStore() int64 {
	b, _ := c.signalsRetention()
	return b + 64<<20
}

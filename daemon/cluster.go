package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The daemon on an external NATS server or cluster (-nats-url): the seed
// list, the connection that rides through the loss of a node, and the
// replica count of its streams (docs/scale-out.md).

// maxReplicas is JetStream's largest replica count for a stream.
const maxReplicas = 5

// clusterReplicas is the replica count chosen on a clustered server: a
// stream survives the loss of one node of three (a Raft majority of 2).
const clusterReplicas = 3

// Keepalive of the connection to an external server: a node that vanishes
// without closing its connections (a power cut, a partition) is noticed
// after natsPingsOut pings without an answer, within about 20 s, instead of
// nats.go's default 2 minutes x 2. A node that exits is noticed at once.
const (
	natsPingInterval = 5 * time.Second
	natsPingsOut     = 3
)

// seedURLs checks -nats-url, a URL or a comma-separated list of them (a
// cluster's seed servers), and returns it with spaces trimmed. nats.go reads
// the same list (a URL without a scheme is nats://), but here an empty
// element, a URL without a host or an unknown scheme stops the start instead
// of becoming a server in the pool no attempt can reach.
func seedURLs(s string) (string, error) {
	parts := strings.Split(s, ",")
	for i, u := range parts {
		u = strings.TrimSpace(u)
		if u == "" {
			return "", fmt.Errorf("URL %d of %d is empty", i+1, len(parts))
		}
		full := u
		if !strings.Contains(u, "://") {
			full = "nats://" + u
		}
		pu, err := url.Parse(full)
		if err != nil {
			return "", fmt.Errorf("URL %d %q: %w", i+1, u, err)
		}
		switch {
		case pu.Scheme != "nats" && pu.Scheme != "tls" && pu.Scheme != "ws" && pu.Scheme != "wss":
			return "", fmt.Errorf("URL %d %q: scheme %q, want nats, tls, ws or wss", i+1, u, pu.Scheme)
		case pu.Hostname() == "":
			return "", fmt.Errorf("URL %d %q: no host", i+1, u)
		}
		parts[i] = u
	}
	return strings.Join(parts, ","), nil
}

// connectExternal opens the daemon's connection to the server or cluster at
// NATSURL. It reconnects for as long as the daemon runs, trying the seeds
// and the servers the cluster announces (nats.go moves on to the next one
// at once, and waits only after a round of the whole list). Meanwhile what
// the daemon publishes is buffered (nats.go's 8 MiB): replies reach callers
// late, and a signal whose acknowledgement does not come is published again
// from the outbox (publisher.go). Losing and regaining the server is logged.
func (r *Daemon) connectExternal() (*nats.Conn, error) {
	lg := r.cfg.Logger
	return nats.Connect(r.url, nats.Name("wacpd"), nats.Token(r.cfg.NATSToken),
		nats.MaxReconnects(-1),
		nats.PingInterval(natsPingInterval), nats.MaxPingsOutstanding(natsPingsOut),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil { // nil: the daemon closed the connection
				lg.Warn("lost the NATS server; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			lg.Warn("reconnected to NATS", "server", nc.ConnectedUrlRedacted(), "name", nc.ConnectedServerName())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			lg.Warn("the daemon's connection", "subscription", subj, "err", err)
		}))
}

// streamReplicas returns the replica count of the daemon's streams: the
// configured one, else 3 on a clustered server and 1 otherwise.
//
// A server is clustered when the INFO it sent names a cluster
// (nats.Conn.ConnectedClusterName): nats-server puts a name there exactly
// when it has a cluster or gateway listener (a cluster without a name gets
// a generated one), and that is when its JetStream runs clustered, over
// Raft, and takes a replica count above 1 (a server without one refuses
// it). The name is known once connected, with no request and no rights. The
// JetStream API offers a plain user nothing better: $JS.API.INFO reports
// the account's usage, and the size of the meta group is in the system
// account's JSZ, which the daemon's credentials need not reach. A cluster
// with fewer than 3 JetStream servers refuses the stream, and the start
// stops saying so (ensureStream): set -replicas then.
func (r *Daemon) streamReplicas() int {
	switch {
	case r.cfg.Replicas > 0:
		return r.cfg.Replicas
	case r.external && r.nc.ConnectedClusterName() != "":
		return clusterReplicas
	}
	return 1
}

// clusterWait bounds whilePlacing's wait for a cluster that cannot place
// a stream or bucket yet.
const clusterWait = 30 * time.Second

// whilePlacing runs try, and on an external server runs it again every
// 500 ms, for up to clusterWait, while it fails for a reason that passes
// once the cluster has settled (notYet): a cluster that has just started,
// or lost a node, elects its JetStream meta leader (or a stream's leader)
// and learns which peers are online for a moment after it takes
// connections, and wacpd may be started with it. The first wait is logged,
// naming what is being placed. It returns try's last error.
func (r *Daemon) whilePlacing(ctx context.Context, what string, try func() error) error {
	deadline := time.Now().Add(clusterWait)
	for waited := false; ; waited = true {
		err := try()
		if err == nil || !r.external || !notYet(err) || time.Now().After(deadline) {
			return err
		}
		if !waited {
			r.cfg.Logger.Warn("the NATS server cannot place "+what+" yet; waiting", "for", clusterWait, "err", err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// JetStream's error codes for a cluster that cannot place a stream now;
// nats.go names no constants for them.
const (
	// jsNoPeers: "no suitable peers for placement" (a peer not yet seen
	// online, or too few servers).
	jsNoPeers = 10005
	// jsClusterNotAvail: "JetStream system temporarily unavailable" (no
	// meta leader).
	jsClusterNotAvail = 10008
)

// notYet reports whether err, from making the stream on an external server,
// may pass once the cluster has settled: no peers to place it on, JetStream
// unavailable for now, or no answer in time.
func notYet(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jsNoPeers || apiErr.ErrorCode == jsClusterNotAvail
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

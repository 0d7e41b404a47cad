package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// Consumers of the signal stream are made by the daemon, never by a
// principal (natsauth.go): a consumer's configuration is chosen here, so no
// principal can give one a delivery subject, a wider filter or another
// workspace's signals. A principal then reads its consumer with the
// JetStream pull API its account imports.

// ephemeralIdle is how long an ephemeral consumer outlives its last pull.
const ephemeralIdle = 2 * time.Minute

// maxConsumerName bounds a durable consumer's name.
const maxConsumerName = 64

// signalsConsumer makes, or finds, the pull consumer through which the
// caller reads the signals delivered to a workspace (its children's).
//
// An agent has one, durable, named after its own workspace. The coordinator
// may follow any workspace, with a durable consumer of any name or, without
// one, an ephemeral consumer that the server removes ephemeralIdle after its
// last pull. deliver_all starts a new consumer at the first stored signal
// instead of the next one; an existing durable consumer resumes where it
// stopped.
func (r *Daemon) signalsConsumer(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.ConsumerRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	ws := req.Workspace
	if ws == "" {
		ws = c.ws
	}
	coordinator := c.ws == r.eng.Root()
	if ws != c.ws && !coordinator {
		return nil, runtime.Refuse(wire.CodePermissionDenied, "only the coordinator may follow another workspace's signals")
	}
	if _, err := r.eng.GetWorkspace(ctx, c.ws, ws); err != nil {
		return nil, err
	}
	name, durable := req.Durable, true
	switch {
	case !coordinator && name != "" && name != c.ws:
		return nil, runtime.Refuse(wire.CodePermissionDenied, "an agent's consumer is named after its workspace: %s", c.ws)
	case !coordinator:
		name = c.ws
	case name == "":
		b := make([]byte, 12)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		name, durable = "watch_"+hex.EncodeToString(b), false
	case len(name) > maxConsumerName || strings.ContainsAny(name, ".*> \t\r\n/\\"):
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "durable name must be 1-%d characters without spaces, '.', '*', '>', '/' or '\\\\'", maxConsumerName)
	}
	switch {
	case r.js == nil: // the service without NATS (the package's fuzz tests)
		return nil, runtime.Refuse(wire.CodeUnavailable, "the daemon has no JetStream connection")
	case r.ns != nil && !r.ns.JetStreamEnabled():
		return nil, runtime.Refuse(wire.CodeUnavailable, "JetStream is off (the server turned it off); the daemon turns it on again once the disk has room")
	}
	filter := "wacp.v1.sig." + ws + ".>"
	out := wire.ConsumerInfo{Stream: signalStream, Consumer: name, Filter: filter, Durable: durable}

	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if durable {
		cons, err := r.js.Consumer(cctx, signalStream, name)
		switch {
		case err == nil:
			if got := cons.CachedInfo().Config.FilterSubject; got != filter {
				return nil, runtime.Refuse(wire.CodeInvalidStructure, "durable consumer %s follows %q, not %q; use another name", name, got, filter)
			}
			return out, nil
		case !errors.Is(err, jetstream.ErrConsumerNotFound):
			return nil, runtime.Refuse(wire.CodeUnavailable, "look up consumer %s: %v", name, err)
		}
	}
	cfg := jetstream.ConsumerConfig{
		Name: name, FilterSubject: filter, DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		Description: "signals delivered to " + ws,
	}
	if durable {
		cfg.Durable = name
	} else {
		cfg.InactiveThreshold = ephemeralIdle
	}
	if req.DeliverAll {
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	if _, err := r.js.CreateConsumer(cctx, signalStream, cfg); err != nil {
		return nil, runtime.Refuse(wire.CodeUnavailable, "create consumer %s: %v", name, err)
	}
	return out, nil
}

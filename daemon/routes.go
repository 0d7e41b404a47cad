package daemon

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/wire"
)

// Routes: an agent's requests reach the daemon as a stream, not through a
// service import (docs/security.md, "Accounts").
//
// The account of the principal that acts for workspace ws (the agent of
// ws, or the coordinator for the root) exports its wacp.v1.agent.<ws>.>
// subjects as a stream to the daemon's account alone, which imports them
// unchanged: only that account can put a message on them there, so the
// subject's workspace names the caller. The daemon answers on
// wacp.reply.<ws>.<reply>, a stream the account imports with the prefix
// cut, so the answer arrives in the caller's account on the reply subject
// it named; the daemon answers only a request whose reply subject is an
// inbox, and drops any other message on those subjects unread (it is no
// request the caller could read the answer of, or it is another service's
// answer pointed at the caller's own endpoint, which must not pass for
// the caller's request).
//
// A service import made a response import per request and a client-info
// header the server encodes in JSON and the daemon decoded: 8-16 % of the
// CPU per checkpoint at 64 clients. The routes keep the one daemon
// connection, whose writes batch the answers to many callers (answering
// in each account on a connection of its own cost as much as the imports
// saved: docs/performance.md, fifteenth session).

// replyPrefix is the daemon account's subject of the answers to ws's
// requests; the account of ws imports it as the reply subjects themselves.
func replyPrefix(ws string) string { return "wacp.reply." + ws + "." }

// routes owns the daemon's subscriptions to the routed agent subjects and
// the goroutine that hands their requests over.
type routes struct {
	log *slog.Logger

	mu      sync.Mutex // guards what follows
	nc      *nats.Conn // set by start; nil before
	byWS    map[string]*route
	ch      chan *nats.Msg
	done    chan struct{}
	stopped bool
	wg      sync.WaitGroup

	stats map[string]*endpointStats // by endpoint name; read-only
}

// route is one workspace's: who acts for it, and the subscription.
type route struct {
	p   principal.Principal
	sub *nats.Subscription // nil before start
}

// routeBuffer is how many routed requests wait for the dispatch goroutine
// (512 KiB of pointers); past it they are dropped (a slow consumer, which
// the daemon's connection logs). Each is handed over at once: admission
// refuses what is over a principal's share, and a message without an
// inbox is dropped there.
const routeBuffer = 1 << 16

var errStopping = errors.New("the daemon is shutting down")

func newRoutes(log *slog.Logger, endpointNames []string) *routes {
	rt := &routes{log: log, byWS: map[string]*route{}, ch: make(chan *nats.Msg, routeBuffer),
		done: make(chan struct{}), stats: make(map[string]*endpointStats, len(endpointNames))}
	for _, n := range endpointNames {
		rt.stats[n] = &endpointStats{}
	}
	return rt
}

// add routes ws's agent subjects to the daemon, acting as p. The account
// has its exports and imports already; the subscription is in place (the
// server has its shadow in the account) when add returns, so the
// connection being let in finds it. Before start it only remembers ws.
func (rt *routes) add(ws string, p principal.Principal) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.stopped {
		return errStopping
	}
	if _, ok := rt.byWS[ws]; ok {
		return nil // routed already, or remembered for start
	}
	r := &route{p: p}
	if rt.nc != nil {
		if err := rt.subscribe(ws, r); err != nil {
			return err
		}
	}
	rt.byWS[ws] = r
	return nil
}

// subscribe subscribes to ws's agent subjects. Called with mu held.
func (rt *routes) subscribe(ws string, r *route) error {
	sub, err := rt.nc.ChanSubscribe(agentSubjects(ws), rt.ch)
	if err != nil {
		return err
	}
	if err := rt.nc.FlushTimeout(10 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return err
	}
	r.sub = sub
	return nil
}

// start subscribes to the routes added so far and to every one after, on
// nc, and hands their requests to handle on a goroutine of its own, with
// the subject's workspace and what follows it (the op).
func (rt *routes) start(nc *nats.Conn, handle func(p principal.Principal, ws, op string, m *nats.Msg)) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.nc = nc
	for ws, r := range rt.byWS {
		if err := rt.subscribe(ws, r); err != nil {
			return err
		}
	}
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		for {
			select {
			case m := <-rt.ch:
				ws, op, _ := strings.Cut(strings.TrimPrefix(m.Subject, wire.AgentPrefix), ".")
				rt.mu.Lock()
				r, ok := rt.byWS[ws]
				rt.mu.Unlock()
				if ok {
					handle(r.p, ws, op, m)
				}
			case <-rt.done:
				return
			}
		}
	}()
	return nil
}

// remove stops routing ws's subjects: its workspace ended.
func (rt *routes) remove(ws string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	r, ok := rt.byWS[ws]
	if !ok {
		return
	}
	delete(rt.byWS, ws)
	if r.sub != nil {
		if err := r.sub.Unsubscribe(); err != nil {
			rt.log.Warn("unsubscribe a route", "workspace", ws, "err", err)
		}
	}
}

// stop unsubscribes every route and ends the dispatch goroutine; no route
// is added after it. Requests not handed over yet are not answered.
func (rt *routes) stop() {
	rt.mu.Lock()
	if rt.stopped {
		rt.mu.Unlock()
		return
	}
	rt.stopped = true
	for ws, r := range rt.byWS {
		if r.sub != nil {
			_ = r.sub.Unsubscribe()
		}
		delete(rt.byWS, ws)
	}
	close(rt.done)
	rt.mu.Unlock()
	rt.wg.Wait()
}

// endpointStats counts the routed requests of one endpoint, for
// $SRV.STATS: micro counts only those its own subscriptions receive.
type endpointStats struct {
	requests, errors atomic.Int64
	nanos            atomic.Int64
}

// routedStats is an endpoint's `data` in $SRV.STATS: its routed requests,
// in micro's own terms.
type routedStats struct {
	Routed struct {
		NumRequests           int64         `json:"num_requests"`
		NumErrors             int64         `json:"num_errors"`
		ProcessingTime        time.Duration `json:"processing_time"`
		AverageProcessingTime time.Duration `json:"average_processing_time"`
	} `json:"routed"`
}

// statsOf returns the data of endpoint name for $SRV.STATS.
func (rt *routes) statsOf(name string) any {
	var out routedStats
	st, ok := rt.stats[name]
	if !ok {
		return out
	}
	n, t := st.requests.Load(), st.nanos.Load()
	out.Routed.NumRequests, out.Routed.NumErrors = n, st.errors.Load()
	out.Routed.ProcessingTime = time.Duration(t)
	if n > 0 {
		out.Routed.AverageProcessingTime = time.Duration(t / n)
	}
	return out
}

// routedRequest is a routed request, as micro's handlers take it: its
// answer goes to the caller's reply subject under replyPrefix, and is
// counted for $SRV.STATS.
type routedRequest struct {
	m     *nats.Msg
	nc    *nats.Conn
	ws    string
	start time.Time
	stats *endpointStats // nil for a subject that is no endpoint
}

var _ micro.Request = (*routedRequest)(nil)

func (q *routedRequest) Respond(data []byte, opts ...micro.RespondOpt) error {
	reply := &nats.Msg{Subject: replyPrefix(q.ws) + q.m.Reply, Data: data}
	for _, o := range opts {
		o(reply)
	}
	if st := q.stats; st != nil {
		st.requests.Add(1)
		st.nanos.Add(int64(time.Since(q.start)))
		if reply.Header.Get(micro.ErrorHeader) != "" {
			st.errors.Add(1)
		}
	}
	return q.nc.PublishMsg(reply)
}

func (q *routedRequest) RespondJSON(v any, opts ...micro.RespondOpt) error {
	data, err := json.Marshal(v)
	if err != nil {
		return micro.ErrMarshalResponse
	}
	return q.Respond(data, opts...)
}

func (q *routedRequest) Error(code, description string, data []byte, opts ...micro.RespondOpt) error {
	opts = append(opts, micro.WithHeaders(micro.Headers{micro.ErrorHeader: {description}, micro.ErrorCodeHeader: {code}}))
	return q.Respond(data, opts...)
}

func (q *routedRequest) Data() []byte           { return q.m.Data }
func (q *routedRequest) Headers() micro.Headers { return micro.Headers(q.m.Header) }
func (q *routedRequest) Subject() string        { return q.m.Subject }
func (q *routedRequest) Reply() string          { return q.m.Reply }

// isInbox reports whether subject is under _INBOX. or a token's inbox
// prefix (wire.InboxPrefix): the only subjects a principal may read
// answers on.
func isInbox(subject string) bool {
	return strings.HasPrefix(subject, nats.InboxPrefix) || strings.HasPrefix(subject, wire.TokenInboxPrefix)
}

// agentSubjects is the pattern of workspace ws's agent subjects: what its
// agent (or, for the root, the coordinator) may call, and what is routed.
func agentSubjects(ws string) string { return wire.AgentPrefix + ws + ".>" }

// routeAccount sets up ws's route between acc, the account that acts for
// ws, and the daemon's account d: acc exports ws's agent subjects to d
// alone, d imports them, d exports its answers to them to acc alone, and
// acc imports those as the reply subjects themselves.
func routeAccount(d, acc *server.Account, ws string) error {
	subj, replies := agentSubjects(ws), replyPrefix(ws)+">"
	if err := acc.AddStreamExport(subj, []*server.Account{d}); err != nil {
		return err
	}
	if err := d.AddStreamImport(acc, subj, ""); err != nil {
		return err
	}
	if err := d.AddStreamExport(replies, []*server.Account{acc}); err != nil {
		return err
	}
	return acc.AddMappedStreamImport(d, replies, ">")
}

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/wacpd/wacpd/principal"
)

// Serving each principal in its own account (docs/security.md, "Accounts").
//
// On the embedded server the daemon answers a principal's requests inside
// the principal's account, on a connection of its own there (an account
// server), made when the principal's first connection is authenticated
// and before that connection is let in. A request reaches that connection
// only from the account it is in, so the account is the caller: no header
// names it and no import carries it. The account server may subscribe
// only to the principal's wacp.v1 services (servedGrants), and publish
// only replies: nothing on wacp.> or on the JetStream and $SRV subjects
// the account imports, and a reply to anything but an inbox is not sent.
//
// Before, each request crossed a service import into the daemon's account
// (a response import per request and a client-info header the server
// encodes in JSON), which cost 8-16 % of the daemon's CPU per checkpoint
// at 64 clients (docs/performance.md).

// accountServers owns the account servers: their connections and the
// goroutine of each that hands its requests to the daemon.
type accountServers struct {
	ns  *server.Server
	log *slog.Logger

	tokMu   sync.Mutex // guards byToken; never held while connecting
	byToken map[string]*accountServer

	mu      sync.Mutex // guards what follows; held while an account server connects
	byName  map[string]*accountServer
	handle  func(p principal.Principal, m *nats.Msg) // set by start
	stopped bool
	wg      sync.WaitGroup // the dispatch goroutines

	stats map[string]*endpointStats // by endpoint name; made by start, read-only afterwards
}

// accountServer is the daemon's connection in one principal's account.
type accountServer struct {
	ensured time.Time // the last time a connection of p was let in
	p       principal.Principal
	acc     *server.Account
	token   string // its connection's token: random, in this process only
	nc      *nats.Conn
	done    chan struct{} // closed to end its dispatch goroutine
}

// accountServerBuffer is how many requests of one principal wait for the
// dispatch goroutine; past it the principal's own requests are dropped
// (a slow consumer, logged) and no other principal's.
const accountServerBuffer = 256

var errStopping = errors.New("the daemon is shutting down")

func newAccountServers(ns *server.Server, log *slog.Logger) *accountServers {
	return &accountServers{ns: ns, log: log, byToken: map[string]*accountServer{}, byName: map[string]*accountServer{}}
}

// servedGrants are the grants of p its account server subscribes to: the
// daemon's own services (the wacp.v1 ones), which the account does not
// import.
func servedGrants(p principal.Principal) []string {
	var out []string
	for _, g := range grantsOf(p) {
		if g.served() {
			out = append(out, g.subject)
		}
	}
	return out
}

// servedPermissions are an account server's: it subscribes to p's served
// grants and publishes replies, never on a subject the account imports or
// on wacp.>.
func servedPermissions(p principal.Principal) *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"wacp.>", "$JS.>", "$SRV.>", "$SYS.>"}},
		Subscribe: &server.SubjectPermission{Allow: servedGrants(p)},
	}
}

// lookup returns the account server whose connection uses token. Only a
// connection made in this process may use one.
func (s *accountServers) lookup(token string, remote net.Addr) (*accountServer, bool) {
	s.tokMu.Lock()
	as, ok := s.byToken[token]
	s.tokMu.Unlock()
	if !ok {
		return nil, false
	}
	if _, tcp := remote.(*net.TCPAddr); tcp {
		return nil, false
	}
	return as, true
}

// ensure makes p's account server if it has none. Before start it only
// remembers p; start makes the servers of those remembered.
func (s *accountServers) ensure(p principal.Principal, acc *server.Account) error {
	if p.Kind == kindDaemon {
		return nil
	}
	name := p.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errStopping
	}
	if as, ok := s.byName[name]; ok {
		as.ensured = time.Now()
		return nil
	}
	as := &accountServer{p: p, acc: acc, ensured: time.Now()}
	if s.handle != nil {
		if err := s.open(as); err != nil {
			return fmt.Errorf("serve account %s: %w", name, err)
		}
	}
	s.byName[name] = as
	return nil
}

// start makes the account servers of the principals seen so far and of
// every one after, handing their requests to handle.
func (s *accountServers) start(handle func(p principal.Principal, m *nats.Msg), endpointNames []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = make(map[string]*endpointStats, len(endpointNames))
	for _, n := range endpointNames {
		s.stats[n] = &endpointStats{}
	}
	s.handle = handle
	for name, as := range s.byName {
		if err := s.open(as); err != nil {
			return fmt.Errorf("serve account %s: %w", name, err)
		}
	}
	return nil
}

// open connects as's account server, subscribes it to its principal's
// services and starts its dispatch goroutine. Called with s.mu held.
func (s *accountServers) open(as *accountServer) error {
	tok, err := newToken()
	if err != nil {
		return err
	}
	as.token, as.done = tok, make(chan struct{})
	s.tokMu.Lock()
	s.byToken[tok] = as
	s.tokMu.Unlock()
	name := as.p.String()
	nc, err := nats.Connect(s.ns.ClientURL(), nats.InProcessServer(s.ns), nats.Token(tok),
		nats.Name("wacpd for "+name), nats.MaxReconnects(-1),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) {
				s.log.Warn("requests dropped: the principal sends them faster than the daemon takes them", "principal", name)
				return
			}
			s.log.Warn("account server", "principal", name, "err", err)
		}))
	if err != nil {
		s.forget(as)
		return err
	}
	ch := make(chan *nats.Msg, accountServerBuffer)
	for _, subj := range servedGrants(as.p) {
		if _, err := nc.ChanSubscribe(subj, ch); err != nil {
			nc.Close()
			s.forget(as)
			return fmt.Errorf("subscribe %s: %w", subj, err)
		}
	}
	// The subscriptions are in place before the principal's connection is
	// let in: its first request finds them.
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		nc.Close()
		s.forget(as)
		return err
	}
	as.nc = nc
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case m := <-ch:
				s.handle(as.p, m)
			case <-as.done:
				return
			}
		}
	}()
	return nil
}

func (s *accountServers) forget(as *accountServer) {
	s.tokMu.Lock()
	delete(s.byToken, as.token)
	s.tokMu.Unlock()
}

// accountIdleDefault is how long an account server outlives its
// principal's last connection.
const accountIdleDefault = time.Minute

// run closes, every idle/2, the account servers whose principal has had
// no connection for idle, until ctx ends: an account server costs about
// 70 KiB and 6 goroutines, so they are kept for the principals connected
// now, not for every one that ever was. The principal's next connection
// makes a new one.
func (s *accountServers) run(ctx context.Context, idle time.Duration) {
	t := time.NewTicker(idle / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.closeIdle(now, idle)
		}
	}
}

// closeIdle closes the account servers that no connection of their
// principal was let in to for idle before now, and whose account holds no
// connection but theirs. A connection let in just before is in its
// account well within idle (it joins right after authentication), so a
// server is never closed under a connection it was made for.
func (s *accountServers) closeIdle(now time.Time, idle time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, as := range s.byName {
		if now.Sub(as.ensured) < idle || as.acc.NumLocalConnections() > 1 {
			continue
		}
		delete(s.byName, name)
		s.shut(as)
	}
}

// close closes p's account server, if it has one: after p's workspace
// ended or its last token was revoked. A later connection of p makes a
// new one.
func (s *accountServers) close(p principal.Principal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	as, ok := s.byName[p.String()]
	if !ok {
		return
	}
	delete(s.byName, p.String())
	s.shut(as)
}

// shut ends as's dispatch goroutine and closes its connection; a request
// it had not handed over is not answered. Called with s.mu held.
func (s *accountServers) shut(as *accountServer) {
	if as.nc == nil {
		return
	}
	close(as.done)
	as.nc.Close()
	s.forget(as)
}

// stop closes every account server and waits for their goroutines; no
// principal connects after it.
func (s *accountServers) stop() {
	s.mu.Lock()
	s.stopped = true
	for name, as := range s.byName {
		s.shut(as)
		delete(s.byName, name)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// endpointStats counts the requests of one endpoint served in the
// principals' accounts, for $SRV.STATS: micro counts only those made in
// the daemon's own account.
type endpointStats struct {
	requests, errors atomic.Int64
	nanos            atomic.Int64
}

// servedStats is an endpoint's `data` in $SRV.STATS: its requests served
// in the principals' accounts, in micro's own terms.
type servedStats struct {
	InAccounts struct {
		NumRequests           int64         `json:"num_requests"`
		NumErrors             int64         `json:"num_errors"`
		ProcessingTime        time.Duration `json:"processing_time"`
		AverageProcessingTime time.Duration `json:"average_processing_time"`
	} `json:"in_accounts"`
}

// statsOf returns the data of endpoint name for $SRV.STATS.
func (s *accountServers) statsOf(name string) any {
	var out servedStats
	st, ok := s.stats[name]
	if !ok {
		return out
	}
	n, t := st.requests.Load(), st.nanos.Load()
	out.InAccounts.NumRequests, out.InAccounts.NumErrors = n, st.errors.Load()
	out.InAccounts.ProcessingTime = time.Duration(t)
	if n > 0 {
		out.InAccounts.AverageProcessingTime = time.Duration(t / n)
	}
	return out
}

// servedRequest is a request an account server received, as micro's
// handlers take it. Its reply is counted for $SRV.STATS.
type servedRequest struct {
	m     *nats.Msg
	start time.Time
	stats *endpointStats // nil for a subject that is no endpoint
}

var _ micro.Request = (*servedRequest)(nil)

func (q *servedRequest) Respond(data []byte, opts ...micro.RespondOpt) error {
	reply := &nats.Msg{Data: data}
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
	return q.m.RespondMsg(reply)
}

func (q *servedRequest) RespondJSON(v any, opts ...micro.RespondOpt) error {
	data, err := json.Marshal(v)
	if err != nil {
		return micro.ErrMarshalResponse
	}
	return q.Respond(data, opts...)
}

func (q *servedRequest) Error(code, description string, data []byte, opts ...micro.RespondOpt) error {
	opts = append(opts, micro.WithHeaders(micro.Headers{micro.ErrorHeader: {description}, micro.ErrorCodeHeader: {code}}))
	return q.Respond(data, opts...)
}

func (q *servedRequest) Data() []byte           { return q.m.Data }
func (q *servedRequest) Headers() micro.Headers { return micro.Headers(q.m.Header) }
func (q *servedRequest) Subject() string        { return q.m.Subject }
func (q *servedRequest) Reply() string          { return q.m.Reply }

// isInbox reports whether subject is under _INBOX. or a token's inbox
// prefix (wire.InboxPrefix): the only subjects a principal may read
// replies on.
func isInbox(subject string) bool {
	return strings.HasPrefix(subject, "_INBOX.") || strings.HasPrefix(subject, "_INBOX_")
}

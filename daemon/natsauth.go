package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// signalStream is the JetStream stream of delivered signals (wire-v1 §5).
const signalStream = "WACP_SIGNALS"

// toolsAccount is the account of every tool service (a tool token).
const toolsAccount = "wacpd-tools"

// Isolation on the embedded server (docs/security.md, "Accounts").
//
// The daemon's own connection, its micro service, the live feeds and the
// WACP_SIGNALS stream are in the server's global account. Every other
// principal connects into an account of its own, named after it
// (principal.Principal.String), which imports exactly the services it may
// call and the deliveries it may read (grantsOf), but for its own agent
// subjects, which it routes to the daemon (routes.go). A message crosses
// from a principal's account into the daemon's only as a request on its
// own agent subjects or to an imported service, and the answer goes back
// into the caller's account, whatever reply subject the caller named: a
// reflected reply can land only where the caller itself could publish.
// Nothing a principal publishes reaches the stream or the feeds. The NATS
// permissions of each connection list the same subjects again, as a
// second line.

// grant is one subject a principal's account imports from the daemon's,
// or routes to it.
type grant struct {
	subject string
	stream  bool // a delivery the principal reads; else a service it calls
}

// routed reports whether g is p's own agent subjects, which p's account
// routes to the daemon (routes.go) rather than importing a service.
func (g grant) routed(p principal.Principal) bool {
	return !g.stream && p.Workspace != "" && g.subject == agentSubjects(p.Workspace)
}

// consumerAPI is the JetStream API subject of a consumer operation on the
// signal stream.
func consumerAPI(op, consumer string) string {
	return "$JS.API.CONSUMER." + op + "." + signalStream + "." + consumer
}

// exports are the daemon account's exports: every grant of every
// principal but its own agent subjects (routes.go) is within one of them.
// The pull request subject answers with a stream of messages; the others
// answer once.
var (
	serviceExports = []string{
		"wacp.v1.system.>", "wacp.v1.audit.>", "wacp.v1.highway.>", "$SRV.>",
		"$JS.API.INFO", "$JS.API.STREAM.INFO." + signalStream,
		consumerAPI("INFO", "*"), consumerAPI("DELETE", "*"), "$JS.API.CONSUMER.NAMES." + signalStream,
		"$JS.ACK." + signalStream + ".>",
	}
	streamedExport = consumerAPI("MSG.NEXT", "*")
	streamExports  = []string{"wacp.v1.sig.>", "wacp.v1.trail.>"}
)

// gateEvents are the trail events of the highway's live gate feed, which
// user tokens follow (wire-v1 §6: live gate events).
var gateEvents = []trail.EventType{trail.EventGateTriggered, trail.EventGateResolved, trail.EventGateTimeout}

// grantsOf returns what principal p's account imports. Consumers of the
// signal stream are made by the daemon (the signals.consumer endpoint), never
// by a principal: a consumer's configuration could name a delivery subject
// in the daemon's account.
func grantsOf(p principal.Principal) []grant {
	svc := func(s ...string) []grant {
		out := make([]grant, len(s))
		for i := range s {
			out[i] = grant{subject: s[i]}
		}
		return out
	}
	g := svc("wacp.v1.system.>")
	switch p.Kind {
	case principal.KindCoordinator:
		g = append(g, svc(agentSubjects(p.Workspace), "wacp.v1.audit.>", "$SRV.>",
			"$JS.API.INFO", "$JS.API.STREAM.INFO."+signalStream,
			consumerAPI("INFO", "*"), consumerAPI("DELETE", "*"), "$JS.API.CONSUMER.NAMES."+signalStream,
			consumerAPI("MSG.NEXT", "*"), "$JS.ACK."+signalStream+".>")...)
		g = append(g, grant{"wacp.v1.sig.>", true}, grant{"wacp.v1.trail.>", true})
	case principal.KindAgent:
		ws := p.Workspace
		// One consumer per workspace, named after it, filtered to the
		// workspace's own signals (made by signals.consumer).
		g = append(g, svc(agentSubjects(ws),
			consumerAPI("INFO", ws), consumerAPI("MSG.NEXT", ws), "$JS.ACK."+signalStream+"."+ws+".>")...)
		g = append(g, grant{"wacp.v1.sig." + ws + ".>", true}, grant{"wacp.v1.trail." + ws + ".>", true})
	case principal.KindAuditor:
		g = append(g, svc("wacp.v1.audit.>")...)
		g = append(g, grant{"wacp.v1.trail.>", true})
	case principal.KindUser:
		// A person's live feed is the highway's: the gate events, from
		// every workspace (the gate queue is every operator's). The rest
		// of the trail a user reads by request, scoped by view_trail_own
		// and view_trail_any (runtime.UserTrailScope).
		g = append(g, svc("wacp.v1.audit.>", "wacp.v1.highway.>")...)
		for _, typ := range gateEvents {
			g = append(g, grant{"wacp.v1.trail.*." + string(typ), true})
		}
	default:
		return nil
	}
	return g
}

// permissions returns what principal p may publish and subscribe to: the
// services and deliveries of its grants, and replies under the account's
// own _INBOX. or the token's inbox prefix (wire.InboxPrefix, which
// wire-v1 §2 names; clients of an external server need it).
func permissions(p principal.Principal, inbox string) *server.Permissions {
	if p.Kind == kindDaemon {
		return nil // no restrictions
	}
	if p.Kind == principal.KindTool {
		// A tool service subscribes to actions (and micro's discovery)
		// and publishes only answers to the requests it got, including a
		// late one.
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{}},
			Subscribe: &server.SubjectPermission{Allow: []string{carp.ToolPrefix + ">", "$SRV.>", "_INBOX.>", inbox + ".>"}},
			Response:  &server.ResponsePermission{MaxMsgs: 1, Expires: wire.MaxToolTimeout + lateWindow},
		}
	}
	pub, sub := []string{}, []string{"_INBOX.>", inbox + ".>"}
	for _, g := range grantsOf(p) {
		if g.stream {
			sub = append(sub, g.subject)
		} else {
			pub = append(pub, g.subject)
		}
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: sub},
	}
}

// accounts makes and remembers the principals' accounts on the embedded
// server.
type accounts struct {
	ns     *server.Server
	daemon *server.Account // the global account
	tools  *server.Account // every tool service's (toolsAccount); set by startTools, guarded by mu

	mu     sync.Mutex // guards byName; held while an account is set up
	byName map[string]principal.Principal

	// route, set before the server starts, routes a workspace's agent
	// subjects to the daemon once its account is set up (routes.go).
	route func(ws string, p principal.Principal) error

	warmMu  sync.Mutex                 // guards warming; never held with mu taken after it
	warming map[string]*server.Account // by the one-time token of a warm-up connection (warmUp)
}

// newAccounts exports the daemon account's services and deliveries on ns.
func newAccounts(ns *server.Server) (*accounts, error) {
	g := ns.GlobalAccount()
	for _, s := range serviceExports {
		if err := g.AddServiceExport(s, nil); err != nil {
			return nil, fmt.Errorf("export %s: %w", s, err)
		}
	}
	if err := g.AddServiceExportWithResponse(streamedExport, server.Streamed, nil); err != nil {
		return nil, fmt.Errorf("export %s: %w", streamedExport, err)
	}
	for _, s := range streamExports {
		if err := g.AddStreamExport(s, nil); err != nil {
			return nil, fmt.Errorf("export %s: %w", s, err)
		}
	}
	return &accounts{ns: ns, daemon: g, byName: map[string]principal.Principal{},
		warming: map[string]*server.Account{}}, nil
}

// startTools makes the tool services' account, once the server runs (an
// account registered before the start leaves the global account without
// JetStream). The tool services share it; it exports their actions'
// subjects to the daemon's account: the daemon's forwards reach them, and
// nothing else of theirs reaches anyone (permissions: they subscribe to
// actions and answer the requests they get, nothing more).
func (a *accounts) startTools() error {
	tools, _ := a.ns.LookupOrRegisterAccount(toolsAccount)
	if err := tools.AddServiceExport(carp.ToolPrefix+">", nil); err != nil {
		return fmt.Errorf("export the tools' subjects: %w", err)
	}
	if err := a.daemon.AddServiceImport(tools, carp.ToolPrefix+">", ""); err != nil {
		return fmt.Errorf("import the tools' subjects: %w", err)
	}
	a.mu.Lock()
	a.tools = tools
	a.mu.Unlock()
	return nil
}

// of returns p's account, made with p's imports the first time. The
// daemon's own connection stays in the global account (nil).
func (a *accounts) of(p principal.Principal) (*server.Account, error) {
	if p.Kind == kindDaemon {
		return nil, nil
	}
	name := p.String()
	a.mu.Lock()
	defer a.mu.Unlock()
	if p.Kind == principal.KindTool {
		if a.tools == nil {
			return nil, errors.New("the tools' account is not set up yet")
		}
		return a.tools, nil
	}
	acc, isNew := a.ns.LookupOrRegisterAccount(name)
	if !isNew {
		if _, ok := a.byName[name]; ok {
			return acc, nil
		}
	}
	for _, g := range grantsOf(p) {
		if g.routed(p) {
			if err := routeAccount(a.daemon, acc, p.Workspace); err != nil {
				return nil, fmt.Errorf("account %s: route %s: %w", name, g.subject, err)
			}
			if err := a.warmUp(acc); err != nil {
				return nil, fmt.Errorf("account %s: %w", name, err)
			}
			continue
		}
		var err error
		if g.stream {
			err = acc.AddStreamImport(a.daemon, g.subject, "")
		} else {
			err = acc.AddServiceImport(a.daemon, g.subject, "")
		}
		if err != nil {
			return nil, fmt.Errorf("account %s: import %s: %w", name, g.subject, err)
		}
	}
	a.byName[name] = p
	return acc, nil
}

// warmUpSubject is the one subject a warm-up connection may subscribe to.
const warmUpSubject = "_INBOX.wacpd-warm-up"

// warmUp makes one subscription in the routed account acc, on a
// connection of the daemon's own, before any client of acc is let in
// (of holds mu, which every client's authentication of acc waits for).
// Each subscription in a routed account is mapped back through the
// account's reply import (routeAccount), whose reverse mapping the
// embedded server builds on first use without a lock (nats-server
// v2.15.2, client.addShadowSub): two clients of a new account subscribing
// at once raced on it (TestRouteFirstSubscriptionsAtOnce). Built here
// once, it is only read afterwards.
func (a *accounts) warmUp(acc *server.Account) error {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("warm-up token: %w", err)
	}
	tok := "wacpd-warm-up." + hex.EncodeToString(b[:])
	a.warmMu.Lock()
	a.warming[tok] = acc
	a.warmMu.Unlock()
	defer func() {
		a.warmMu.Lock()
		delete(a.warming, tok)
		a.warmMu.Unlock()
	}()
	nc, err := nats.Connect("", nats.InProcessServer(a.ns), nats.Token(tok), nats.NoReconnect(),
		nats.Name("wacpd warm-up"))
	if err != nil {
		return fmt.Errorf("warm-up connection: %w", err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync(warmUpSubject); err != nil {
		return fmt.Errorf("warm-up subscription: %w", err)
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("warm-up subscription: %w", err)
	}
	return nil
}

// warmUpUser returns the user of the warm-up connection whose token is
// tok, if one is being made: in its account, allowed to publish nothing
// and to subscribe to warmUpSubject alone.
func (a *accounts) warmUpUser(tok string) (*server.User, bool) {
	a.warmMu.Lock()
	acc, ok := a.warming[tok]
	a.warmMu.Unlock()
	if !ok {
		return nil, false
	}
	return &server.User{Username: "wacpd-warm-up", Account: acc, Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{}},
		Subscribe: &server.SubjectPermission{Allow: []string{warmUpSubject}},
	}}, true
}

// routeOf routes p's agent subjects, if p's grants route any (the same
// rule accounts.of set the account up by), once p's account is set up;
// again after a start has made them before the daemon served.
func (a *accounts) routeOf(p principal.Principal) error {
	if a.route == nil || !slices.ContainsFunc(grantsOf(p), func(g grant) bool { return g.routed(p) }) {
		return nil
	}
	return a.route(p.Workspace, p)
}

// principal returns the principal whose account is named acc.
func (a *accounts) principal(acc string) (principal.Principal, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.byName[acc]
	return p, ok
}

// requestInfoHeader is the header the server sets on every request that
// crosses a service import, naming the caller's account; a client cannot
// forge it (the server replaces any it sent).
const requestInfoHeader = server.ClientInfoHdr

// requestAccount returns the account named by a request's info header.
func requestAccount(h string) string {
	var ci struct {
		Account string `json:"acc"`
	}
	if json.Unmarshal([]byte(h), &ci) != nil {
		return ""
	}
	return ci.Account
}

// authenticator is the embedded server's custom client authentication: it
// maps the connection's token to a principal, puts the connection in that
// principal's account and gives it that principal's permissions, so the
// server itself enforces who may publish and subscribe where (wire-v1 §2).
type authenticator struct {
	tokens *tokens
	accts  *accounts                        // set before the server starts
	live   func(p principal.Principal) bool // reports whether p may connect now (a closed workspace's agent may not)
	failed func(remote, why string)         // called on a refused connection; never gets the token
	userIn func(name string)                // called when a user's token is accepted; never blocks
}

var _ server.Authentication = (*authenticator)(nil)

// Check implements server.Authentication.
func (a *authenticator) Check(c server.ClientAuthentication) bool {
	opts := c.GetOpts()
	remote := ""
	if addr := c.RemoteAddress(); addr != nil {
		remote = addr.String()
	}
	if u, ok := a.accts.warmUpUser(opts.Token); ok {
		c.RegisterUser(u)
		return true
	}
	p, ok := a.tokens.lookup(opts.Token)
	if !ok {
		a.fail(remote, "unknown token")
		return false
	}
	if a.live != nil && !a.live(p) {
		a.fail(remote, "the workspace of this agent token has ended")
		return false
	}
	acc, err := a.accts.of(p)
	if err == nil {
		err = a.accts.routeOf(p)
	}
	if errors.Is(err, errStopping) {
		return false // not an authentication failure
	}
	if err != nil {
		a.fail(remote, err.Error())
		return false
	}
	c.RegisterUser(&server.User{Username: p.String(), Account: acc,
		Permissions: permissions(p, wire.InboxPrefix(opts.Token))})
	if p.Kind == principal.KindUser && a.userIn != nil {
		a.userIn(p.Name)
	}
	return true
}

func (a *authenticator) fail(remote, why string) {
	if a.failed != nil {
		a.failed(remote, why)
	}
}

// disconnectEnded closes the connections of the agent p, whose workspace
// ended, and stops routing the workspace's subjects.
func (r *Daemon) disconnectEnded(p principal.Principal) {
	r.disconnect(p)
	if r.routes != nil {
		r.routes.remove(p.Workspace)
	}
}

// disconnect closes every connection of the embedded server authenticated
// as p: after p's token was replaced, those were made with the old one.
// With an external server (Config.NATSURL) the daemon cannot see its
// connections; a replaced token is refused at each request there (the
// Wacp-Token check), but subscriptions made with it stay.
func (r *Daemon) disconnect(p principal.Principal) {
	if r.ns == nil {
		return
	}
	connz, err := r.ns.Connz(&server.ConnzOptions{User: p.String(), Limit: 1 << 16})
	if err != nil {
		r.cfg.Logger.Warn("list connections to close", "principal", p.String(), "err", err)
		return
	}
	for _, c := range connz.Conns {
		if err := r.ns.DisconnectClientByID(c.Cid); err != nil {
			r.cfg.Logger.Warn("close connection", "principal", p.String(), "cid", c.Cid, "err", err)
		}
	}
}

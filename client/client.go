package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/wire"
)

// DefaultTimeout bounds a request when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Options says how to reach the daemon and as whom. The zero value finds
// it through the environment or ./wacp-data (see Dial).
type Options struct {
	// URL is the daemon's NATS URL, or a comma-separated list of the
	// servers of the NATS cluster it runs on (wacpd -nats-url, which
	// wacpd.json repeats); default $WACP_URL, else the url in
	// DataDir/wacpd.json. The connection tries the listed servers and
	// those the cluster announces, and reconnects to another when its
	// server goes (nats.go's defaults: it gives up after about two minutes
	// without one).
	URL string
	// Token is the bearer token; default $WACP_TOKEN, else
	// DataDir/admin.token (the coordinator's).
	Token string
	// DataDir is the daemon's data directory; default "./wacp-data".
	DataDir string
	// Workspace is the workspace this client acts as; default
	// $WACP_WORKSPACE, else the root workspace (right for the admin
	// token). An agent token must name its own workspace.
	Workspace string
	// Timeout bounds each request (and the connection attempt); default
	// DefaultTimeout.
	Timeout time.Duration
	// NATSToken, if set, authenticates the connection instead of Token:
	// for a daemon running on an external NATS server (wacpd -nats-url),
	// whose own auth admits connections. Token then still identifies the
	// caller to the daemon, in the Wacp-Token header. Default $WACP_NATS_TOKEN.
	NATSToken string
	// Daemon, on a deployment of several daemons (wacpd -partitions), names
	// the daemon whose own endpoints this client calls: system.info, the
	// audit and the highway endpoints go to wacp.v1.d.<Daemon>.<op>
	// instead of the home daemon's subjects. Agent endpoints are routed by
	// their workspace whatever it says. Default $WACP_DAEMON; empty: the
	// home daemon (or the only one).
	Daemon string
}

// Client is a connection to wacpd acting as one workspace. Its methods are
// safe for concurrent use.
type Client struct {
	nc      *nats.Conn
	url     string
	token   string
	ws      string
	root    string
	timeout time.Duration
	daemon  string // Options.Daemon

	mu      sync.Mutex // guards waiters
	waiters map[*permWaiter]struct{}

	handled handledSet // envelope ids acknowledged, for dedup (agent.go)
}

// permWaiter is a call that ends when the NATS server refuses a subject
// it matches: match, or without it a publish to subject.
type permWaiter struct {
	subject string
	match   func(op, subject string) bool
	cancel  context.CancelCauseFunc
}

func (w *permWaiter) matches(op, subject string) bool {
	if w.match != nil {
		return w.match(op, subject)
	}
	return op == "publish" && subject == w.subject
}

// Dial connects to the daemon. It finds it as wire-v1 §1 says: explicit
// options, else WACP_URL / WACP_TOKEN / WACP_WORKSPACE, else the data
// directory's wacpd.json and admin.token. It then reads system.info to learn
// the root workspace. A daemon that cannot be found or reached gives an
// error wrapping ErrUnreachable; a token the server does not know gives an
// *Error with code unauthorized.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	d, err := discover(opts)
	if err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	connect := timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < connect {
		connect = max(time.Until(dl), time.Millisecond)
	}
	daemon := first(opts.Daemon, os.Getenv(EnvDaemon))
	if daemon != "" && !validToken(daemon) {
		return nil, fmt.Errorf("client: daemon %q is not a daemon id", daemon)
	}
	c := &Client{url: d.url, token: d.token, timeout: timeout, daemon: daemon, waiters: map[*permWaiter]struct{}{}}
	nc, err := nats.Connect(d.url,
		nats.Token(first(opts.NATSToken, os.Getenv(EnvNATSToken), d.token)), nats.Name("wacp"), nats.Timeout(connect),
		// The server lets each token receive replies only under its own
		// inbox prefix.
		nats.CustomInboxPrefix(wire.InboxPrefix(d.token)),
		nats.PermissionErrOnSubscribe(true), nats.ErrorHandler(c.asyncError))
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, &Error{Code: "unauthorized", Status: 401, Err: err,
				Message: fmt.Sprintf("the server at %s refused the token%s", d.url, d.tokenSource)}
		}
		return nil, fmt.Errorf("connect to %s: %w: %w", d.url, ErrUnreachable, err)
	}
	c.nc = nc
	info, err := c.Info(ctx)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.root, c.ws = info.RootWorkspace, d.workspace
	if c.ws == "" {
		c.ws = info.RootWorkspace
	}
	if !validToken(c.ws) {
		nc.Close()
		return nil, fmt.Errorf("client: workspace %q is not a workspace id", c.ws)
	}
	return c, nil
}

// validToken reports whether s can be one token of a NATS subject.
func validToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*> \t\r\n")
}

// Close closes the connection.
func (c *Client) Close() error {
	c.nc.Close()
	return nil
}

// InboxPrefix returns the reply inbox prefix of the client's token; other
// NATS clients using the same token must use it (nats CLI: --inbox-prefix).
func (c *Client) InboxPrefix() string { return wire.InboxPrefix(c.token) }

// Workspace returns the id of the workspace the client acts as.
func (c *Client) Workspace() string { return c.ws }

// URL returns the daemon's NATS URL.
func (c *Client) URL() string { return c.url }

// isCoordinator reports whether the client acts as the root workspace, which
// only the admin token may.
func (c *Client) isCoordinator() bool { return c.ws == c.root }

// asyncError receives the connection's asynchronous errors; a permission
// violation ends the calls waiting on its subject.
func (c *Client) asyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	perr, op, subject := permissionError(err)
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.waiters {
		if w.matches(strings.ToLower(op), subject) {
			w.cancel(perr)
		}
	}
}

// guard returns a context that is cancelled with the permission error when
// the server refuses a subject matching match, and a function releasing it.
func (c *Client) guard(ctx context.Context, match func(op, subject string) bool) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &permWaiter{match: match, cancel: cancel}
	c.wait(w)
	return ctx, func() {
		c.unwait(w)
		cancel(nil)
	}
}

func (c *Client) wait(w *permWaiter) {
	c.mu.Lock()
	c.waiters[w] = struct{}{}
	c.mu.Unlock()
}

func (c *Client) unwait(w *permWaiter) {
	c.mu.Lock()
	delete(c.waiters, w)
	c.mu.Unlock()
}

// errCallTimeout is the cause a call's context is cancelled with when its
// timeout passes.
var errCallTimeout = fmt.Errorf("no reply in time: %w", context.DeadlineExceeded)

// agent returns the subject of op on the client's workspace.
func (c *Client) agent(op string) string { return wire.AgentSubject(c.ws, op) }

// call sends req as JSON to subject and decodes the reply into reply. extra
// lengthens the timeout (for long polls).
func (c *Client) call(ctx context.Context, subject string, req, reply any, extra time.Duration) error {
	data := []byte("{}")
	if req != nil {
		var err error
		if data, err = json.Marshal(req); err != nil {
			return fmt.Errorf("encode request for %s: %w", subject, err)
		}
	}
	resp, err := c.request(ctx, subject, data, extra)
	if err != nil || reply == nil {
		return err
	}
	if cp, ok := reply.(*checkpointchain.Checkpoint); ok {
		var err error
		if *cp, err = DecodeCheckpoint(resp); err != nil {
			return fmt.Errorf("decode reply of %s: %w", subject, err)
		}
		return nil
	}
	if err := json.Unmarshal(resp, reply); err != nil {
		return fmt.Errorf("decode reply of %s: %w", subject, err)
	}
	return nil
}

// Call sends body, a request's JSON as is, to operation op of the wire
// contract (wire.Endpoints: an agent endpoint on the client's workspace,
// any other on its own subject) and returns the reply's JSON as the
// daemon sent it. The timeout is lengthened by as much as the endpoint's
// deadline exceeds wire.RequestTimeout (a long poll's wait, a tool's
// time). A refusal is an *Error whose Body is the error reply; an op not
// in the contract is an error before anything is sent.
func (c *Client) Call(ctx context.Context, op string, body []byte) ([]byte, error) {
	ep, ok := endpoints()[op]
	if !ok {
		return nil, fmt.Errorf("client: no operation %q in the wire contract", op)
	}
	subject := wire.Subject(op)
	if ep.Audience == wire.Agents {
		subject = c.agent(op)
	}
	return c.request(ctx, subject, body, max(ep.Deadline()-wire.RequestTimeout, 0))
}

// endpoints returns wire.Endpoints by op.
var endpoints = sync.OnceValue(func() map[string]wire.Endpoint {
	m := map[string]wire.Endpoint{}
	for _, ep := range wire.Endpoints() {
		m[ep.Op] = ep
	}
	return m
})

// request sends data to subject and returns the reply's body, or the
// error reply as an *Error. extra lengthens the timeout.
func (c *Client) request(ctx context.Context, subject string, data []byte, extra time.Duration) ([]byte, error) {
	subject = daemonSubject(c.daemon, subject)
	msg := nats.NewMsg(subject)
	msg.Header.Set(TokenHeader, c.token)
	msg.Data = data

	// One context, ended by the timeout, by a permission error on the
	// subject (asyncError) or by the caller's: a timeout's context and a
	// guard's within it cost 4 µs a call (a third of the client's time
	// per checkpoint, beside its encoding and decoding).
	ctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(c.timeout+extra, func() { cancel(errCallTimeout) })
	w := &permWaiter{subject: subject, cancel: cancel}
	c.wait(w)
	defer func() {
		timer.Stop()
		c.unwait(w)
		cancel(nil)
	}()
	resp, err := c.nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return nil, transportError(ctx, subject, err)
	}
	if err := replyError(resp); err != nil {
		return nil, err
	}
	return resp.Data, nil
}

// daemonSubject returns the subject of daemon's own endpoint for subject,
// one of the contract's system, audit or highway subjects:
// wacp.v1.d.<daemon>.<op>. An agent subject, or any subject when daemon
// is empty, is returned as it is.
func daemonSubject(daemon, subject string) string {
	rest, ok := strings.CutPrefix(subject, wire.Prefix)
	if daemon == "" || !ok || strings.HasPrefix(subject, wire.AgentPrefix) {
		return subject
	}
	return wire.Prefix + "d." + daemon + "." + rest
}

// DecodeCheckpoint decodes a checkpoint as the daemon sends it in a reply:
// the form it writes (checkpointchain.Wire) by checkpointchain.ReadWire,
// any other JSON by the JSON decoder, with the same result.
func DecodeCheckpoint(data []byte) (checkpointchain.Checkpoint, error) {
	if cp, ok := checkpointchain.ReadWire(data); ok {
		return cp, nil
	}
	var cp checkpointchain.Checkpoint
	err := json.Unmarshal(data, &cp)
	return cp, err
}

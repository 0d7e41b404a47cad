package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/workspace"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Identity is who a token is, as the daemon knows it at the moment of the
// request.
type Identity struct {
	Kind string // "user", "auditor"; "agent", "tool" or "coordinator" are refused
	Name string // the user's or auditor's name
	// Capabilities are a user's granted capabilities (view_trail_own is
	// every active user's and implicit).
	Capabilities []user.Capability
	// Active reports whether a user's record is active; an auditor is
	// always active.
	Active bool
}

// Has reports whether the identity is a user holding c (view_trail_own is
// implicit).
func (id Identity) Has(c user.Capability) bool {
	if id.Kind != KindUser {
		return false
	}
	u := user.User{Capabilities: id.Capabilities}
	return u.Has(c)
}

// The two kinds of token the console takes.
const (
	KindUser    = "user"
	KindAuditor = "auditor"
)

// Authenticator identifies tokens.
type Authenticator interface {
	// Identify returns the principal of token and true, or false when the
	// daemon does not know the token (never issued, revoked) or its
	// principal has ended. The console asks at every request.
	Identify(token string) (Identity, bool)
}

// Caller runs the wire contract's operations.
type Caller interface {
	// Call runs operation op (wire.Endpoint.Op) with the JSON body as
	// token's principal, with every check a NATS request passes, and
	// returns the reply exactly as the daemon sends it. A refused request
	// returns a *Refusal.
	Call(ctx context.Context, token, op string, body []byte) ([]byte, error)
}

// Reader reads what the wire has no operation for (a user's workspace
// tree, a workspace's chain), under the trail's scoping rule: what
// audit.trail.read would let token's principal read.
type Reader interface {
	// Workspaces returns the workspaces whose trail token's principal may
	// read, in creation order.
	Workspaces(ctx context.Context, token string) ([]workspace.Workspace, error)
	// Checkpoints returns up to limit checkpoints of workspace ws in
	// chain order, after checkpoint after when set.
	Checkpoints(ctx context.Context, token, ws, after string, limit int) ([]checkpointchain.Checkpoint, error)
}

// Follower delivers the live trail.
type Follower interface {
	// Follow calls fn with each trail entry committed from now on that
	// token's principal may read, in commit order, until ctx ends, fn
	// returns an error, or the token no longer identifies anyone
	// (ErrEnded). It returns ErrLagged when the reader fell too far
	// behind to be given every entry.
	Follow(ctx context.Context, token string, fn func(trail.Entry) error) error
}

// Backend is everything the console needs of the daemon.
type Backend interface {
	Authenticator
	Caller
	Reader
	Follower
}

// These errors can be returned by a Backend. Test with errors.Is.
var (
	// ErrEnded is returned when a token no longer identifies anyone.
	ErrEnded = errors.New("console: the token no longer authenticates")
	// ErrLagged is returned by Follow to a reader too slow for the feed.
	ErrLagged = errors.New("console: the live feed lagged behind")
)

// Refusal is an operation the daemon refused: its wire code, HTTP-like
// status and message.
type Refusal struct {
	Code    string
	Status  int
	Message string
}

func (f *Refusal) Error() string { return f.Code + ": " + f.Message }

// Config configures a Console. The zero value of each field but Backend
// means its default.
type Config struct {
	Backend Backend // required
	// IdleTimeout ends a session unused for this long; 0 means 30 minutes.
	IdleTimeout time.Duration
	// MaxAge ends a session this long after its login; 0 means 12 hours.
	MaxAge time.Duration
	// MaxSessions bounds the sessions held; a login past it ends the
	// least recently used one. 0 means 1024.
	MaxSessions int
	// Clock is the time; nil means time.Now.
	Clock func() time.Time
	// Entropy makes session ids and CSRF tokens; nil means crypto/rand.
	Entropy io.Reader
	// Logger logs refusals the operator should see; nil discards.
	Logger *slog.Logger
}

// Console is the web console: an http.Handler. Create it with New.
type Console struct {
	cfg      Config
	sessions *sessions
	pages    map[string]*template.Template
	mux      *http.ServeMux
	cop      *http.CrossOriginProtection

	done chan struct{} // closed by Close: live streams end
	once sync.Once
}

// New returns a console for cfg.
func New(cfg Config) (*Console, error) {
	if cfg.Backend == nil {
		return nil, errors.New("console: config: Backend is required")
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 12 * time.Hour
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 1024
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Entropy == nil {
		cfg.Entropy = rand.Reader
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, pages: pages, sessions: newSessions(cfg), cop: http.NewCrossOriginProtection(),
		done: make(chan struct{})}
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, http.StatusForbidden, "cross-origin request refused: the console takes forms from its own pages only")
	}))
	c.routes()
	return c, nil
}

// Close ends the live streams; pages are still served. Its server calls
// it when it shuts down (http.Server.Shutdown waits for no stream).
func (c *Console) Close() { c.once.Do(func() { close(c.done) }) }

// ServeHTTP serves the console's routes with its security headers; POSTs
// from another origin are refused.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.cop.Handler(c.mux).ServeHTTP(w, r)
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(static)))
	m.HandleFunc("GET /login", c.loginPage)
	m.HandleFunc("POST /login", c.login)
	m.HandleFunc("POST /logout", c.authed(c.logout))
	m.HandleFunc("GET /{$}", c.authed(c.tree))
	m.HandleFunc("GET /ws/{id}", c.authed(c.chain))
	m.HandleFunc("GET /checkpoint/{id}", c.authed(c.checkpoint))
	m.HandleFunc("GET /trail", c.authed(c.trailPage))
	m.HandleFunc("GET /trail/events", c.authed(c.events))
	m.HandleFunc("GET /queue", c.authed(c.queue))
	m.HandleFunc("POST /queue/{id}", c.authed(c.resolve))
	m.HandleFunc("GET /audit", c.authed(c.audit))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, http.StatusNotFound, fmt.Sprintf("no console page %s %s", r.Method, r.URL.Path))
	})
	c.mux = m
}

// staticHandler serves the embedded assets; they change only with the
// binary, so they may be cached for a day.
func staticHandler(fsys fs.FS) http.Handler {
	fileServer := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "private, max-age=86400")
		fileServer.ServeHTTP(w, r)
	})
}

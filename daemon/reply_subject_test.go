package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reflection: a client names a subject it may not publish to as the reply
// subject of a request that something with wider rights answers (the
// daemon, micro's $SRV handlers, the JetStream API, a pull on a consumer),
// so that the answer is published there for it. On the embedded server each
// principal is in an account of its own and every answer goes back through
// the import into the caller's account (natsauth.go): only the daemon puts
// messages on signal and trail subjects, into WACP_SIGNALS, or on a
// workspace's endpoints, whatever reply subject anyone names.

// reflection is one way to get an answer published on a chosen subject.
type reflection struct {
	name   string
	who    string // the sender's column: coordinator, worker, other worker, auditor
	sendOn func(f *authzFixture, root string) (subject, body string)
}

var reflections = []reflection{
	{"$SRV.PING", "coordinator", func(*authzFixture, string) (string, string) { return "$SRV.PING", "" }},
	{"$SRV.INFO", "coordinator", func(*authzFixture, string) (string, string) { return "$SRV.INFO.wacp", "" }},
	{"$SRV.STATS", "coordinator", func(*authzFixture, string) (string, string) { return "$SRV.STATS", "" }},
	{"$JS.API.INFO", "coordinator", func(*authzFixture, string) (string, string) { return "$JS.API.INFO", "" }},
	{"$SRV.PING by an auditor", "auditor", func(*authzFixture, string) (string, string) { return "$SRV.PING", "" }},
	{"daemon reply to an auditor", "auditor", func(*authzFixture, string) (string, string) {
		return "wacp.v1.audit.sth", `{}`
	}},
	{"daemon reply to a worker", "other worker", func(f *authzFixture, _ string) (string, string) {
		return "wacp.v1.agent." + f.X.id + ".inbox.next", `{}` // X's inbox is empty: the answer is {}
	}},
	{"pull on the worker's own consumer", "worker", func(f *authzFixture, _ string) (string, string) {
		// No signal waits for W: the server answers with an empty "404 No
		// Messages" status.
		return "$JS.API.CONSUMER.MSG.NEXT.WACP_SIGNALS." + f.W.id, `{"batch":1,"no_wait":true}`
	}},
}

// TestReflectedRepliesLandNothing sends each reflection with reply subjects
// on D's signals, W's live trail and W's inbox.next endpoint, then checks
// that D's signal subscription, an auditor's trail subscription and the
// stream saw nothing but a real signal sent afterwards as a marker, and that
// W's inbox still holds D's directive. (The wait for the marker bounds the
// test: the reflected messages were sent before it.)
func TestReflectedRepliesLandNothing(t *testing.T) {
	w := newAuthzWorld(t)
	for _, rf := range reflections {
		t.Run(rf.name, func(t *testing.T) {
			f := w.fixture(t, stActive)
			// W's consumer exists (the daemon makes it) so the pull is
			// answered; X's directive is taken, so X's inbox is empty.
			wc := w.server.dialAgent(t, f.W.token, f.W.id)
			wc.do("signals.consumer", `{}`)
			w.server.dialAgent(t, f.X.token, f.X.id).do("inbox.next", `{}`)

			dSig := newCollector(t, w.server, f.D.token, "wacp.v1.sig."+f.D.id+".>")
			// Observers in other accounts than the sender's: a reflected
			// answer lands in the sender's own account, where only its own
			// connections could see it.
			observer := w.auditor
			if rf.who == "auditor" {
				observer = w.adminToken
			}
			auditTrail := newCollector(t, w.server, observer, "wacp.v1.trail.>")

			token, _ := w.principal(t, f, rf.who)
			denied := make(chan error, 8)
			attacker, _ := w.server.connect(t, token, func(err error) { denied <- err })
			defer attacker.Close()
			subject, body := rf.sendOn(f, w.root)
			for _, reply := range []string{
				"wacp.v1.sig." + f.D.id + "." + f.W.id + ".complete",
				"wacp.v1.trail." + f.W.id + ".checkpoint_created",
				"wacp.v1.agent." + f.W.id + ".inbox.next",
			} {
				if err := attacker.PublishRequest(subject, reply, []byte(body)); err != nil {
					t.Fatalf("send %s: %v", subject, err)
				}
			}
			// The same request, answered to the sender's own inbox: once
			// its answer is back (or the server refused its publish), the
			// reflected ones have been answered or refused too.
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-denied:
					cancel()
				case <-ctx.Done():
				}
			}()
			_, err := attacker.RequestWithContext(ctx, subject, []byte(body))
			cancel()
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("twin request %s: %v", subject, err)
			}

			// The marker: a real signal to D, and its trail entries.
			var marker struct {
				ID string `json:"id"`
			}
			wc.decode(wc.do("signal", `{"type":"blocked","reason":"marker"}`), &marker)
			dSig.waitFor(t, marker.ID)
			auditTrail.waitFor(t, marker.ID)

			for _, m := range dSig.all() {
				if id := idOf(m.Data); id != marker.ID {
					t.Errorf("D's signal subscription got %q on %s, want only the marker %s", m.Data, m.Subject, marker.ID)
				}
			}
			for _, m := range auditTrail.all() {
				if !isTrailEntry(m.Data) {
					t.Errorf("the auditor's trail subscription got %q on %s, not a trail entry", m.Data, m.Subject)
				}
			}
			// W never completes: any message on this subject is a reflection.
			if n := streamMsgs(t, w.admin.nc, "wacp.v1.sig."+f.D.id+"."+f.W.id+".complete"); n != 0 {
				t.Errorf("WACP_SIGNALS holds %d messages on W's complete signal to D, want 0", n)
			}
			var env struct {
				From string `json:"from"`
			}
			wc.decode(wc.do("inbox.next", `{}`), &env)
			if env.From != f.D.id {
				t.Errorf("W's inbox.next = envelope from %q, want D's directive (%s) still there", env.From, f.D.id)
			}
		})
	}
}

// collector keeps every message a principal's subscription receives.
type collector struct {
	mu   sync.Mutex
	msgs []*nats.Msg
	seen chan struct{}
}

func newCollector(t *testing.T, s server, token, subject string) *collector {
	t.Helper()
	nc, why := s.connect(t, token, func(error) {})
	if nc == nil {
		t.Fatalf("connect: %s", why)
	}
	t.Cleanup(nc.Close)
	c := &collector{seen: make(chan struct{}, 1)}
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		c.mu.Lock()
		c.msgs = append(c.msgs, m)
		c.mu.Unlock()
		select {
		case c.seen <- struct{}{}:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *collector) all() []*nats.Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*nats.Msg(nil), c.msgs...)
}

// waitFor waits until a message naming id (a signal's id, or a trail
// entry whose body names it) arrived.
func (c *collector) waitFor(t *testing.T, id string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, m := range c.all() {
			if strings.Contains(string(m.Data), id) {
				return
			}
		}
		select {
		case <-c.seen:
		case <-deadline:
			t.Fatalf("no message naming %s arrived", id)
		}
	}
}

func idOf(b []byte) string {
	var v struct {
		ID string `json:"id"`
	}
	json.Unmarshal(b, &v)
	return v.ID
}

// isTrailEntry reports whether b is a trail entry as the feed publishes it.
func isTrailEntry(b []byte) bool {
	var e struct {
		ID        string          `json:"id"`
		EventType string          `json:"event_type"`
		Integrity json.RawMessage `json:"integrity"`
	}
	return json.Unmarshal(b, &e) == nil && e.ID != "" && e.EventType != "" && len(e.Integrity) > 0
}

// streamMsgs returns how many messages WACP_SIGNALS holds on subject, as
// the coordinator reads it.
func streamMsgs(t *testing.T, nc *nats.Conn, subject string) uint64 {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "WACP_SIGNALS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}
